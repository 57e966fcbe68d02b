package dev.runway.db;

/**
 * The H2 file is open in another process (another Runway server, say). A server that went on would
 * run a second engine over the same runs, so it stops before it migrates or starts anything.
 */
public final class DatabaseInUseException extends RuntimeException {
  public DatabaseInUseException(String database) {
    super("the database " + database + " is in use by another process (another Runway server?); "
        + "stop it first or set db.url to another database");
  }
}

package dev.runway.db;

/** The database cannot be reached; callers get 503 and are asked to retry. */
public final class DatabaseUnavailableException extends RuntimeException {
  public DatabaseUnavailableException(String message, Throwable cause) {
    super(message, cause);
  }
}

package dev.runway.db;

/** What Runway needs to open its database: where it is, who connects, how many connections and how long to wait. */
public record DatabaseSettings(String url, String user, String password, int poolSize, int connectionTimeoutMs) {
  public boolean isH2() {
    return url.startsWith("jdbc:h2:");
  }
}

package dev.runway.db;

/** More work is waiting than the server takes on; callers get 503 and are asked to retry. */
public final class OverloadedException extends RuntimeException {
  public OverloadedException(String message) {
    super(message, null, false, false);
  }
}

package dev.runway.console;

/** A console request that cannot be done, with what the page tells the person (and which field, if one). */
public class ConsoleException extends RuntimeException {
  private final int status;
  private final String field;

  public ConsoleException(int status, String field, String message) {
    super(message, null, false, false);
    this.status = status;
    this.field = field;
  }

  public int status() {
    return status;
  }

  public String field() {
    return field;
  }
}

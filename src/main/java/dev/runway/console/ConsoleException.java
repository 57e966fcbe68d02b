package dev.runway.console;

import dev.runway.core.DomainException;

/** A console request that cannot be done, with what the page tells the person (and which field, if one). */
public class ConsoleException extends DomainException {
  public ConsoleException(Kind kind, String field, String message) {
    super(kind, "console_refused", message, field);
  }
}

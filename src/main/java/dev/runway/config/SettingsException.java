package dev.runway.config;

/** A setting that stops start-up; its message is the one line shown to the operator. */
public final class SettingsException extends RuntimeException {
  public SettingsException(String message) {
    super(message);
  }
}

package dev.runway.run;

/**
 * How much of a thread's past a run that continues it is given: at most {@code messages} of the
 * thread's most recent earlier messages and at most {@code chars} of their text
 * (agents.thread_window_messages, agents.thread_window_chars); older ones are dropped, whole.
 */
public record ThreadWindow(int messages, long chars) {
  /** The built-in defaults (config/runway.properties has the same). */
  public static final ThreadWindow DEFAULT = new ThreadWindow(100, 200_000);
}

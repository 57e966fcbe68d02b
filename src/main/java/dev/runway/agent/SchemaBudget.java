package dev.runway.agent;

import com.networknt.schema.SchemaValidatorsConfig;
import java.time.Duration;
import java.util.function.Supplier;

/**
 * A time budget for one JSON Schema validation on the calling thread, so that a tenant's schema
 * (a $ref fanning out through anyOf, many patterns over a long text) cannot hold an engine or
 * request thread: the validator looks at the clock at every subschema it applies and every few
 * hundred characters a pattern reads, and past the deadline throws {@link Exceeded}.
 */
final class SchemaBudget {
  private static final ThreadLocal<Long> DEADLINE = new ThreadLocal<>();
  /** How many characters a pattern reads between two looks at the clock. */
  private static final int CHARS_PER_CHECK = 256;

  private SchemaBudget() {}

  /** Thrown past the deadline; it unwinds the validator, which keeps nothing of the validation. */
  static final class Exceeded extends RuntimeException {
    Exceeded() {
      super("the JSON Schema validation ran out of its time budget", null, false, false);
    }
  }

  /** What {@code work} returns, or {@link Exceeded} once it has run {@code budget}. */
  static <T> T within(Duration budget, Supplier<T> work) {
    Long outer = DEADLINE.get();
    long deadline = System.nanoTime() + budget.toNanos();
    DEADLINE.set(outer != null && outer - deadline < 0 ? outer : deadline);
    try {
      return work.get();
    } finally {
      if (outer == null) {
        DEADLINE.remove();
      } else {
        DEADLINE.set(outer);
      }
    }
  }

  /** Throws {@link Exceeded} if the calling thread validates past its deadline. */
  static void check() {
    Long deadline = DEADLINE.get();
    if (deadline != null && System.nanoTime() - deadline > 0) {
      throw new Exceeded();
    }
  }

  /** The text as a pattern reads it: checking the budget as it goes, for a long text under a budget. */
  static CharSequence watched(String text) {
    return text.length() <= CHARS_PER_CHECK || DEADLINE.get() == null ? text : new Watched(text);
  }

  /**
   * The validator's settings, with RE2/J for patterns and the budget's hook: networknt's
   * JsonSchema.validate asks {@code isDiscriminatorKeywordEnabled()} first thing for every
   * subschema it applies (1.5.x), so the answer (false: an OpenAPI keyword, not JSON Schema's)
   * comes after a look at the clock. SchemaBudgetTest fails if an upgrade stops asking.
   */
  @SuppressWarnings("deprecation")
  static SchemaValidatorsConfig config() {
    SchemaValidatorsConfig config = new SchemaValidatorsConfig() {
      @Override
      public boolean isDiscriminatorKeywordEnabled() {
        check();
        return false;
      }
    };
    config.setRegularExpressionFactory(Re2Patterns.INSTANCE);
    return config;
  }

  /** A string that checks the budget every {@link #CHARS_PER_CHECK} characters read. */
  private static final class Watched implements CharSequence {
    private final String text;
    private int reads;

    Watched(String text) {
      this.text = text;
    }

    @Override
    public char charAt(int index) {
      if (++reads % CHARS_PER_CHECK == 0) {
        check();
      }
      return text.charAt(index);
    }

    @Override
    public int length() {
      return text.length();
    }

    @Override
    public CharSequence subSequence(int start, int end) {
      return text.subSequence(start, end);
    }

    @Override
    public String toString() {
      return text;
    }
  }
}

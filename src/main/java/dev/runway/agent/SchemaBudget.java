package dev.runway.agent;

import com.networknt.schema.SchemaValidatorsConfig;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.function.Supplier;

/**
 * A time budget for one JSON Schema validation on the calling thread, so that a tenant's schema
 * (a $ref fanning out through anyOf, many patterns over a long text) cannot hold an engine or
 * request thread: the validator looks at the clock every few subschemas it builds or applies and
 * every few hundred characters a pattern reads, and past the deadline throws {@link Exceeded}.
 * The clock is the thread's CPU time where the JVM has it, so that a busy machine does not make a
 * schema fail that passes on a quiet one.
 */
final class SchemaBudget {
  private static final ThreadLocal<Scope> SCOPE = new ThreadLocal<>();
  /** How many characters a pattern reads between two looks at the clock. */
  private static final int CHARS_PER_CHECK = 256;
  /** How many subschemas the validator builds or applies between two looks at the clock (a few µs of work). */
  private static final int STEPS_PER_CHECK = 16;
  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
  private static final boolean CPU_CLOCK = THREADS.isCurrentThreadCpuTimeSupported()
      && THREADS.isThreadCpuTimeEnabled();

  private SchemaBudget() {}

  /** Thrown past the deadline; it unwinds the validator, which keeps nothing of the validation. */
  static final class Exceeded extends RuntimeException {
    Exceeded() {
      super("the JSON Schema validation ran out of its time budget", null, false, false);
    }
  }

  /** A budget in force: its deadline, and whether it was found past (the validator swallows some exceptions). */
  private static final class Scope {
    final long deadline;
    boolean exceeded;
    int steps;

    Scope(long deadline) {
      this.deadline = deadline;
    }
  }

  /**
   * What {@code work} returns, or {@link Exceeded} once it has run {@code budget} (or an enclosing
   * budget ran out); also when the validator caught the exception and went on, as it does while
   * building a schema.
   */
  static <T> T within(Duration budget, Supplier<T> work) {
    Scope outer = SCOPE.get();
    long deadline = clock() + budget.toNanos();
    Scope scope = new Scope(outer != null && outer.deadline - deadline < 0 ? outer.deadline : deadline);
    SCOPE.set(scope);
    try {
      T result = work.get();
      if (scope.exceeded) {
        throw new Exceeded();
      }
      return result;
    } finally {
      if (outer == null) {
        SCOPE.remove();
      } else {
        outer.exceeded |= scope.exceeded;
        SCOPE.set(outer);
      }
    }
  }

  /** Whether {@code e} is, or was caused by, {@link Exceeded} (the validator wraps some exceptions). */
  static boolean exceeded(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof Exceeded) {
        return true;
      }
    }
    return false;
  }

  /** Throws {@link Exceeded} if the calling thread validates past its deadline (looking every few steps). */
  static void check() {
    Scope scope = SCOPE.get();
    if (scope != null && (scope.exceeded || ++scope.steps % STEPS_PER_CHECK == 0)) {
      checkNow(scope);
    }
  }

  private static void checkNow(Scope scope) {
    if (scope.exceeded || clock() - scope.deadline > 0) {
      scope.exceeded = true;
      throw new Exceeded();
    }
  }

  private static long clock() {
    return CPU_CLOCK ? THREADS.getCurrentThreadCpuTime() : System.nanoTime();
  }

  /** The text as a pattern reads it: checking the budget as it goes, for a long text under a budget. */
  static CharSequence watched(String text) {
    return text.length() <= CHARS_PER_CHECK || SCOPE.get() == null ? text : new Watched(text);
  }

  /**
   * The validator's settings, with RE2/J for patterns and the budget's hooks: networknt's
   * JsonSchema.validate asks {@code isDiscriminatorKeywordEnabled()} first thing for every
   * subschema it applies (1.5.x), so the answer (false: an OpenAPI keyword, not JSON Schema's)
   * comes after a look at the clock; and each $ref it reads while building a schema asks
   * {@code isCacheRefs()} (building follows every path through the $refs: 2^n for a chain of n
   * anyOf of two). SchemaBudgetTest fails if an upgrade stops asking.
   */
  @SuppressWarnings("deprecation")
  static SchemaValidatorsConfig config() {
    SchemaValidatorsConfig config = new SchemaValidatorsConfig() {
      @Override
      public boolean isDiscriminatorKeywordEnabled() {
        check();
        return false;
      }

      @Override
      public boolean isCacheRefs() {
        check();
        return super.isCacheRefs();
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
        Scope scope = SCOPE.get();
        if (scope != null) {
          checkNow(scope);
        }
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

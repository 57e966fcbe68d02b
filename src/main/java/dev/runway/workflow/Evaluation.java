package dev.runway.workflow;

import com.fasterxml.jackson.databind.JsonNode;
import dev.cel.common.ast.CelExpr;
import dev.cel.common.values.CelByteString;
import dev.cel.runtime.CelEvaluationListener;
import dev.cel.runtime.CelFunctionBinding;
import dev.cel.runtime.CelFunctionResolver;
import dev.cel.runtime.CelLateFunctionBindings;
import dev.cel.runtime.ConcatenatedListView;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;

/**
 * One evaluation of a field's expressions: the variables as CEL sees them, and the budget that all
 * of the field's expressions share, so that a field runs and allocates within one budget however
 * many expressions it holds. CEL calls it back after each node it evaluates; each node counts, and
 * so does the size of each value a node gives (a string's characters, a list's or a map's
 * entries); reading a value out of the variables counts too ({@link CelJson}'s views: deep
 * equality walks them), and so does the text a regular expression is run over. Results are
 * bounded apart, by their JSON size. One evaluation runs on one thread.
 */
final class Evaluation implements CelEvaluationListener {
  static final int MAX_NODES = 100_000;
  /** About a megabyte: characters of strings and entries of lists and maps, given or read. */
  static final long MAX_UNITS = 1_000_000;
  /** The JSON that a field's expressions may give, counted as text. */
  static final long MAX_RESULT_CHARS = 256 * 1024;

  private final Map<String, Object> variables = new HashMap<>();
  private final CelFunctionResolver functions = CelLateFunctionBindings.from(
      CelFunctionBinding.from("matches", String.class, String.class, this::matches),
      CelFunctionBinding.from("matches_string", String.class, String.class, this::matches));
  private long nodes;
  private long units;
  private long resultChars;
  private String overBudget;

  Evaluation(Map<String, JsonNode> vars) {
    vars.forEach((name, value) -> variables.put(name, CelJson.toCel(value, this)));
  }

  Map<String, Object> variables() {
    return variables;
  }

  /** The functions bound per evaluation, because they charge it: {@code matches}. */
  CelFunctionResolver functions() {
    return functions;
  }

  @Override
  public void callback(CelExpr expr, Object value) {
    if (++nodes > MAX_NODES) {
      fail("cost budget exceeded: more than " + MAX_NODES + " evaluation steps");
    }
    charge(size(value));
  }

  /**
   * Counts values read or made. Past the budget, this and every later charge and callback fails:
   * CEL's {@code ||}, {@code &&} and comprehensions may absorb an error (error || true is true),
   * but the callback for the node that absorbed it fails again, and so on up to the root.
   */
  void charge(long count) {
    units += count;
    if (units > MAX_UNITS) {
      fail("cost budget exceeded: more than " + MAX_UNITS + " characters and entries read or made");
    }
  }

  /** Counts the JSON text a result takes. */
  void chargeResult(long chars) {
    resultChars += chars;
    if (resultChars > MAX_RESULT_CHARS) {
      fail("the result is over " + MAX_RESULT_CHARS / 1024 + " KB of JSON");
    }
  }

  /** Why the budget is spent, or null: the reason to give rather than CEL's wrapping of it. */
  String overBudget() {
    return overBudget;
  }

  private void fail(String reason) {
    if (overBudget == null) {
      overBudget = reason;
    }
    throw new Failure(overBudget);
  }

  private boolean matches(String text, String regex) {
    return BoundedFunctions.matches(text, regex, this::charge);
  }

  private static long size(Object value) {
    if (value instanceof String s) {
      return s.length();
    }
    if (value instanceof CelByteString b) {
      return b.size();
    }
    if (value instanceof ConcatenatedListView) {
      // A comprehension's accumulator, grown in place: its elements counted as they were made.
      return 0;
    }
    if (value instanceof Collection<?> c) {
      return c.size();
    }
    return value instanceof Map<?, ?> m ? m.size() : 0;
  }

  /** Why an evaluation stops, without the expression's text, which the caller adds. */
  static final class Failure extends RuntimeException {
    Failure(String reason) {
      super(reason, null, false, false);
    }
  }
}

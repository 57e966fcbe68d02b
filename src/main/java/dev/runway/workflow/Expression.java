package dev.runway.workflow;

import com.fasterxml.jackson.databind.JsonNode;
import dev.cel.common.CelErrorCode;
import dev.cel.common.CelIssue;
import dev.cel.common.CelOptions;
import dev.cel.common.CelValidationException;
import dev.cel.common.types.SimpleType;
import dev.cel.compiler.CelCompiler;
import dev.cel.compiler.CelCompilerFactory;
import dev.cel.parser.CelStandardMacro;
import dev.cel.runtime.CelEvaluationException;
import dev.cel.runtime.CelRuntime;
import dev.cel.runtime.CelRuntimeFactory;
import dev.cel.runtime.CelStandardFunctions;
import dev.cel.runtime.CelStandardFunctions.StandardFunction;
import dev.runway.core.DomainException;
import dev.runway.core.Json;
import dev.runway.core.WeighedCache;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * One compiled expression of a workflow definition, in Google's CEL: a language made for untrusted
 * input, with no I/O, no loops but bounded comprehensions, and a cost that can be bounded. It sees
 * only the variables {@code inputs}, {@code steps} (step id to {output, status}), {@code run} (id,
 * project, workflow, created_at, signal_url), {@code signal} (the body of the latest wait step's
 * signal), and {@code item} and {@code index} inside a foreach, all dynamic;
 * any other name does not compile. Immutable and thread-safe.
 *
 * <p>Cost: at most {@value #MAX_LENGTH} characters and {@value #MAX_DEPTH} levels of nesting;
 * comprehensions ({@code all}, {@code exists}, {@code map}, {@code filter}) at most
 * {@value #MAX_ITERATIONS} iterations in all per evaluation; and {@link Evaluation}'s budget.
 */
public final class Expression {
  public static final int MAX_LENGTH = 4_096;
  static final int MAX_DEPTH = 32;
  static final int MAX_ITERATIONS = 10_000;

  private static final CelOptions OPTIONS = CelOptions.current()
      .maxExpressionCodePointSize(MAX_LENGTH)
      .maxParseRecursionDepth(MAX_DEPTH)
      .comprehensionMaxIterations(MAX_ITERATIONS)
      // JSON numbers are ints or doubles as they are written: 1 < 1.5 and 2 == 2.0 compare.
      .enableHeterogeneousNumericComparisons(true)
      .build();
  private static final CelCompiler COMPILER = CelCompilerFactory.standardCelCompilerBuilder()
      .setOptions(OPTIONS)
      .setStandardMacros(CelStandardMacro.STANDARD_MACROS)
      .addVar("inputs", SimpleType.DYN)
      .addVar("steps", SimpleType.DYN)
      .addVar("run", SimpleType.DYN)
      .addVar("item", SimpleType.DYN)
      .addVar("index", SimpleType.DYN)
      .addVar("signal", SimpleType.DYN)
      .build();
  /**
   * The legacy runtime, not 0.14.0's planner: the planner copies a comprehension's list at each
   * step (a map over 10,000 items took 20 s), the legacy one appends in place (50 ms).
   */
  private static final CelRuntime RUNTIME = CelRuntimeFactory.legacyCelRuntimeBuilder()
      .setOptions(OPTIONS)
      .setStandardEnvironmentEnabled(false)
      .setStandardFunctions(CelStandardFunctions.newBuilder()
          .excludeFunctions(StandardFunction.CONTAINS, StandardFunction.MATCHES)
          .build())
      .addFunctionBindings(BoundedFunctions.CONTAINS)
      .build();
  /** Programs by text, shared by every workflow: about 64 bytes a character (AST, types, program). */
  private static final WeighedCache<String, CelRuntime.Program> PROGRAMS =
      new WeighedCache<>(16 << 20, (text, program) -> 64L * text.length() + 256);

  private final String text;
  private final CelRuntime.Program program;

  private Expression(String text, CelRuntime.Program program) {
    this.text = text;
    this.program = program;
  }

  /**
   * Compiles the text (surrounding white space ignored); one that does not compile is a
   * {@code validation_failed} naming {@code field}, with CEL's message.
   */
  public static Expression compile(String text, String field) {
    String source = text.strip();
    if (source.length() > MAX_LENGTH) {
      throw DomainException.invalid(field, field + ": an expression is at most " + MAX_LENGTH + " characters");
    }
    CelRuntime.Program program = PROGRAMS.get(source);
    if (program == null) {
      try {
        program = RUNTIME.createProgram(COMPILER.compile(source).getAst());
      } catch (CelValidationException e) {
        throw DomainException.invalid(field, field + ": " + e.getErrors().stream()
            .map(Expression::describe).collect(Collectors.joining("; ")) + " in '" + abbreviated(source, 80) + "'");
      } catch (CelEvaluationException e) {
        throw new IllegalStateException("CEL made no program of a checked expression: " + source, e);
      }
      PROGRAMS.putIfAbsent(source, program);
    }
    return new Expression(source, program);
  }

  public String text() {
    return text;
  }

  /** The expression's value as JSON; see {@link CelJson#toJson}. */
  public JsonNode evaluate(Map<String, JsonNode> vars) {
    return evaluate(new Evaluation(vars));
  }

  /** The value of a condition ({@code if}): anything but a bool fails. */
  public boolean test(Map<String, JsonNode> vars) {
    Evaluation evaluation = new Evaluation(vars);
    Object value = run(evaluation);
    if (value instanceof Boolean b) {
      return b;
    }
    throw new ExpressionFailed(text, "it gives " + Json.kindOf(json(value, evaluation)) + ", not a bool");
  }

  JsonNode evaluate(Evaluation evaluation) {
    return json(run(evaluation), evaluation);
  }

  private JsonNode json(Object value, Evaluation evaluation) {
    try {
      return CelJson.toJson(value, evaluation);
    } catch (Evaluation.Failure e) {
      throw new ExpressionFailed(text, e.getMessage());
    }
  }

  private Object run(Evaluation evaluation) {
    try {
      return program.trace(evaluation.variables(), evaluation.functions(), evaluation);
    } catch (CelEvaluationException e) {
      throw new ExpressionFailed(text, evaluation.overBudget() != null ? evaluation.overBudget() : reason(e));
    }
  }

  /**
   * CEL's message, cut to 1,000 characters (a failed function's message lists its arguments). For a map
   * index that misses ({@code m["k"]}) CEL 0.14.0 says only the key; it is said as for a field.
   */
  private static String reason(CelEvaluationException e) {
    String message = e.getMessage();
    String cause = e.getCause() == null ? null : e.getCause().getMessage();
    if (e.getErrorCode() == CelErrorCode.ATTRIBUTE_NOT_FOUND && cause != null && message.endsWith(": " + cause)
        && !cause.startsWith("key '") && !cause.startsWith("Error resolving") && !cause.startsWith("No such attribute")) {
      message = message.substring(0, message.length() - cause.length()) + "key '" + cause + "' is not present in map.";
    }
    return abbreviated(message, 1_000);
  }

  private static String describe(CelIssue issue) {
    int line = issue.getSourceLocation().getLine();
    return (line > 0 ? line + ":" + (issue.getSourceLocation().getColumn() + 1) + ": " : "") + issue.getMessage();
  }

  /** The text, cut to {@code max} characters for a message. */
  static String abbreviated(String text, int max) {
    return text.length() <= max ? text : text.substring(0, max) + "…";
  }
}

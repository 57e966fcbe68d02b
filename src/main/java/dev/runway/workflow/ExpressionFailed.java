package dev.runway.workflow;

/**
 * An expression that compiled but failed when evaluated (a missing key, a wrong type, its budget
 * spent): the step fails with {@code expression_failed}, naming the expression and CEL's reason.
 */
public final class ExpressionFailed extends RuntimeException {
  private final String expression;
  private final String reason;

  /** The expression (or template) that failed and why. */
  public ExpressionFailed(String expression, String reason) {
    super("expression '" + Expression.abbreviated(expression, 200) + "' failed: " + reason, null, false, false);
    this.expression = expression;
    this.reason = reason;
  }

  /** The expression's text, whole. */
  public String expression() {
    return expression;
  }

  /** Why it failed, without the expression. */
  public String reason() {
    return reason;
  }
}

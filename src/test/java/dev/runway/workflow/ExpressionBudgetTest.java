package dev.runway.workflow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.DomainException;
import dev.runway.core.Json;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A tenant's expression cannot run longer than its budget or allocate without bound: each case
 * here would run for minutes or fill the heap unbounded, and must fail within a few seconds.
 */
class ExpressionBudgetTest {
  private static final Duration QUICKLY = Duration.ofSeconds(5);

  /** inputs.xs: 1,000 numbers; inputs.s: 100 KB of text; inputs.a and inputs.b: 256 KB and 128 KB of 'a' (b ends in 'b'). */
  private static final Map<String, JsonNode> VARS = Map.of("inputs", inputs());

  private static ObjectNode inputs() {
    ObjectNode inputs = JsonNodeFactory.instance.objectNode();
    ArrayNode xs = inputs.putArray("xs");
    for (int i = 0; i < 1_000; i++) {
      xs.add(i);
    }
    inputs.put("s", "x".repeat(100_000));
    inputs.put("a", "a".repeat(256 * 1024));
    inputs.put("b", "a".repeat(128 * 1024 - 1) + "b");
    // 5,000 numbers, one level down: one entry to the eye, 5,000 to deep equality.
    ArrayNode deep = inputs.putArray("deep").addArray();
    for (int i = 0; i < 5_000; i++) {
      deep.add(i);
    }
    return inputs;
  }

  private static ExpressionFailed fails(String expression) {
    return assertTimeoutPreemptively(QUICKLY,
        () -> assertThrows(ExpressionFailed.class, () -> Expression.compile(expression, "f").evaluate(VARS)));
  }

  private static DomainException refused(String expression) {
    return assertTimeoutPreemptively(QUICKLY,
        () -> assertThrows(DomainException.class, () -> Expression.compile(expression, "steps[0].if")));
  }

  @Test
  void ordinary_work_on_a_thousand_items_is_within_budget() {
    Map<String, JsonNode> vars = Map.of("inputs", Json.tree("{\"xs\": " + VARS.get("inputs").get("xs") + "}"));
    JsonNode labels = assertTimeoutPreemptively(QUICKLY, () -> Expression.compile(
        "inputs.xs.filter(x, x % 2 == 0).map(x, {'id': x, 'label': 'item ' + string(x)})", "f").evaluate(vars));
    assertEquals(500, labels.size());
    assertEquals(Json.tree("{\"id\": 998, \"label\": \"item 998\"}"), labels.get(499));
  }

  @Test
  void building_huge_strings_is_stopped() {
    ExpressionFailed e = fails("inputs.xs.map(a, inputs.xs.map(b, inputs.s + inputs.s))");
    assertTrue(e.reason().startsWith("cost budget exceeded"), e.reason());
  }

  @Test
  void long_comprehensions_are_stopped() {
    ExpressionFailed e = fails("inputs.xs.all(a, inputs.xs.all(b, inputs.xs.all(c, true)))");
    assertTrue(e.reason().contains("Iteration budget exceeded: 10000"), e.reason());
  }

  @Test
  void many_steps_are_stopped() {
    String wide = "[" + "a, ".repeat(300) + "a]";
    ExpressionFailed e = fails("inputs.xs.all(a, " + wide + " == " + wide + ")");
    assertEquals("cost budget exceeded: more than 100000 evaluation steps", e.reason());
  }

  @Test
  void deep_equality_pays_for_every_value_it_reads() {
    ExpressionFailed e = fails("inputs.xs.all(x, inputs.deep == inputs.deep)");
    assertTrue(e.reason().startsWith("cost budget exceeded: more than 1000000 characters"), e.reason());
  }

  @Test
  void a_spent_budget_fails_the_expression_even_where_cel_absorbs_the_error() {
    ExpressionFailed e = fails("inputs.xs.exists(a, (inputs.s + inputs.s + inputs.s).size() < 0) || true");
    assertTrue(e.reason().startsWith("cost budget exceeded"), e.reason());
  }

  @Test
  void results_over_256_kb_of_json_are_refused() {
    assertEquals("the result is over 256 KB of JSON", fails("inputs.xs.map(x, '" + "y".repeat(300) + "')").reason());
    assertEquals("the result is over 256 KB of JSON", fails("inputs.a").reason());
  }

  @Test
  void contains_takes_linear_time() {
    // String.contains tries the needle at every offset: 4 to 7 s for these; linear, a few ms.
    assertEquals(Json.tree("false"), assertTimeoutPreemptively(Duration.ofSeconds(1),
        () -> Expression.compile("inputs.a.contains(inputs.b)", "f").evaluate(VARS)));
  }

  @Test
  void a_pattern_that_compiles_to_a_huge_program_is_refused_before_compiling() {
    ExpressionFailed e = fails("'a'.matches('((a{1000}){1000}){1000}')");
    assertTrue(e.reason().contains("the pattern is too large"), e.reason());
  }

  @Test
  void matching_pays_for_the_text_times_the_pattern() {
    // A program of about 1,300 instructions over 256 KB of 'a': 4 to 7 s a match, unless charged.
    ExpressionFailed e = fails("inputs.xs.all(x, !inputs.a.matches('(.{0,70}a){9}b'))");
    assertTrue(e.reason().startsWith("cost budget exceeded"), e.reason());
  }

  @Test
  void deep_nesting_and_long_text_do_not_compile() {
    assertTrue(refused("(".repeat(100) + "1" + ")".repeat(100)).getMessage().contains("recursion"));
    assertTrue(refused("[".repeat(100) + "1" + "]".repeat(100)).getMessage().contains("recursion"));
    assertTrue(refused("inputs" + ".a".repeat(100)).getMessage().contains("recursion"));
    assertTrue(refused("1" + " + 1".repeat(1_000)).getMessage().contains("recursion"));
    DomainException tooLong = refused("'" + "x".repeat(Expression.MAX_LENGTH) + "'");
    assertEquals("steps[0].if: an expression is at most 4096 characters", tooLong.getMessage());
  }
}

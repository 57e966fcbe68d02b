package dev.runway.workflow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.DomainException;
import dev.runway.core.Json;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** CEL expressions over a run's data: what they give as JSON, what refuses to compile, what fails at run time. */
class ExpressionTest {
  static final Map<String, JsonNode> VARS = Map.of(
      "inputs", Json.tree("{\"n\": 5, \"price\": 2.5, \"name\": \"Ada\", \"ok\": true, \"none\": null,"
          + " \"tags\": [\"a\", \"b\"], \"customer\": {\"id\": \"c1\", \"vip\": false},"
          + " \"items\": [{\"sku\": \"x\", \"qty\": 2}, {\"sku\": \"y\", \"qty\": 0}], \"email\": \"ada@example.com\"}"),
      "steps", Json.tree("{\"fetch\": {\"status\": \"succeeded\", \"output\": {\"id\": 42}}}"),
      "run", Json.tree("{\"id\": \"run_1\", \"project\": \"ops\", \"workflow\": \"wf\", \"created_at\": \"2025-01-02T03:04:05.000Z\"}"),
      "item", Json.tree("{\"sku\": \"x\"}"),
      "index", Json.tree("3"));

  static JsonNode eval(String expression) {
    return Expression.compile(expression, "f").evaluate(VARS);
  }

  static ExpressionFailed failure(String expression) {
    return assertThrows(ExpressionFailed.class, () -> eval(expression));
  }

  @Test
  void an_expression_gives_its_json_value_with_its_type() {
    assertEquals(Json.tree("6"), eval("inputs.n + 1"));
    assertEquals(5.0, eval("inputs.price * 2.0").doubleValue());
    assertEquals(Json.tree("\"Ada\""), eval("inputs.name"));
    assertEquals(Json.tree("true"), eval("inputs.ok"));
    assertEquals(Json.tree("null"), eval("inputs.none"));
    assertEquals(Json.tree("[\"a\",\"b\"]"), eval("inputs.tags"));
    assertEquals(Json.tree("{\"id\":\"c1\",\"vip\":false}"), eval("inputs.customer"));
    assertEquals(Json.tree("{\"sku\":\"x\",\"n\":5,\"first\":true}"), eval("{'sku': item.sku, 'n': inputs.n, 'first': index == 3}"));
  }

  @Test
  void every_variable_is_there_and_macros_work() {
    assertEquals(Json.tree("\"run_1/ops/wf/42/succeeded\""),
        eval("run.id + '/' + run.project + '/' + run.workflow + '/' + string(steps.fetch.output.id) + '/' + steps.fetch.status"));
    assertEquals(Json.tree("[\"x\"]"), eval("inputs.items.filter(i, i.qty > 0).map(i, i.sku)"));
    assertEquals(Json.tree("true"), eval("inputs.items.exists(i, i.sku == 'y') && inputs.items.all(i, has(i.qty))"));
    assertEquals(Json.tree("false"), eval("has(inputs.customer.region)"));
    assertEquals(Json.tree("true"), eval("inputs.email.matches('^[a-z]+@example[.]com$') && inputs.email.contains('@ex')"));
    assertEquals(Json.tree("2"), eval("size(inputs.tags)"));
  }

  @Test
  void ints_and_doubles_compare_but_do_not_mix_in_arithmetic() {
    assertEquals(Json.tree("true"), eval("inputs.n > 4.5 && inputs.n == 5.0"));
    assertTrue(failure("inputs.n + inputs.price").reason().contains("No matching overload for function '_+_'"));
    assertEquals(7.5, eval("double(inputs.n) + inputs.price").doubleValue());
  }

  @Test
  void cel_values_without_a_json_twin_are_written_as_text_or_numbers() {
    assertEquals(Json.tree("18446744073709551615"), eval("18446744073709551615u"));
    assertEquals(Json.tree("\"aGk=\""), eval("b'hi'"));
    assertEquals(Json.tree("\"2025-01-02T03:04:05Z\""), eval("timestamp(run.created_at)"));
    assertEquals(Json.tree("\"5400s\""), eval("duration('1h30m')"));
    assertEquals(Json.tree("\"1.5s\""), eval("duration('1500ms')"));
    assertEquals(Json.tree("{\"1\":\"a\",\"true\":\"b\"}"), eval("{1: 'a', true: 'b'}"));
    assertTrue(failure("1.0 / 0.0").reason().contains("JSON cannot hold"));
    assertTrue(failure("type(inputs)").reason().contains("JSON cannot hold"));
  }

  @Test
  void an_undeclared_name_does_not_compile_and_names_the_field() {
    DomainException e = assertThrows(DomainException.class, () -> Expression.compile("customer.name", "steps[2].if"));
    assertEquals("steps[2].if", e.param());
    assertEquals("validation_failed", e.code());
    assertTrue(e.getMessage().startsWith("steps[2].if: 1:1: undeclared reference to 'customer'"), e.getMessage());

    assertThrows(DomainException.class, () -> Expression.compile("secrets.TOKEN", "f"), "secrets are no variable");
    assertThrows(DomainException.class, () -> Expression.compile("inputs.n +", "f"));
  }

  @Test
  void a_missing_key_fails_at_run_time_with_the_expression_and_the_reason() {
    ExpressionFailed e = failure("inputs.customer.region");
    assertEquals("inputs.customer.region", e.expression());
    assertTrue(e.getMessage().startsWith("expression 'inputs.customer.region' failed: "), e.getMessage());
    assertTrue(e.reason().contains("key 'region' is not present in map."), e.reason());

    assertTrue(failure("inputs['region']").reason().contains("key 'region' is not present in map."),
        "an index that misses says so as a field does");
    assertTrue(failure("inputs.tags[2]").reason().contains("Index out of bounds: 2"));
  }

  @Test
  void a_variable_without_a_value_fails_at_run_time() {
    Map<String, JsonNode> outsideForeach = Map.of("inputs", VARS.get("inputs"));
    ExpressionFailed e = assertThrows(ExpressionFailed.class, () -> Expression.compile("item.sku", "f").evaluate(outsideForeach));
    assertEquals("it reads a variable that has no value here", e.reason());
    assertThrows(ExpressionFailed.class, () -> Expression.compile("index > 2", "if").test(outsideForeach));
  }

  @Test
  void a_wrong_type_fails_at_run_time() {
    ExpressionFailed e = failure("inputs.name + 1");
    assertTrue(e.reason().contains("No matching overload for function '_+_'"), e.reason());
    assertTrue(failure("inputs.none.id").reason().contains("Error resolving field 'id'"));
    assertTrue(failure("9223372036854775807 + inputs.n").reason().contains("long overflow"));
  }

  @Test
  void a_condition_must_give_a_bool() {
    assertTrue(Expression.compile("inputs.n > 3 && !inputs.customer.vip", "if").test(VARS));
    assertFalse(Expression.compile("inputs.name == 'Bob'", "if").test(VARS));
    ExpressionFailed e = assertThrows(ExpressionFailed.class, () -> Expression.compile("inputs.n", "if").test(VARS));
    assertEquals("it gives a number, not a bool", e.reason());
    assertThrows(ExpressionFailed.class, () -> Expression.compile("inputs.none", "if").test(VARS));
  }

  @Test
  void one_compiled_expression_serves_many_threads() throws Exception {
    Expression sum = Expression.compile("inputs.xs.map(x, x * inputs.k).filter(x, x % 2 == 0).size()", "f");
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<Boolean>> results = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        int k = t + 1;
        results.add(pool.submit(() -> {
          for (int i = 0; i < 300; i++) {
            JsonNode count = sum.evaluate(Map.of("inputs", Json.tree("{\"k\": " + k + ", \"xs\": [1, 2, 3, 4, 5, 6]}")));
            if (count.intValue() != (k % 2 == 0 ? 6 : 3)) {
              return false;
            }
          }
          return true;
        }));
      }
      for (Future<Boolean> r : results) {
        assertTrue(r.get());
      }
    } finally {
      pool.shutdownNow();
    }
  }
}

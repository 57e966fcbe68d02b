package dev.runway.workflow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.DomainException;
import dev.runway.core.Json;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** JSON values with expressions in their strings: a body, a child run's inputs. */
class JsonTemplateTest {
  private static DomainException refused(String json) {
    return assertThrows(DomainException.class, () -> JsonTemplate.compile(Json.tree(json), "steps[0].body"));
  }

  @Test
  void every_string_value_is_a_template_and_keys_stay_as_written() {
    JsonTemplate body = JsonTemplate.compile(Json.tree("{\"customer\": {\"id\": \"{{ inputs.customer.id }}\","
        + " \"{{ inputs.name }}\": \"Dear {{ inputs.name }}\"}, \"qty\": \"{{ inputs.items.map(i, i.qty) }}\","
        + " \"fixed\": [1, 2.5, true, null, \"text\"], \"lines\": [\"{{ inputs.n }}\", \"#{{ index }}\"]}"), "steps[0].body");
    assertFalse(body.constant());
    assertEquals(Json.tree("{\"customer\": {\"id\": \"c1\", \"{{ inputs.name }}\": \"Dear Ada\"}, \"qty\": [2, 0],"
        + " \"fixed\": [1, 2.5, true, null, \"text\"], \"lines\": [5, \"#3\"]}"), body.evaluate(ExpressionTest.VARS));
  }

  @Test
  void a_value_without_expressions_is_constant_and_each_evaluation_gets_its_own_copy() {
    JsonTemplate body = JsonTemplate.compile(Json.tree("{\"a\": [1, {\"b\": \"{{secrets.KEY}}\"}]}"), "steps[0].body");
    assertTrue(body.constant());
    ((ObjectNode) body.evaluate(ExpressionTest.VARS)).put("a", "changed");
    assertEquals(Json.tree("{\"a\": [1, {\"b\": \"{{secrets.KEY}}\"}]}"), body.evaluate(ExpressionTest.VARS));
    assertTrue(JsonTemplate.compile(Json.tree("42"), "steps[0].body").constant());
  }

  @Test
  void a_fault_names_the_nested_field() {
    DomainException e = refused("{\"customer\": {\"name\": \"{{ customer.name }}\"}}");
    assertEquals("steps[0].body.customer.name", e.param());
    assertTrue(e.getMessage().startsWith("steps[0].body.customer.name: 1:1: undeclared reference to 'customer'"), e.getMessage());

    assertEquals("steps[0].body.items[2]", refused("{\"items\": [\"ok\", 1, \"{{ inputs.n + }}\"]}").param());
    assertEquals("steps[0].body[1].note", refused("[{}, {\"note\": \"{{ inputs.n\"}]").param());
  }

  @Test
  void the_expressions_of_one_value_share_one_budget() {
    // Each string alone is within budget (about 60,000 characters read and made); a hundred are not.
    ObjectNode body = Json.MAPPER.createObjectNode();
    for (int i = 0; i < 100; i++) {
      body.put("f" + i, "{{ size(inputs.s + inputs.s) }}");
    }
    Map<String, JsonNode> vars = Map.of("inputs", Json.tree("{\"s\": \"" + "x".repeat(10_000) + "\"}"));
    assertEquals(20_000, Template.compile("{{ size(inputs.s + inputs.s) }}", "f").evaluate(vars).intValue());
    JsonTemplate many = JsonTemplate.compile(body, "steps[0].body");
    ExpressionFailed e = assertTimeoutPreemptively(Duration.ofSeconds(5),
        () -> assertThrows(ExpressionFailed.class, () -> many.evaluate(vars)));
    assertTrue(e.reason().startsWith("cost budget exceeded"), e.reason());
  }
}

package dev.runway.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.DomainException;
import dev.runway.core.Json;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Tenants' patterns and schemas against the thread that checks them: RE2 patterns (linear time),
 * refused when RE2 cannot compile them, and a time budget for each validation.
 */
class SchemaBudgetTest {
  private static JsonNode object(String properties) {
    return Json.tree("{\"type\":\"object\",\"properties\":" + properties + "}");
  }

  @Test
  @Timeout(value = 30, unit = TimeUnit.SECONDS) // java.util.regex takes minutes
  void a_backtracking_pattern_is_matched_in_linear_time() {
    JsonNode schema = object("{\"q\":{\"type\":\"string\",\"pattern\":\"^(.*a){12}$\"}}");
    ToolSchemas.check(schema, "p");
    List<String> wrong = ToolSchemas.violations(schema, Json.tree("{\"q\":\"" + "a".repeat(60) + "!\"}"));
    assertEquals(1, wrong.size(), wrong::toString);
    assertTrue(wrong.get(0).contains("q"), wrong::toString);
    assertEquals(List.of(), ToolSchemas.violations(schema, Json.tree("{\"q\":\"" + "a".repeat(60) + "\"}")));
  }

  @Test
  void patterns_are_unanchored_as_json_schema_says() {
    JsonNode schema = object("{\"q\":{\"type\":\"string\",\"pattern\":\"b+\"}}");
    assertEquals(List.of(), ToolSchemas.violations(schema, Json.tree("{\"q\":\"abbc\"}")));
    assertEquals(1, ToolSchemas.violations(schema, Json.tree("{\"q\":\"ac\"}")).size());
  }

  @Test
  void a_pattern_re2_cannot_compile_is_refused_naming_its_field() {
    DomainException e = assertThrows(DomainException.class, () -> ToolSchemas.check(
        object("{\"x\":{\"type\":\"string\",\"pattern\":\"(a)\\\\1\"}}"), "tools[0].parameters"));
    assertEquals("tools[0].parameters.properties.x.pattern", e.param());
    assertTrue(e.getMessage().contains("backreferences"), e.getMessage());

    e = assertThrows(DomainException.class, () -> ToolSchemas.check(
        object("{\"x\":{\"type\":\"array\",\"items\":{\"anyOf\":[{\"type\":\"string\",\"pattern\":\"(?=a)\"}]}}}"), "p"));
    assertEquals("p.properties.x.items.anyOf[0].pattern", e.param());

    e = assertThrows(DomainException.class, () -> ToolSchemas.check(
        Json.tree("{\"type\":\"object\",\"patternProperties\":{\"^(?!x)\":{}}}"), "p"));
    assertEquals("p.patternProperties.^(?!x)", e.param());

    e = assertThrows(DomainException.class, () -> ToolSchemas.check(Json.tree("{\"type\":\"object\",\"$defs\":"
        + "{\"d\":{\"propertyNames\":{\"pattern\":\"(a{1000}){1000}\"}}}}"), "p"));
    assertEquals("p.$defs.d.propertyNames.pattern", e.param());
    assertTrue(e.getMessage().contains("too large"), e.getMessage());
  }

  @Test
  void a_property_named_pattern_is_not_a_pattern() {
    ToolSchemas.check(object("{\"pattern\":{\"type\":\"string\"}}"), "p");
    ToolSchemas.check(Json.tree("{\"type\":\"object\",\"const\":{\"pattern\":\"(a)\\\\1\"}}"), "p");
  }

  @Test
  @Timeout(value = 30, unit = TimeUnit.SECONDS)
  void a_schema_whose_references_fan_out_runs_out_of_its_budget() {
    // each level tries both branches, both fail at the bottom: 2^40 applications without a budget
    JsonNode schema = Json.tree("{\"type\":\"object\",\"properties\":{\"n\":{\"$ref\":\"#/$defs/n\"}},"
        + "\"$defs\":{\"n\":{\"type\":\"array\",\"items\":{\"anyOf\":[{\"$ref\":\"#/$defs/n\"},{\"$ref\":\"#/$defs/n\"}]}}}}");
    ToolSchemas.check(schema, "p");
    String nested = "[".repeat(40) + "1" + "]".repeat(40);
    assertThrows(ToolSchemas.TooSlow.class, () -> ToolSchemas.violations(schema, Json.tree("{\"n\":" + nested + "}")));
    assertEquals(List.of(), ToolSchemas.violations(schema, Json.tree("{\"n\":[[],[[]]]}")), "a small one is fine");
  }

  @Test
  @Timeout(value = 30, unit = TimeUnit.SECONDS)
  void a_schema_whose_references_fan_out_while_it_is_built_is_refused_within_its_budget() {
    // no loop, but the validator follows every one of the 3^30 ways down while it builds the schema
    StringBuilder fanOut = new StringBuilder("{\"type\":\"object\",\"$ref\":\"#/$defs/d0\",\"$defs\":{");
    for (int i = 0; i < 30; i++) {
      String next = "{\"$ref\":\"#/$defs/d" + (i + 1) + "\"}";
      fanOut.append("\"d").append(i).append("\":{\"anyOf\":[").append(next).append(",").append(next).append(",")
          .append(next).append("]},");
    }
    JsonNode schema = Json.tree(fanOut.append("\"d30\":{\"type\":\"string\"}}}").toString());
    DomainException e = assertThrows(DomainException.class, () -> ToolSchemas.check(schema, "p"));
    assertEquals("p", e.param());
    assertTrue(e.getMessage().contains("too long to check"), e.getMessage());
  }

  @Test
  @Timeout(value = 30, unit = TimeUnit.SECONDS)
  void a_reference_back_to_itself_is_refused_and_never_overflows_a_thread() {
    JsonNode loop = Json.tree("{\"type\":\"object\",\"anyOf\":[{\"$ref\":\"#\"}]}");
    DomainException e = assertThrows(DomainException.class, () -> ToolSchemas.check(loop, "p"));
    assertEquals("p", e.param());
    assertTrue(e.getMessage().contains("refers to itself"), e.getMessage());
    // one that loops only for some arguments passes the check; the arguments that loop end in TooSlow
    JsonNode sometimes = Json.tree("{\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#/$defs/a\"}},"
        + "\"$defs\":{\"a\":{\"if\":{\"type\":\"string\"},\"then\":{\"$ref\":\"#/$defs/a\"}}}}");
    ToolSchemas.check(sometimes, "p");
    assertEquals(List.of(), ToolSchemas.violations(sometimes, Json.tree("{\"a\":1}")));
    assertThrows(ToolSchemas.TooSlow.class, () -> ToolSchemas.violations(sometimes, Json.tree("{\"a\":\"x\"}")));
  }

  @Test
  void expanded_size_counts_nested_repetitions() {
    assertEquals(4, Re2Patterns.expandedSize("abcd"));
    assertTrue(Re2Patterns.expandedSize("[a-z]{1,1000}") <= 1001);
    assertTrue(Re2Patterns.expandedSize("(a{1000}){1000}") > Re2Patterns.MAX_EXPANDED_SIZE);
    assertTrue(Re2Patterns.expandedSize("x{2}\\{1000}[{]{3}") < 20);
    assertTrue(Re2Patterns.refusal("\\d{4}-\\d{2}-\\d{2}") == null);
    assertTrue(Re2Patterns.refusal("(".repeat(500) + ")".repeat(500)) != null);
  }
}

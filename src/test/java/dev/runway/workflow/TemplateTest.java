package dev.runway.workflow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.DomainException;
import dev.runway.core.Json;
import org.junit.jupiter.api.Test;

/** Strings with {{ expressions }}: typed when alone, text when mixed, secrets left for the call. */
class TemplateTest {
  private static JsonNode eval(String text) {
    return Template.compile(text, "steps[0].url").evaluate(ExpressionTest.VARS);
  }

  private static DomainException refused(String text) {
    return assertThrows(DomainException.class, () -> Template.compile(text, "steps[0].url"));
  }

  @Test
  void a_string_that_is_one_expression_takes_its_value_with_its_type() {
    assertEquals(Json.tree("5"), eval("{{inputs.n}}"));
    assertEquals(Json.tree("{\"id\":\"c1\",\"vip\":false}"), eval("  {{ inputs.customer }}\n"));
    assertEquals(Json.tree("[\"a\",\"b\"]"), eval("{{ inputs.tags }}"));
    assertEquals(Json.tree("null"), eval("{{ inputs.none }}"));
    assertEquals(Json.tree("true"), eval("{{ inputs.ok }}"));
    assertEquals(Json.tree("{\"a\":{\"b\":5}}"), eval("{{ {'a': {'b': inputs.n}} }}"), "a map literal's braces nest");
  }

  @Test
  void a_string_mixing_text_and_expressions_gets_each_value_as_text() {
    assertEquals(Json.tree("\"Hi Ada: 5 × 2.5, [\\\"a\\\",\\\"b\\\"], {\\\"id\\\":\\\"c1\\\",\\\"vip\\\":false}, true, .\""),
        eval("Hi {{ inputs.name }}: {{inputs.n}} × {{ inputs.price }}, {{ inputs.tags }}, {{ inputs.customer }}, {{ inputs.ok }}, {{ inputs.none }}."));
    assertEquals(Json.tree("\"https://api.example.com/customers/c1?tag=a\""),
        eval("https://api.example.com/customers/{{ inputs.customer.id }}?tag={{ inputs.tags[0] }}"));
    assertEquals(Json.tree("\"}}Ada{{\""), eval("{{ '}}' + inputs.name + \"{{\" }}"), "braces in string literals are text");
  }

  @Test
  void secret_references_are_no_expressions_and_stay_as_written() {
    Template header = Template.compile("Bearer {{secrets.API_TOKEN}}", "steps[0].headers.Authorization");
    assertTrue(header.constant());
    assertEquals(Json.tree("\"Bearer {{secrets.API_TOKEN}}\""), header.evaluate(ExpressionTest.VARS));
    assertEquals(Json.tree("\"{{ secrets.A_1 }}\""), eval("{{ secrets.A_1 }}"));
    assertEquals(Json.tree("\"https://x.example/{{secrets.KEY}}/c1\""), eval("https://x.example/{{secrets.KEY}}/{{ inputs.customer.id }}"));
    assertThrows(DomainException.class, () -> eval("{{ secrets.KEY + 'x' }}"), "secrets are no variable of an expression");
  }

  @Test
  void text_without_expressions_is_constant() {
    Template plain = Template.compile("https://api.example.com/{ not an expression }", "steps[0].url");
    assertTrue(plain.constant());
    assertEquals(Json.tree("\"https://api.example.com/{ not an expression }\""), plain.evaluate(ExpressionTest.VARS));
    assertFalse(Template.compile("{{ 1 }}", "f").constant());
  }

  @Test
  void faults_name_the_field() {
    DomainException open = refused("https://x.example/{{ inputs.n");
    assertEquals("steps[0].url", open.param());
    assertEquals("steps[0].url: the '{{' at character 19 has no closing '}}'", open.getMessage());

    DomainException undeclared = refused("https://x.example/{{ nope }}");
    assertEquals("steps[0].url", undeclared.param());
    assertTrue(undeclared.getMessage().startsWith("steps[0].url: 1:1: undeclared reference to 'nope'"), undeclared.getMessage());
  }

  @Test
  void a_string_holds_at_most_64_expressions() {
    String sixtyFour = "{{ inputs.n }},".repeat(Template.MAX_EXPRESSIONS);
    assertEquals(Json.tree("\"" + "5,".repeat(64) + "\""), eval(sixtyFour));
    assertEquals("steps[0].url: a string holds at most 64 expressions", refused(sixtyFour + "{{ 1 }}").getMessage());
  }

  @Test
  void an_expression_that_fails_names_itself() {
    ExpressionFailed e = assertThrows(ExpressionFailed.class, () -> eval("id={{ inputs.customer.id }}&r={{ inputs.customer.region }}"));
    assertEquals("inputs.customer.region", e.expression());
  }
}

package dev.runway.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.runway.core.DomainException;
import dev.runway.outbound.CallTargets;
import dev.runway.secret.SecretReferences;
import dev.runway.workflow.ExpressionFailed;
import dev.runway.workflow.JsonTemplate;
import dev.runway.workflow.Step;
import dev.runway.workflow.Template;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * The call an http step makes now: its url, header values, query and body with their templates
 * evaluated over the run as it stands ({@code vars}). The url is checked again as the step's was
 * at its PUT, and a value may not bring a secret reference of its own: secrets are resolved after
 * this, and only where the definition itself names them.
 */
record StepCall(String url, Map<String, String> headers, JsonNode body) {
  /** The call; {@code standardBody} is the body when the step gives none. Throws ExpressionFailed. */
  static StepCall of(Step.Http step, Map<String, JsonNode> vars, Supplier<JsonNode> standardBody) {
    UnaryOperator<String> urlEncoded = v -> URLEncoder.encode(v, StandardCharsets.UTF_8);
    StringBuilder url = new StringBuilder(text(step.url(), "url", vars, urlEncoded));
    for (Map.Entry<String, String> q : step.query().entrySet()) {
      url.append(url.indexOf("?") < 0 ? '?' : '&').append(urlEncoded.apply(q.getKey())).append('=')
          .append(urlEncoded.apply(text(q.getValue(), "query." + q.getKey(), vars, UnaryOperator.identity())));
    }
    try {
      CallTargets.url(TextNode.valueOf(url.toString()), "url");
    } catch (DomainException e) {
      throw new ExpressionFailed(step.url(), "the url it gives, '" + url + "', is not one Runway can call: "
          + e.getMessage());
    }
    Map<String, String> headers = new LinkedHashMap<>();
    for (Map.Entry<String, String> h : step.headers().entrySet()) {
      String value = text(h.getValue(), "headers." + h.getKey(), vars, UnaryOperator.identity());
      if (!CallTargets.headerValue(value)) {
        throw new ExpressionFailed(h.getValue(), "headers." + h.getKey() + ": the value holds characters a header "
            + "cannot carry");
      }
      headers.put(h.getKey(), value);
    }
    JsonNode body = step.body() == null ? standardBody.get() : JsonTemplate.compile(step.body(), "body").evaluate(vars);
    return new StepCall(url.toString(), headers, body);
  }

  /** A template's value as text; it may hold no more secret references than the template itself. */
  private static String text(String template, String field, Map<String, JsonNode> vars, UnaryOperator<String> encode) {
    String text = Template.compile(template, field).text(vars, encode);
    if (SecretReferences.openings(text) > SecretReferences.openings(template)) {
      throw new ExpressionFailed(template, field + ": a value may not hold a secret reference ({{secrets.…}}); "
          + "only the definition names secrets");
    }
    return text;
  }
}

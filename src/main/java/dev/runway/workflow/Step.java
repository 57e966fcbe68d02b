package dev.runway.workflow;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.DomainException;
import dev.runway.core.JsonFields;
import dev.runway.outbound.CallTargets;
import dev.runway.secret.SecretReferences;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/** One step of a workflow: an HTTP call to the caller's tool, an approval, or a durable delay. */
public sealed interface Step permits Step.Http, Step.Approval, Step.Delay {
  int MAX_STEPS = 100;

  String type();

  /**
   * Calls the caller's tool; 2xx completes the step, 5xx/time-outs/connection errors are retried.
   * {@code url} (in its query string) and header values may refer to workspace secrets as
   * {@code {{secrets.NAME}}}, resolved only when the call is made.
   */
  record Http(String url, String method, Map<String, String> headers, int timeoutMs, int maxAttempts) implements Step {
    public String type() {
      return "http";
    }

    /** The names of the secrets the call refers to. */
    public Set<String> secretNames() {
      Set<String> names = new java.util.LinkedHashSet<>(SecretReferences.names(url));
      headers.values().forEach(v -> names.addAll(SecretReferences.names(v)));
      return names;
    }
  }

  /** Pauses the run at awaiting_approval; past the time-out the run fails with approval_expired. */
  record Approval(long timeoutSeconds) implements Step {
    public String type() {
      return "approval";
    }
  }

  /** Waits, durably: the timer survives restarts. */
  record Delay(long seconds) implements Step {
    public String type() {
      return "delay";
    }
  }

  /** Parses and checks a steps array; a bad step is a 400 naming steps[i].field. */
  static List<Step> parseAll(JsonNode steps) {
    if (steps.size() > MAX_STEPS) {
      throw DomainException.invalid("steps", "a workflow has at most " + MAX_STEPS + " steps");
    }
    List<Step> parsed = new ArrayList<>();
    for (int i = 0; i < steps.size(); i++) {
      parsed.add(parse(steps.get(i), "steps[" + i + "]"));
    }
    return parsed;
  }

  private static Step parse(JsonNode node, String at) {
    if (!node.isObject()) {
      throw DomainException.invalid(at, at + " must be a JSON object with a type");
    }
    ObjectNode step = (ObjectNode) node;
    JsonNode type = step.get("type");
    if (type == null || !type.isTextual()) {
      throw DomainException.invalid(at + ".type", at + ".type is required: http, approval or delay");
    }
    String prefix = at + ".";
    return switch (type.textValue()) {
      case "http" -> {
        JsonFields f = JsonFields.of(step, Set.of("type", "url", "method", "headers", "timeout_ms", "max_attempts"), prefix);
        yield new Http(CallTargets.url(step.get("url"), prefix + "url"), method(f.optionalString("method", "POST", 10), prefix),
            CallTargets.headers(f.optionalObject("headers"), prefix + "headers"),
            (int) f.optionalLong("timeout_ms", 10_000, 1, 300_000),
            (int) f.optionalLong("max_attempts", 3, 1, 10));
      }
      case "approval" -> {
        JsonFields f = JsonFields.of(step, Set.of("type", "timeout_s"), prefix);
        yield new Approval(f.optionalLong("timeout_s", 86_400, 1, 31_536_000));
      }
      case "delay" -> {
        JsonFields f = JsonFields.of(step, Set.of("type", "seconds"), prefix);
        if (step.get("seconds") == null || step.get("seconds").isNull()) {
          throw DomainException.invalid(prefix + "seconds", prefix + "seconds is required");
        }
        yield new Delay(f.optionalLong("seconds", 0, 0, 31_536_000));
      }
      default -> throw DomainException.invalid(at + ".type",
          at + ".type must be http, approval or delay, not '" + type.textValue() + "'");
    };
  }



  private static String method(String method, String prefix) {
    String upper = method.toUpperCase(Locale.ROOT);
    if (!Set.of("GET", "POST", "PUT", "PATCH", "DELETE").contains(upper)) {
      throw DomainException.invalid(prefix + "method", prefix + "method must be GET, POST, PUT, PATCH or DELETE");
    }
    return upper;
  }





  /** The step as JSON, with every default filled in: what a run stores as its definition. */
  static ObjectNode toJson(Step step, ObjectNode target) {
    target.put("type", step.type());
    if (step instanceof Http h) {
      target.put("url", h.url()).put("method", h.method());
      ObjectNode headers = target.putObject("headers");
      h.headers().forEach(headers::put);
      target.put("timeout_ms", h.timeoutMs()).put("max_attempts", h.maxAttempts());
    } else if (step instanceof Approval a) {
      target.put("timeout_s", a.timeoutSeconds());
    } else if (step instanceof Delay d) {
      target.put("seconds", d.seconds());
    }
    return target;
  }

  static ArrayNode toJson(List<Step> steps, ArrayNode target) {
    steps.forEach(s -> toJson(s, target.addObject()));
    return target;
  }
}

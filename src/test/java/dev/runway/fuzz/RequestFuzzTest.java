package dev.runway.fuzz;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.code_intelligence.jazzer.junit.FuzzTest;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.agent.AgentDefinition;
import dev.runway.auth.KeyHasher;
import dev.runway.core.DomainException;
import dev.runway.core.Json;
import dev.runway.core.Slugs;
import dev.runway.crm.CrmRecord;
import dev.runway.crm.CrmSettings;
import dev.runway.crm.SyncPlan;
import dev.runway.crm.SyncRequest;
import dev.runway.http.ApiException;
import dev.runway.http.AuthHandler;
import dev.runway.http.ErrorMapper;
import dev.runway.http.RequestBodies;
import dev.runway.run.RunRoutes;
import dev.runway.secret.SecretReferences;
import dev.runway.secret.SecretRoutes;
import dev.runway.workflow.Step;
import dev.runway.workflow.WorkflowDefinition;
import java.net.URI;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Set;
import java.util.function.Supplier;
import java.util.regex.Pattern;

/**
 * Fuzz tests of everything that reads a request body, and of the Authorization parser. The
 * contract for bad input: a 4xx DomainException with a code; any other exception (or a hang) is a bug.
 *
 * <p>Without JAZZER_FUZZ these run as plain tests over the committed seeds in
 * src/test/resources/dev/runway/fuzz/RequestFuzzTestInputs/&lt;method&gt;/. With JAZZER_FUZZ=1 one
 * of them fuzzes for maxDuration (see docs/development.md) and writes any failing input into that folder.
 */
class RequestFuzzTest {
  private static final String WORKFLOW_ID = "fuzz-workflow";
  private static final Set<String> METHODS = Set.of("GET", "POST", "PUT", "PATCH", "DELETE");
  private static final Pattern KEY = Pattern.compile("wsk_[0-9A-Za-z]{40,196}");

  /** POST /v1/workflows/{id}/runs: a required body {project, inputs?}. */
  @FuzzTest(maxDuration = "30s")
  void startRunBody(byte[] body) {
    RunRoutes.StartBody start = refusedOr(() -> RunRoutes.startBody(RequestBodies.parseObject(body)));
    if (start == null) {
      return;
    }
    assertTrue(Slugs.isSlug(start.project()), () -> "project is not a slug: " + start.project());
    assertNotNull(start.inputs());
    // What RunService.start does next with the inputs: store them as text, hash them for Idempotency-Key.
    String stored = Json.string(start.inputs());
    assertEquals(stored, Json.string(Json.tree(stored)), "stored inputs do not read back the same");
    Json.canonical(start.inputs());
  }

  /** PUT /v1/workflows/{id}: a required body {name?, description?, requires_approval?, steps?}. */
  @FuzzTest(maxDuration = "30s")
  void putWorkflowBody(byte[] body) {
    WorkflowDefinition definition =
        refusedOr(() -> WorkflowDefinition.parse(WORKFLOW_ID, RequestBodies.parseObject(body)));
    if (definition == null) {
      return;
    }
    assertTrue(definition.name().length() <= 200);
    assertTrue(definition.description().length() <= 2000);
    assertTrue(definition.steps().isArray());
    assertEquals(definition.steps().size(), definition.parsedSteps().size());
    assertTrue(definition.parsedSteps().size() <= Step.MAX_STEPS);
    for (Step step : definition.parsedSteps()) {
      if (step instanceof Step.Http http) {
        assertTrue(http.url().regionMatches(true, 0, "http", 0, 4), http.url());
        assertTrue(METHODS.contains(http.method()), http.method());
        assertTrue(http.timeoutMs() >= 1 && http.timeoutMs() <= 300_000);
        assertTrue(http.maxAttempts() >= 1 && http.maxAttempts() <= 10);
        // HttpStepCaller builds its request so when the run gets there, its secret references
        // resolved: the URL must parse, and the header names and values be ones HTTP can carry
        // (java.net.http checks both strictly: it throws IllegalArgumentException on a bad one).
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(SecretReferences.withStandIns(http.url())))
            .timeout(Duration.ofMillis(http.timeoutMs()));
        http.headers().forEach((name, value) -> request.header(name, SecretReferences.withStandIns(value)));
        request.method(http.method(), HttpRequest.BodyPublishers.noBody()).build();
        http.secretNames().forEach(name -> assertTrue(SecretReferences.NAME.matcher(name).matches(), name));
      } else if (step instanceof Step.Approval approval) {
        assertTrue(approval.timeoutSeconds() >= 1 && approval.timeoutSeconds() <= 31_536_000);
      } else if (step instanceof Step.Delay delay) {
        assertTrue(delay.seconds() >= 0 && delay.seconds() <= 31_536_000);
      }
    }
    // The steps are stored as text and parsed again when a run starts: that must give the same steps.
    JsonNode stored = Json.tree(Json.string(definition.steps()));
    ObjectNode again = Json.MAPPER.createObjectNode();
    again.set("steps", stored);
    again.set("triggers", Json.tree(definition.triggers().json()));
    WorkflowDefinition reread = WorkflowDefinition.parse(WORKFLOW_ID, again);
    assertEquals(definition.parsedSteps(), reread.parsedSteps());
    assertEquals(definition.triggers(), reread.triggers());
  }

  /** POST /v1/agents/{id}/runs: a required body {project, input (text or an object), model?}. */
  @FuzzTest(maxDuration = "30s")
  void startAgentRunBody(byte[] body) {
    RunRoutes.AgentStartBody start = refusedOr(() -> RunRoutes.agentStartBody(RequestBodies.parseObject(body)));
    if (start == null) {
      return;
    }
    assertTrue(Slugs.isSlug(start.project()), () -> "project is not a slug: " + start.project());
    assertTrue(start.input().isTextual() || start.input().isObject(), start.input()::toString);
    assertTrue(start.model() == null || (!start.model().isBlank() && start.model().length() <= 200));
    // What RunService.startAgent does next: store the input as text, hash it for Idempotency-Key.
    String stored = Json.string(start.input());
    assertEquals(stored, Json.string(Json.tree(stored)), "stored input does not read back the same");
    Json.canonical(start.input());
  }

  /** PUT /v1/agents/{id}: a required body {model, name?, description?, instructions?, tools?, requires_approval?, limits?}. */
  @FuzzTest(maxDuration = "30s")
  void putAgentBody(byte[] body) {
    AgentDefinition agent = refusedOr(() -> AgentDefinition.parse("fuzz-agent", RequestBodies.parseObject(body)));
    if (agent == null) {
      return;
    }
    assertFalse(agent.model().isBlank());
    assertTrue(agent.tools().size() <= AgentDefinition.MAX_TOOLS);
    for (AgentDefinition.Tool tool : agent.tools()) {
      assertTrue(tool.url().regionMatches(true, 0, "http", 0, 4) || tool.url().equals("builtin:current_time"),
          tool.url());
      assertTrue(tool.timeoutMs() >= 1 && tool.timeoutMs() <= 300_000);
      assertEquals("object", tool.parameters().path("type").asText());
    }
    // Stored as JSON and read back when a run starts: the same definition.
    ObjectNode again = (ObjectNode) Json.tree(Json.string(agent.toJson()));
    again.put("name", agent.name()).put("description", agent.description());
    assertEquals(agent.toJson(), AgentDefinition.parse("fuzz-agent", again).toJson());
  }

  /**
   * POST /v1/crm/{type}/records/sync: {mode?, records}. A batch either is refused as a whole (a
   * 4xx) or gives one outcome per record, in order; each record either fails with a problem naming
   * a field of its own or is planned, against nothing stored and against itself stored, without
   * an exception, and what would be stored reads back the same.
   */
  @FuzzTest(maxDuration = "30s")
  void crmSyncBody(byte[] body) {
    CrmSettings limits = CrmSettings.from(dev.runway.config.Settings.defaults());
    SyncRequest request = refusedOr(() -> SyncRequest.parse(RequestBodies.parseObject(body), limits));
    if (request == null) {
      return;
    }
    assertTrue(request.items().size() >= 1 && request.items().size() <= CrmSettings.MAX_BATCH);
    java.time.Instant now = java.time.Instant.parse("2026-11-23T00:00:00Z");
    SyncPlan fresh = SyncPlan.of("ws", "contacts", request, java.util.Map.of(), now, limits);
    assertEquals(request.items().size(), fresh.results().size());
    java.util.Map<String, CrmRecord> stored = new java.util.HashMap<>();
    for (int i = 0; i < fresh.results().size(); i++) {
      SyncPlan.Result result = fresh.results().get(i);
      assertEquals(i, result.index());
      if (result.error() != null) {
        checkRefusal(new ApiException((Integer) result.error().get("status"), (String) result.error().get("code"), "-"));
        String param = (String) result.error().get("param");
        assertTrue(param.startsWith("records[" + i + "]"), param);
      } else {
        assertNull(SyncRequest.externalIdFault(result.externalId()), result.externalId());
      }
    }
    for (SyncPlan.Write write : fresh.writes()) {
      CrmRecord next = write.next();
      assertEquals(next.properties(), Json.string(Json.tree(next.properties())), "stored properties read back the same");
      stored.put(next.externalId(), next);
    }
    // The same batch again, against what it stored: nothing is stale, nothing fails that did not.
    SyncPlan again = SyncPlan.of("ws", "contacts", request, stored, now.plusSeconds(1), limits);
    for (int i = 0; i < again.results().size(); i++) {
      assertEquals(fresh.results().get(i).status().equals("failed"), again.results().get(i).status().equals("failed"),
          again.results().get(i)::toString);
      assertFalse(again.results().get(i).status().equals("stale"));
    }
  }

  /** PUT /v1/secrets/{name}: a body {value, allowed_hosts?}, 1-4096 printable characters, host names. */
  @FuzzTest(maxDuration = "30s")
  void secretBody(byte[] body) {
    dev.runway.secret.AllowedHosts hosts = refusedOr(() -> dev.runway.secret.AllowedHosts.parse(
        RequestBodies.parseObject(body).get("allowed_hosts"), "allowed_hosts"));
    if (hosts != null) {
      assertTrue(hosts.hosts().size() <= dev.runway.secret.AllowedHosts.MAX_HOSTS);
      hosts.hosts().forEach(h -> assertTrue(h.matches("(\\*\\.)?[a-z0-9.-]{1,253}|\\[[0-9a-f:.]+]"), h));
    }
    String value = refusedOr(() -> SecretRoutes.value(RequestBodies.parseObject(body)));
    if (value == null) {
      return;
    }
    assertFalse(value.isEmpty());
    assertTrue(value.length() <= 4096);
    assertTrue(value.chars().allMatch(c -> c >= 0x20 && c != 0x7f), "a control character was accepted");
  }

  /** POST /v1/runs/{runId}/approve and /reject: an optional body {comment?}. */
  @FuzzTest(maxDuration = "30s")
  void decisionBody(byte[] body) {
    Supplier<String> parse = () -> RunRoutes.decisionComment(RequestBodies.parseOptionalObject(body));
    String comment;
    try {
      comment = parse.get();
    } catch (DomainException e) {
      checkRefusal(e);
      return;
    }
    if (comment != null) {
      assertTrue(comment.length() <= 1000);
    }
    if (body.length == 0) {
      assertNull(comment);
    }
  }

  /** POST /v1/runs/{runId}/cancel: an optional body that, if sent, is {}. */
  @FuzzTest(maxDuration = "30s")
  void cancelBody(byte[] body) {
    Boolean accepted = refusedOr(() -> {
      ObjectNode object = RequestBodies.parseOptionalObject(body);
      RunRoutes.checkCancelBody(object);
      assertTrue(object.isEmpty(), "a cancel body with fields was accepted");
      return true;
    });
    if (body.length == 0) {
      assertEquals(Boolean.TRUE, accepted, "an empty cancel body was refused");
    }
  }

  /** The Authorization header, read as UTF-8 and as ISO-8859-1 (how a server may decode header bytes). */
  @FuzzTest(maxDuration = "30s")
  void authorizationHeader(byte[] header) {
    checkAuthorization(new String(header, StandardCharsets.UTF_8));
    checkAuthorization(new String(header, StandardCharsets.ISO_8859_1));
    if (header.length == 0) {
      checkAuthorization(null);
    }
  }

  private static void checkAuthorization(String header) {
    String token;
    try {
      token = AuthHandler.bearerToken(header);
    } catch (ApiException e) {
      checkRefusal(e);
      assertEquals(401, e.status());
      boolean missing = header == null || header.isBlank();
      assertEquals(missing ? "missing_api_key" : "invalid_api_key", e.code());
      assertTrue(e.headers().containsKey("WWW-Authenticate"));
      return;
    }
    assertNotNull(token);
    assertFalse(token.isEmpty());
    assertTrue(token.charAt(0) > ' ' && token.charAt(token.length() - 1) > ' ',
        () -> "token has leading or trailing space: '" + token + "'");
    assertEquals(token, AuthHandler.bearerToken("Bearer " + token), "token does not survive a round trip");
    assertEquals(KEY.matcher(token).matches(), KeyHasher.wellFormed(token), () -> "wellFormed is wrong on " + token);
  }

  /** The value, or null when refused with a proper DomainException; any other exception fails the test. */
  private static <T> T refusedOr(Supplier<T> parse) {
    try {
      return parse.get();
    } catch (DomainException e) {
      checkRefusal(e);
      return null;
    }
  }

  private static void checkRefusal(DomainException e) {
    int status = ErrorMapper.status(e.kind());
    if (status < 400 || status > 499 || e.code() == null || e.code().isEmpty()) {
      fail("refusal without a 4xx status and a code: " + status + " " + e.code() + " " + e.getMessage());
    }
  }
}

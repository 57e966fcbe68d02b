package dev.runway.support;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.RunwayApp;
import dev.runway.Services;
import dev.runway.auth.Scope;
import dev.runway.core.Json;
import dev.runway.workflow.WorkflowDefinition;
import io.javalin.testtools.JavalinTest;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import org.jdbi.v3.core.Jdbi;

/**
 * One test's view of Runway on one database: its own fresh workspace with an all-scopes key,
 * helpers to make more keys and workflows, and {@link #test} to talk to the app over HTTP.
 */
public final class Api {
  private final TestDatabase database;
  private final TestDatabase.Opened opened;
  public final String workspace;
  public final String key;

  Api(TestDatabase database) {
    this.database = database;
    this.opened = database.open();
    this.workspace = newWorkspaceId();
    this.key = key(Scope.values());
  }

  /** A fresh workspace on {@code database}, for a test that picks its database itself. */
  public static Api on(TestDatabase database) {
    return new Api(database);
  }

  public static String newWorkspaceId() {
    return "ws-" + UUID.randomUUID().toString().substring(0, 13);
  }

  public TestDatabase database() {
    return database;
  }

  public Services services() {
    return opened.services();
  }

  public Jdbi jdbi() {
    return opened.services().database().jdbi();
  }

  /** A new key of this test's workspace with these scopes. */
  public String key(Scope... scopes) {
    return keyIn(workspace, null, scopes);
  }

  /** A new key of this workspace limited to these projects, with every scope. */
  public String keyForProjects(String... projects) {
    return keyIn(workspace, Arrays.asList(projects), Scope.values());
  }

  public String keyIn(String workspaceId, List<String> projects, Scope... scopes) {
    return services().keys().create(workspaceId, "test", List.of(scopes), projects, null).key();
  }

  public String expiringKey(Duration validFor) {
    return services().keys().create(workspace, "test", List.of(Scope.values()), null, validFor).key();
  }

  /** Creates (or replaces) a workflow in this test's workspace. */
  public void workflow(String id, boolean requiresApproval) {
    workflowIn(workspace, id, requiresApproval);
  }

  /**
   * A workflow whose one step calls a tool: its runs stay {@code running} while no engine runs
   * (these tests start none), as a run without steps would not (it ends in its start's commit).
   */
  public void workflowThatCalls(String id) {
    ObjectNode body = Json.MAPPER.createObjectNode().put("requires_approval", false);
    body.putArray("steps").addObject().put("type", "http").put("url", "https://tools.example.com/hook");
    services().workflows().put(workspace, id, WorkflowDefinition.parse(id, body));
  }

  public void workflowIn(String workspaceId, String id, boolean requiresApproval) {
    ObjectNode body = Json.MAPPER.createObjectNode().put("requires_approval", requiresApproval);
    services().workflows().put(workspaceId, id, WorkflowDefinition.parse(id, body));
  }

  /** The app as the server builds it, unstarted: for tests that look at its routes. */
  public io.javalin.Javalin app() {
    return RunwayApp.create(services(), opened.serverSettings());
  }

  /** Starts the app on a free port for the test body and stops it after (javalin-testtools). */
  public void test(HttpTest body) {
    testWith(new dev.runway.http.InFlightLimit(opened.serverSettings().maxInFlight(),
        opened.serverSettings().maxInFlightPerKey()), body);
  }

  /** Like {@link #test}, with some settings of the app changed (e.g. low rate limits). */
  public void testWith(java.util.function.UnaryOperator<dev.runway.config.Settings> change, HttpTest body) {
    dev.runway.ServerSettings changed = dev.runway.ServerSettings.from(change.apply(opened.settings()));
    JavalinTest.test(RunwayApp.create(services(), changed), (server, client) -> body.accept(new Http(client, key)));
  }

  /** Services of their own over this test's database, made with some settings changed (e.g. low quotas). */
  public Services servicesWith(java.util.function.UnaryOperator<dev.runway.config.Settings> change) {
    return Services.over(services().database(), dev.runway.ServerSettings.from(change.apply(opened.settings())),
        () -> { });
  }

  /** Like {@link #testWith}, on services of their own made with the changed settings (for settings the services read). */
  public void testWithServices(java.util.function.UnaryOperator<dev.runway.config.Settings> change, HttpTest body) {
    dev.runway.ServerSettings server = dev.runway.ServerSettings.from(change.apply(opened.settings()));
    Services own = Services.over(services().database(), server, () -> { });
    JavalinTest.test(RunwayApp.create(own, server), (s, client) -> body.accept(new Http(client, key)));
  }

  /**
   * Like {@link #test}, on services of its own with some settings changed (loopback receivers
   * allowed, quick retries first, attempts in flight handed back at once at the end) and a webhook
   * dispatcher running beside the app.
   */
  public void testWebhooks(java.util.function.UnaryOperator<dev.runway.config.Settings> change, HttpTest body) {
    dev.runway.ServerSettings server = dev.runway.ServerSettings.from(change.apply(opened.settings()
        .with("engine.http.allow_private_networks", "true")
        .with("webhooks.retry_base_ms", "50")
        .with("webhooks.poll_interval_ms", "50")
        .with("shutdown.grace_seconds", "0")));
    Services own = Services.over(services().database(), server, () -> { });
    try (dev.runway.instance.Heartbeat heartbeat = database.heartbeat(own.database().jdbi(), server.engine().lease());
         dev.runway.webhook.WebhookDispatcher dispatcher = dev.runway.webhook.WebhookDispatcher.start(own.webhooks(),
             database == TestDatabase.H2, heartbeat.leases())) {
      JavalinTest.test(RunwayApp.create(own, server), (s, client) -> body.accept(new Http(client, key)));
    }
  }

  /** Like {@link #testWebhooks}, the body also given the dispatcher (to look at what it holds). */
  public void testWebhooks(java.util.function.UnaryOperator<dev.runway.config.Settings> change, DispatcherTest body) {
    dev.runway.ServerSettings server = dev.runway.ServerSettings.from(change.apply(opened.settings()
        .with("engine.http.allow_private_networks", "true")
        .with("webhooks.retry_base_ms", "50")
        .with("webhooks.poll_interval_ms", "50")
        .with("shutdown.grace_seconds", "0")));
    Services own = Services.over(services().database(), server, () -> { });
    try (dev.runway.instance.Heartbeat heartbeat = database.heartbeat(own.database().jdbi(), server.engine().lease());
         dev.runway.webhook.WebhookDispatcher dispatcher = dev.runway.webhook.WebhookDispatcher.start(own.webhooks(),
             database == TestDatabase.H2, heartbeat.leases())) {
      JavalinTest.test(RunwayApp.create(own, server), (s, client) -> body.accept(new Http(client, key), dispatcher));
    }
  }

  public interface DispatcherTest {
    void accept(Http http, dev.runway.webhook.WebhookDispatcher dispatcher) throws Exception;
  }

  /** Like {@link #test}, with the app admitting requests through {@code inFlight}. */
  public void testWith(dev.runway.http.InFlightLimit inFlight, HttpTest body) {
    JavalinTest.test(RunwayApp.create(services(), opened.serverSettings(), inFlight),
        (server, client) -> body.accept(new Http(client, key)));
  }

  /**
   * Two Runway instances on this test's database (PostgreSQL: H2 serves one process), each with
   * its own pool and group commit, as two servers sharing one database; the body gets a client of each.
   */
  public void testTwoInstances(TwoInstanceTest body) {
    if (database != TestDatabase.POSTGRESQL) {
      throw new IllegalStateException("several instances share PostgreSQL only");
    }
    dev.runway.db.Database second = dev.runway.db.Database.open(opened.serverSettings().database());
    try {
      Services other = Services.over(second, opened.serverSettings(), () -> { });
      JavalinTest.test(RunwayApp.create(services(), opened.serverSettings()), (s1, c1) ->
          JavalinTest.test(RunwayApp.create(other, opened.serverSettings()), (s2, c2) ->
              body.accept(new Http(c1, key), new Http(c2, key))));
    } finally {
      second.close();
    }
  }

  /** A test body that talks HTTP to two instances. */
  @FunctionalInterface
  public interface TwoInstanceTest {
    void accept(Http first, Http second) throws Exception;
  }

  /** A test body that talks HTTP. */
  @FunctionalInterface
  public interface HttpTest {
    void accept(Http http) throws Exception;
  }

  /** The stored run row as a JSON-like map, straight from the database. */
  public java.util.Optional<java.util.Map<String, Object>> storedRun(String runId) {
    return jdbi().withHandle(h -> h.createQuery("SELECT * FROM run WHERE id = :id").bind("id", runId)
        .mapToMap().findOne());
  }

  public int countRuns(String where, Object... args) {
    return jdbi().withHandle(h -> {
      var q = h.createQuery("SELECT COUNT(*) FROM run WHERE workspace_id = :ws" + (where.isEmpty() ? "" : " AND " + where))
          .bind("ws", workspace);
      for (int i = 0; i < args.length; i++) {
        q.bind(i == 0 ? "a" : "a" + i, args[i]);
      }
      return q.mapTo(Integer.class).one();
    });
  }

  public static JsonNode json(String text) {
    return Json.tree(text);
  }
}

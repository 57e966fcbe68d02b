package dev.runway;

import dev.runway.agent.AgentRoutes;
import dev.runway.auth.Scope;
import dev.runway.console.ConsoleForm;
import dev.runway.console.ConsoleGuard;
import dev.runway.console.ConsoleRoutes;
import dev.runway.console.PageRenderer;
import dev.runway.console.RunPages;
import dev.runway.console.UsagePage;
import dev.runway.crm.CrmRoutes;
import dev.runway.crm.CrmSettings;
import dev.runway.events.EventRoutes;
import dev.runway.events.EventStreams;
import dev.runway.http.ApiReference;
import dev.runway.http.AuthHandler;
import dev.runway.http.BufferedBodies;
import dev.runway.http.ErrorMapper;
import dev.runway.http.InFlightLimit;
import dev.runway.http.JettyErrors;
import dev.runway.http.RateLimits;
import dev.runway.http.RequestBodies;
import dev.runway.http.RequestIds;
import dev.runway.http.RequestLog;
import dev.runway.http.Responses;
import dev.runway.instance.InstanceRoutes;
import dev.runway.mcp.McpRoutes;
import dev.runway.mcp.McpServer;
import dev.runway.mcp.RunWaits;
import dev.runway.metrics.MetricsRoutes;
import dev.runway.run.RunRoutes;
import dev.runway.secret.SecretRoutes;
import dev.runway.usage.UsageRoutes;
import dev.runway.webhook.WebhookRoutes;
import dev.runway.trigger.HookRoutes;
import dev.runway.workflow.WorkflowRoutes;
import io.javalin.Javalin;
import io.javalin.compression.CompressionStrategy;
import io.javalin.compression.Gzip;
import io.javalin.config.RoutesConfig;
import io.javalin.http.HttpStatus;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import org.eclipse.jetty.http.MimeTypes;
import org.eclipse.jetty.server.NetworkConnectionLimit;
import org.eclipse.jetty.util.thread.QueuedThreadPool;

/** Builds Runway's HTTP application, unstarted, so tests can hand the same app to JavalinTest. */
public final class RunwayApp {
  private RunwayApp() {}

  public static Javalin create(Services services, ServerSettings settings) {
    return create(services, settings, new InFlightLimit(settings.maxInFlight(), settings.maxInFlightPerKey()));
  }

  /** The app, admitting requests through {@code inFlight} (which the caller drains at shutdown). */
  public static Javalin create(Services services, ServerSettings settings, InFlightLimit inFlight) {
    RequestBodies bodies = new RequestBodies(settings.maxBodyBytes());
    QueuedThreadPool threads = new QueuedThreadPool(settings.maxThreads(), Math.min(8, settings.maxThreads()));
    threads.setName("runway-http");
    EventStreams streams = new EventStreams(services.database().jdbi(), services.database().committer(),
        services.keys(), settings.streams(), inFlight, settings.keyCache(), services.quotas());
    EventRoutes events = new EventRoutes(services.runs(), services.events(), streams);
    RunRoutes runs = new RunRoutes(services.starts(), services.runs(), bodies, resumeOn(threads),
        settings.maxPageBytes());
    HookRoutes hooks = new HookRoutes(services.hooks(), resumeOn(threads));
    dev.runway.run.ThreadRoutes threadRoutes = new dev.runway.run.ThreadRoutes(services.threads(), settings.maxPageBytes());
    dev.runway.run.SignalRoutes signals = new dev.runway.run.SignalRoutes(services.signals(), bodies);
    WorkflowRoutes workflows = new WorkflowRoutes(services.workflows(), bodies, settings.maxPageBytes());
    SecretRoutes secrets = new SecretRoutes(services.secrets(), bodies);
    AgentRoutes agents = new AgentRoutes(services.agents(), bodies, settings.maxPageBytes());
    UsageRoutes usage = new UsageRoutes(services.agents().tokens());
    InstanceRoutes instances = new InstanceRoutes(services.database().jdbi(), settings.heartbeat());
    WebhookRoutes webhooks = new WebhookRoutes(services.webhooks(), bodies);
    int maxSyncBytes = Math.max(settings.maxBodyBytes(), CrmSettings.MAX_SYNC_BODY_BYTES);
    CrmRoutes crm = new CrmRoutes(services.crm(), settings.crm(), new RequestBodies(maxSyncBytes), resumeOn(threads),
        settings.maxPageBytes());
    PageRenderer pages = new PageRenderer();
    ConsoleGuard guard = new ConsoleGuard(services.accounts(), services.sessions(), settings.console(), pages);
    ConsoleRoutes console = new ConsoleRoutes(guard, pages, services.accounts(), services.keys(),
        settings.console(), workspace -> services.workflows().page(workspace, null, false, 100, settings.maxPageBytes()).rows().stream()
            .map(dev.runway.workflow.Workflow::id).toList());
    RunPages runPages = new RunPages(guard, pages, services.runs(), services.events(), services.workflows(),
        services.agents(), services.signals());
    UsagePage usagePage = new UsagePage(guard, pages, services.agents().tokens());
    ApiReference reference = new ApiReference();
    RateLimits limits = settings.rateLimits();
    AuthHandler auth = new AuthHandler(services.keys(), limits, inFlight);
    // Off (metrics.enabled=false, or services made without metrics): no /metrics, no request timed.
    boolean metricsOn = settings.metrics().enabled() && services.metrics().enabled();
    MetricsRoutes metrics = new MetricsRoutes(services.metrics(), settings.metrics());
    RunWaits waits = new RunWaits(services.database().jdbi(), services.database().committer(), services.runs(),
        settings.mcp());
    McpRoutes mcp = new McpRoutes(new McpServer(services.starts(), waits, services.workflows(), services.agents(),
        settings.mcp(), settings.maxPageBytes(), version()), bodies, inFlight, resumeOn(threads));

    return Javalin.create(config -> {
      config.startup.showJavalinBanner = false;
      config.startup.showOldJavalinVersionWarning = false;
      config.http.prefer405over404 = true;
      config.http.maxRequestSize = maxSyncBytes;
      // Javalin copies each response body into Jetty's buffer through a buffer of this size, made
      // anew for every request: the default 32 KB was most of what a request allocated.
      config.http.responseBufferSize = 4096;
      // Gzip as Javalin's default does it, but JSON, the type of nearly every answer, is allowed by
      // its name: otherwise Javalin searches each response's type for ten excluded types, ignoring
      // case (3% of a start-run's CPU on PostgreSQL). Named as the response carries it: JSON in
      // Jetty's own spelling (without the space), problem+json, unknown to Jetty, as Runway sets it.
      CompressionStrategy gzip = new CompressionStrategy(null, new Gzip());
      gzip.setAllowedMimeTypes(List.of("image/svg+xml", MimeTypes.Type.APPLICATION_JSON_UTF_8.asString(),
          Responses.PROBLEM_JSON));
      config.http.compressionStrategy = gzip;
      config.jetty.host = settings.httpHost();
      config.jetty.port = settings.httpPort();
      config.jetty.threadPool = threads;
      // Jetty keeps a cache of header lines per connection, 96 KB each by default: a thousand busy
      // connections would fill the heap. Without it a request parses its few headers anew.
      config.jetty.modifyHttpConfiguration(http -> http.setHeaderCacheSize(0));
      config.jetty.modifyServer(server -> {
        server.setErrorHandler(new JettyErrors());
        // Past the limit Jetty stops accepting (new connections wait in the kernel's queue) and
        // closes connections idle for a second, so idle ones cannot hold every place.
        NetworkConnectionLimit connections = new NetworkConnectionLimit(settings.maxConnections(), server);
        connections.setEndPointIdleTimeout(1000);
        server.addBean(connections);
        // Bodies are received before Javalin (and the limits of requests in flight) sees a request.
        server.insertHandler(new BufferedBodies(path -> isCrmSync(path) ? maxSyncBytes
            : path.startsWith("/console") ? ConsoleForm.MAX_BYTES : settings.maxBodyBytes(),
            settings.bodyTimeout().toMillis(), settings.maxPendingBodiesPerKey(),
            settings.maxPendingBodiesPerAddress(), settings.maxPendingBodyBytes(), AuthHandler.callerOf(services.keys())));
      });
      // Open streams end as the server stops (their clients reconnect, elsewhere or later).
      config.events.serverStopping(streams::close);
      config.events.serverStopping(waits::close); // waiting MCP calls answer with their runs as they stand
      config.jetty.modifyServletContextHandler(context -> context.setErrorHandler(new JettyErrors()));
      if (settings.requestLog()) {
        config.requestLogger.http(RequestLog::log);
      }
      if (metricsOn) {
        config.requestLogger.http(metrics::record);
      }
      RoutesConfig routes = config.routes;
      routes.before(RequestIds::assign);
      routes.before(Responses::commonHeaders);
      routes.before(limits::addressHeaders);
      routes.before(inFlight::enter);
      routes.after(inFlight::leave);
      routes.beforeMatched(auth::handle);
      ErrorMapper.register(routes);

      routes.get("/healthz", ctx -> Responses.json(ctx, 200, Map.of("status", "ok")));
      routes.get("/readyz", ctx -> {
        if (inFlight.starting()) {
          ctx.header("Retry-After", "1");
          Responses.json(ctx, 503, Map.of("status", "starting", "detail", "the server is still starting"));
        } else if (inFlight.draining()) {
          ctx.header("Retry-After", "5");
          Responses.json(ctx, 503, Map.of("status", "stopping", "detail", "the server is shutting down"));
        } else if (services.database().isReachable()) {
          Responses.json(ctx, 200, Map.of("status", "ready"));
        } else {
          ctx.header("Retry-After", "5");
          Responses.json(ctx, 503, Map.of("status", "unavailable", "detail", "the database does not answer"));
        }
      });
      // Prometheus's scrapes: from this machine, or with metrics.token; no API key (see MetricsRoutes).
      if (metricsOn) {
        routes.get("/metrics", metrics::scrape);
      }

      // The API's description, open to all: its OpenAPI document, and the reference page made from it.
      routes.get("/v1/openapi.json", reference::openApi);
      routes.get("/docs", reference::page);
      routes.get("/docs/{file}", reference::file);

      routes.post("/v1/workflows/{id}/runs", runs::start, Scope.RUNS_WRITE);
      routes.get("/v1/runs/{runId}", runs::get, Scope.RUNS_READ);
      routes.get("/v1/runs", runs::list, Scope.RUNS_READ);
      routes.post("/v1/runs/{runId}/approve", runs::approve, Scope.APPROVALS_WRITE);
      routes.post("/v1/runs/{runId}/reject", runs::reject, Scope.APPROVALS_WRITE);
      routes.post("/v1/runs/{runId}/cancel", runs::cancel, Scope.RUNS_WRITE);
      routes.post("/v1/runs/{runId}/rerun", runs::rerun, Scope.RUNS_WRITE);
      routes.post("/v1/runs/rerun", runs::rerunAll, Scope.RUNS_WRITE);
      routes.post("/v1/runs/{runId}/signals/{name}", signals::send, Scope.RUNS_WRITE);
      // A run's one-use signal URL: no API key, the token in the path is the credential.
      routes.post("/signals/{token}", signals::sendByUrl);
      routes.get("/v1/runs/{runId}/events", events::events, Scope.RUNS_READ);
      routes.get("/v1/runs/{runId}/messages", runs::messages, Scope.RUNS_READ);
      routes.get("/v1/threads", threadRoutes::list, Scope.RUNS_READ);
      routes.get("/v1/threads/{threadId}", threadRoutes::get, Scope.RUNS_READ);
      routes.get("/v1/threads/{threadId}/messages", threadRoutes::messages, Scope.RUNS_READ);
      routes.get("/v1/events", events::workspaceEvents, Scope.RUNS_READ);

      routes.put("/v1/workflows/{id}", workflows::put, Scope.WORKFLOWS_WRITE);
      routes.get("/v1/workflows/{id}", workflows::get, Scope.RUNS_READ);
      routes.delete("/v1/workflows/{id}", workflows::archive, Scope.WORKFLOWS_WRITE);
      routes.get("/v1/workflows", workflows::list, Scope.RUNS_READ);
      routes.post("/v1/workflows/{id}/triggers/{index}/rotate_hook", workflows::rotateHook, Scope.WORKFLOWS_WRITE);
      // Inbound webhooks: no API key; the hook's id and the sender's signature are the credential.
      routes.post("/hooks/{hookId}", hooks::receive);

      // MCP clients: tools/list needs runs:read, tools/call also runs:write (checked by the call).
      routes.post("/mcp", mcp::post, Scope.RUNS_READ);

      routes.put("/v1/agents/{id}", agents::put, Scope.WORKFLOWS_WRITE);
      routes.get("/v1/agents/{id}", agents::get, Scope.RUNS_READ);
      routes.delete("/v1/agents/{id}", agents::archive, Scope.WORKFLOWS_WRITE);
      routes.get("/v1/agents", agents::list, Scope.RUNS_READ);
      routes.post("/v1/agents/{id}/runs", runs::startAgent, Scope.RUNS_WRITE);
      routes.get("/v1/usage", usage::get, Scope.RUNS_READ);
      routes.get("/v1/admin/instances", instances::list, Scope.ADMIN);

      routes.post("/v1/crm/{object_type}/records/sync", crm::sync, Scope.CRM_WRITE);
      routes.get("/v1/crm/{object_type}/records/{external_id}", crm::get, Scope.CRM_READ);
      routes.delete("/v1/crm/{object_type}/records/{external_id}", crm::delete, Scope.CRM_WRITE);
      routes.get("/v1/crm/{object_type}/records", crm::list, Scope.CRM_READ);
      routes.get("/v1/crm/{object_type}/changes", crm::changes, Scope.CRM_READ);
      routes.get("/v1/crm/objects", crm::objects, Scope.CRM_READ);

      routes.put("/v1/secrets/{name}", secrets::put, Scope.ADMIN);
      routes.get("/v1/secrets/{name}", secrets::get, Scope.ADMIN);
      routes.delete("/v1/secrets/{name}", secrets::delete, Scope.ADMIN);
      routes.get("/v1/secrets", secrets::list, Scope.ADMIN);

      routes.post("/v1/webhook_endpoints", webhooks::create, Scope.ADMIN);
      routes.get("/v1/webhook_endpoints", webhooks::list, Scope.ADMIN);
      routes.get("/v1/webhook_endpoints/{id}", webhooks::get, Scope.ADMIN);
      routes.patch("/v1/webhook_endpoints/{id}", webhooks::update, Scope.ADMIN);
      routes.delete("/v1/webhook_endpoints/{id}", webhooks::delete, Scope.ADMIN);
      routes.post("/v1/webhook_endpoints/{id}/rotate_secret", webhooks::rotateSecret, Scope.ADMIN);
      routes.post("/v1/webhook_endpoints/{id}/test", webhooks::test, Scope.ADMIN);
      routes.post("/v1/webhook_endpoints/{id}/recover", webhooks::recover, Scope.ADMIN);
      routes.get("/v1/webhook_endpoints/{id}/deliveries", webhooks::deliveries, Scope.ADMIN);
      routes.get("/v1/webhook_deliveries/{id}", webhooks::delivery, Scope.ADMIN);
      routes.post("/v1/webhook_deliveries/{id}/redeliver", webhooks::redeliver, Scope.ADMIN);

      // The console: pages for people, signed in by a session cookie that never reaches /v1.
      if (settings.console().enabled()) {
        routes.before("/console", ConsoleRoutes::headers);
        routes.before("/console/*", ConsoleRoutes::headers);
        // Whoever opens the server's address in a browser wants the console, not a JSON 404.
        routes.get("/", ctx -> ctx.redirect("/console", HttpStatus.FOUND));
        routes.get("/console", console::home);
        routes.get("/console/static/{file}", console::asset);
        routes.get("/console/signin", console::signinPage);
        routes.post("/console/signin", console::signin);
        routes.get("/console/signup", console::signupPage);
        routes.post("/console/signup", console::signup);
        routes.post("/console/signout", console::signout);
        routes.get("/console/keys", console::keysPage);
        routes.post("/console/keys", console::createKey);
        routes.get("/console/keys/{id}/revoke", console::revokePage);
        routes.post("/console/keys/{id}/revoke", console::revoke);
        routes.get("/console/usage", usagePage::show);
        routes.get("/console/runs", runPages::list);
        routes.get("/console/runs/{id}", runPages::show);
        routes.get("/console/runs/{id}/live", runPages::live);
        routes.post("/console/runs/{id}/{action}", runPages::decide);
        routes.get("/console/workflows", runPages::definitions);
        routes.get("/console/workflows/{id}", runPages::workflow);
      }
    });
  }

  /** The jar's version (its manifest's), or "dev" when run from classes (tests, an IDE). */
  private static String version() {
    String version = RunwayApp.class.getPackage().getImplementationVersion();
    return version == null ? "dev" : version;
  }

  /**
   * Runs a request's remaining work on the request threads. Should the pool refuse it (stopped, or
   * its queue full, which the in-flight limit keeps far off), the work runs at once on the calling
   * thread: a request must never be left without an answer.
   */
  private static Executor resumeOn(QueuedThreadPool threads) {
    return task -> {
      try {
        threads.execute(task);
      } catch (RejectedExecutionException e) {
        task.run();
      }
    };
  }

  /**
   * Whether {@code path} is /v1/crm/{type}/records/sync, the one path whose bodies may be larger than
   * http.max_body_bytes (a CRM sync, 1 MiB): asked for every request with a body, so without a
   * regular expression.
   */
  static boolean isCrmSync(String path) {
    String prefix = "/v1/crm/";
    String suffix = "/records/sync";
    return path.length() > prefix.length() + suffix.length() && path.startsWith(prefix) && path.endsWith(suffix)
        && path.indexOf('/', prefix.length()) == path.length() - suffix.length();
  }
}

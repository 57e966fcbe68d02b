package dev.runway.metrics;

import static dev.runway.support.Problems.assertProblem;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.Runway;
import dev.runway.auth.Scope;
import dev.runway.config.Settings;
import dev.runway.core.Json;
import dev.runway.support.Api;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.TestDatabase;
import dev.runway.support.WebhookReceiver;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.URI;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.function.Predicate;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** GET /metrics: Prometheus's text format, the families Runway counts, and who may scrape. */
class MetricsTest {
  private static final String TEXT_004 = "text/plain; version=0.0.4; charset=utf-8";
  private static final String TOKEN = "scrape-token-0123456789abcdef";

  /**
   * One run started (it ends at once: no steps), read, a CRM sync of a created and a failed record,
   * a request to no route: each shows in the scrape, requests under their route's template, never
   * under the path with its id.
   */
  @BothDatabases
  void a_scrape_from_this_machine_counts_runs_crm_records_and_requests_by_route(Api api) {
    api.workflow("nothing", false);
    api.test(http -> {
      Scrape before = scrape(http);
      Http.Reply started = http.startRun("nothing", "demo");
      assertEquals(200, started.status(), started::toString);
      String runId = started.json().get("id").asText();
      assertEquals(200, http.get("/v1/runs/" + runId).status());
      Http.Reply synced = http.post("/v1/crm/contacts/records/sync",
          "{\"records\":[{\"external_id\":\"m-1\",\"properties\":{\"a\":1}},{\"properties\":{}}]}");
      assertEquals(200, synced.status(), synced::toString);
      assertEquals(404, http.get("/v1/no-such-thing/" + runId).status());

      Http.Reply reply = http.get("/metrics", null);
      assertEquals(200, reply.status(), reply::toString);
      assertEquals(TEXT_004, reply.header("Content-Type"));
      Scrape after = awaitScrape(http, s -> increase(before, s, "runway_http_requests_seconds_count",
          "route", Metrics.UNMATCHED, "status", "404") >= 1);

      assertEquals(1, increase(before, after, "runway_runs_started_total", "kind", "workflow"));
      assertEquals(1, increase(before, after, "runway_runs_ended_total", "kind", "workflow", "status", "succeeded"));
      assertEquals(0, increase(before, after, "runway_runs_ended_total", "kind", "workflow", "status", "failed"));
      assertTrue(after.text().contains("runway_runs_started_total{kind=\"agent\"}"), "known series exist from the start");
      assertEquals(1, increase(before, after, "runway_crm_records_synced_total", "outcome", "created"));
      assertEquals(1, increase(before, after, "runway_crm_records_synced_total", "outcome", "failed"));
      assertEquals(0, increase(before, after, "runway_crm_records_synced_total", "outcome", "updated"));

      assertEquals(1, increase(before, after, "runway_http_requests_seconds_count",
          "route", "/v1/workflows/{id}/runs", "method", "POST", "status", "200"));
      assertEquals(1, increase(before, after, "runway_http_requests_seconds_count",
          "route", "/v1/runs/{runId}", "method", "GET", "status", "200"));
      assertEquals(1, increase(before, after, "runway_http_requests_seconds_count",
          "route", "/v1/crm/{object_type}/records/sync", "method", "POST", "status", "200"));
      assertTrue(after.value("runway_http_requests_seconds_bucket", "route", "/v1/runs/{runId}", "le", "+Inf") >= 1,
          "latency histograms");
      assertFalse(after.text().contains(runId), "no series is named after a raw path");
      assertFalse(after.text().contains("no-such-thing"));

      // The group commit of the start and the sync, and the pool and JVM beside them.
      assertTrue(increase(before, after, "runway_commit_seconds_count") >= 2);
      assertTrue(after.value("runway_commit_batch_writes_bucket", "le", "256.0") >= 2);
      assertTrue(after.has("runway_commit_queue_writes"));
      assertTrue(after.value("hikaricp_connections_max", "pool", "runway") >= 1, "HikariCP's pool metrics");
      assertTrue(after.value("jvm_memory_used_bytes", "area", "heap") > 0);
      assertTrue(after.value("jvm_threads_live_threads") > 0);
      assertTrue(after.has("process_uptime_seconds"));
    });
  }

  @BothDatabases
  void the_scraper_may_ask_for_openmetrics(Api api) {
    api.test(http -> {
      Http.Reply reply = http.send("GET", "/metrics", null, null, null, "Accept",
          "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5");
      assertEquals(200, reply.status(), reply::toString);
      assertTrue(reply.header("Content-Type").startsWith("application/openmetrics-text; version=1.0.0"),
          reply.header("Content-Type"));
      assertTrue(reply.body().endsWith("# EOF\n"));
    });
  }

  /** A request passed on by a proxy (Forwarded, X-Forwarded-For) is not local: it needs the token. */
  @BothDatabases
  void a_scrape_from_elsewhere_needs_the_token(Api api) {
    api.test(http -> {
      assertProblem(http.send("GET", "/metrics", null, null, null, "X-Forwarded-For", "203.0.113.9"),
          403, "metrics_forbidden");
      assertProblem(http.send("GET", "/metrics", TOKEN, null, null, "Forwarded", "for=203.0.113.9"),
          403, "metrics_forbidden");
    });
    api.testWith(s -> s.with("metrics.token", TOKEN), http -> {
      assertProblem(http.send("GET", "/metrics", null, null, null, "X-Forwarded-For", "203.0.113.9"),
          403, "metrics_forbidden");
      assertProblem(http.send("GET", "/metrics", TOKEN + "x", null, null, "X-Forwarded-For", "203.0.113.9"),
          403, "metrics_forbidden");
      assertProblem(http.send("GET", "/metrics", api.key, null, null, "X-Forwarded-For", "203.0.113.9"),
          403, "metrics_forbidden");
      Http.Reply allowed = http.send("GET", "/metrics", TOKEN, null, null, "X-Forwarded-For", "203.0.113.9");
      assertEquals(200, allowed.status(), allowed::toString);
      assertEquals(TEXT_004, allowed.header("Content-Type"));
      assertEquals(200, http.get("/metrics", null).status(), "this machine needs no token");
    });
  }

  /**
   * The same from a real other address: this machine's own non-loopback address, to a server
   * listening on every interface (skipped on a machine that has none).
   */
  @BothDatabases
  void a_client_at_a_non_loopback_address_is_refused_without_the_token(Api api) {
    Optional<InetAddress> own = nonLoopbackAddress();
    Assumptions.assumeTrue(own.isPresent(), "this machine has no non-loopback address");
    api.testWith(s -> s.with("http.host", "0.0.0.0").with("metrics.token", TOKEN), http -> {
      int port = URI.create(http.origin()).getPort();
      Http fromOwnAddress = Http.at("http://" + own.get().getHostAddress() + ":" + port, null);
      Http.Reply refused = fromOwnAddress.get("/metrics");
      assertEquals(403, refused.status(), refused.body());
      assertEquals("metrics_forbidden", Json.tree(refused.body()).get("code").asText());
      Http.Reply allowed = fromOwnAddress.get("/metrics", TOKEN);
      assertEquals(200, allowed.status(), allowed.body());
      assertTrue(allowed.body().contains("runway_http_requests_seconds"));
    });
  }

  @BothDatabases
  void metrics_off_is_404(Api api) {
    api.testWith(s -> s.with("metrics.enabled", "false"), http -> {
      assertProblem(http.get("/metrics", null), 404, "not_found");
      assertEquals(200, http.get("/healthz", null).status());
    });
  }

  /**
   * A whole server as Runway.start wires it: the engine's gauges, a webhook delivery counted by its
   * outcome, the pool's and the JVM's meters; and with metrics.enabled=false no /metrics at all.
   */
  @BothDatabases
  void a_server_reports_its_engine_webhooks_pool_and_jvm(TestDatabase db) throws Exception {
    Settings settings = db.settingsForFreshDatabase()
        .with("engine.enabled", "true")
        .with("engine.http.allow_private_networks", "true");
    try (WebhookReceiver receiver = new WebhookReceiver(); Runway runway = Runway.start(settings)) {
      String key = runway.keys().create("metrics", "test", List.of(Scope.values()), null, null).key();
      Http http = Http.onPort(runway.port(), key);
      assertEquals(201, http.post("/v1/webhook_endpoints",
          "{\"url\":\"" + receiver.url("/hook") + "\",\"event_types\":[\"run.succeeded\"]}").status());
      assertEquals(201, http.put("/v1/workflows/w", "{\"steps\":[]}").status());
      assertEquals(200, http.post("/v1/workflows/w/runs", "{\"project\":\"p\"}").status());
      receiver.await(Duration.ofSeconds(20), d -> !d.isEmpty(), "the run's webhook delivery");

      Scrape scrape = null;
      long until = System.nanoTime() + Duration.ofSeconds(10).toNanos();
      while (System.nanoTime() < until) {
        scrape = new Scrape(http.get("/metrics", null).body());
        if (scrape.value("runway_webhook_deliveries_total", "outcome", "succeeded") >= 1
            && scrape.value("runway_webhook_attempts_seconds_count", "outcome", "succeeded") >= 1) {
          break;
        }
        Thread.sleep(20);
      }
      assertEquals(1, scrape.value("runway_webhook_deliveries_total", "outcome", "succeeded"), scrape::text);
      assertEquals(0, scrape.value("runway_webhook_deliveries_total", "outcome", "gave_up"));
      assertEquals(1, scrape.value("runway_webhook_attempts_seconds_count", "outcome", "succeeded"), scrape::text);
      assertEquals(1, scrape.value("runway_runs_started_total", "kind", "workflow"));
      assertEquals(1, scrape.value("runway_runs_ended_total", "kind", "workflow", "status", "succeeded"));
      assertTrue(scrape.has("runway_engine_due_runs"), scrape::text);
      assertEquals(0, scrape.value("runway_engine_due_runs"));
      assertEquals(0, scrape.value("runway_engine_calls_in_flight"));
      assertTrue(scrape.has("runway_engine_call_bytes_in_flight"));
      assertTrue(scrape.value("hikaricp_connections_max", "pool", "runway") >= 1);
      assertTrue(scrape.has("hikaricp_connections_acquire_seconds_count"));
      assertTrue(scrape.value("jvm_memory_used_bytes", "area", "heap") > 0);
      assertTrue(scrape.has("jvm_threads_live_threads"));
      assertTrue(scrape.has("system_cpu_count"));
      assertTrue(scrape.value("process_uptime_seconds") > 0);
    }

    try (Runway off = Runway.start(db.settingsForFreshDatabase().with("metrics.enabled", "false"))) {
      Http http = Http.onPort(off.port(), null);
      Http.Reply refused = http.get("/metrics");
      assertEquals(404, refused.status(), refused.body());
      assertEquals(200, http.get("/healthz").status());
    }
  }

  private static Scrape scrape(Http http) {
    Http.Reply reply = http.get("/metrics", null);
    assertEquals(200, reply.status(), reply::toString);
    return new Scrape(reply.body());
  }

  /**
   * Scrapes until {@code done}: a request is timed as it ends, which may be just after its client
   * has the answer.
   */
  private static Scrape awaitScrape(Http http, Predicate<Scrape> done) throws InterruptedException {
    long until = System.nanoTime() + Duration.ofSeconds(5).toNanos();
    Scrape s = scrape(http);
    while (!done.test(s) && System.nanoTime() < until) {
      Thread.sleep(10);
      s = scrape(http);
    }
    return s;
  }

  private static double increase(Scrape before, Scrape after, String name, String... labels) {
    return after.value(name, labels) - before.value(name, labels);
  }

  private static Optional<InetAddress> nonLoopbackAddress() {
    try {
      for (NetworkInterface nic : Collections.list(NetworkInterface.getNetworkInterfaces())) {
        if (!nic.isUp() || nic.isLoopback()) {
          continue;
        }
        for (InetAddress address : Collections.list(nic.getInetAddresses())) {
          if (address instanceof Inet4Address && !address.isLoopbackAddress() && !address.isLinkLocalAddress()) {
            return Optional.of(address);
          }
        }
      }
    } catch (java.net.SocketException e) {
      return Optional.empty();
    }
    return Optional.empty();
  }
}

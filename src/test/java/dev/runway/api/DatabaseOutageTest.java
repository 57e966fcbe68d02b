package dev.runway.api;

import dev.runway.support.TempFiles;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.Runway;
import dev.runway.auth.Scope;
import dev.runway.config.Settings;
import dev.runway.core.Json;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.TcpProxy;
import dev.runway.support.TestDatabase;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.h2.tools.Server;

/** The database goes away: requests get a fast 503 (never a hang or a 500), /readyz says so, and all recovers. */
class DatabaseOutageTest {
  @BothDatabases
  void unreachable_database_gives_fast_503_and_the_server_recovers_by_itself(TestDatabase db) throws Exception {
    Server h2Server = null;
    int targetPort;
    Settings base = db.settingsForFreshDatabase();
    String url;
    if (db == TestDatabase.H2) {
      Path dir = TempFiles.dir("runway-h2-tcp-");
      h2Server = Server.createTcpServer("-tcpPort", "0", "-ifNotExists", "-baseDir", dir.toString()).start();
      targetPort = h2Server.getPort();
    } else {
      targetPort = URI.create(TestDatabase.PG_URL.substring("jdbc:".length())).getPort();
    }
    try (TcpProxy proxy = new TcpProxy(targetPort)) {
      url = db == TestDatabase.H2
          ? "jdbc:h2:tcp://127.0.0.1:" + proxy.port() + "/runway"
          : base.asMap().get("db.url").replace(":" + targetPort + "/", ":" + proxy.port() + "/");
      Settings settings = base.with("db.url", url).with("db.connection_timeout_ms", "1000");
      try (Runway runway = Runway.start(settings)) {
        String key = runway.keys().create("outage", "t", List.of(Scope.values()), null, null).key();
        Http http = Http.onPort(runway.port(), key).timeout(Duration.ofSeconds(20));
        assertEquals(201, http.put("/v1/workflows/w", "{}").status());
        String runId = http.post("/v1/workflows/w/runs", "{\"project\":\"p\"}").json().get("id").asText();

        proxy.cut();
        for (String[] call : new String[][] {{"POST", "/v1/workflows/w/runs", "{\"project\":\"p\"}"},
            {"GET", "/v1/runs/" + runId, null}, {"GET", "/v1/runs", null}, {"PUT", "/v1/workflows/x", "{}"}}) {
          long t0 = System.nanoTime();
          Http.Reply r = http.send(call[0], call[1], key, call[2], call[2] == null ? null : "application/json");
          long ms = (System.nanoTime() - t0) / 1_000_000;
          assertEquals(503, r.status(), () -> call[0] + " " + call[1] + ": " + r.body());
          assertTrue(String.valueOf(r.header("Content-Type")).startsWith("application/problem+json"));
          assertEquals("unavailable", Json.tree(r.body()).get("code").asText());
          assertTrue(r.header("Retry-After") != null, "Retry-After");
          assertTrue(ms < 3000, call[0] + " " + call[1] + " took " + ms + " ms");
        }
        assertEquals(503, http.get("/readyz", null).status());
        assertEquals(200, http.get("/healthz", null).status(), "the process itself is up");

        proxy.restore();
        long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
        int status = 0;
        while (System.nanoTime() < deadline && status != 200) {
          status = http.post("/v1/workflows/w/runs", "{\"project\":\"p\"}").status();
          Thread.sleep(200);
        }
        assertEquals(200, status, "starts work again once the database is back");
        assertEquals(200, http.get("/readyz", null).status());
        assertEquals(200, http.get("/v1/runs/" + runId).status());
      }
    } finally {
      if (h2Server != null) {
        h2Server.stop();
      }
    }
  }
}

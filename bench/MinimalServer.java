import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.javalin.Javalin;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;

/**
 * The yardstick of bench/cpu.py: the least a durable start-run server does. POST
 * /v1/workflows/{id}/runs checks a bearer key (constant time), reads the JSON body, and inserts one
 * row, committed by a single writer that gathers the inserts waiting into one transaction (group
 * commit); 200 with the row as JSON once committed. H2 with WRITE_DELAY 0 as Runway sets it, or
 * PostgreSQL with its default synchronous commit.
 *
 *   java -cp target/runway.jar bench/MinimalServer.java JDBC_URL USER PORT KEY
 */
public class MinimalServer {
  record Pending(String id, String workflow, String project, String inputs, Instant at, CompletableFuture<Void> done) {}

  public static void main(String[] args) throws Exception {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(args[0]);
    config.setUsername(args[1]);
    config.setMaximumPoolSize(4);
    HikariDataSource db = new HikariDataSource(config);
    try (Connection c = db.getConnection(); Statement s = c.createStatement()) {
      if (args[0].startsWith("jdbc:h2:")) {
        s.execute("SET WRITE_DELAY 0");
      }
      s.execute("CREATE TABLE IF NOT EXISTS run (id VARCHAR(64) PRIMARY KEY, workflow_id VARCHAR(64) NOT NULL, "
          + "project VARCHAR(64) NOT NULL, status VARCHAR(20) NOT NULL, inputs VARCHAR(100000), created_at TIMESTAMP NOT NULL)");
    }
    BlockingQueue<Pending> queue = new ArrayBlockingQueue<>(10_000);
    Thread writer = new Thread(() -> write(db, queue), "writer");
    writer.setDaemon(true);
    writer.start();
    byte[] key = ("Bearer " + args[3]).getBytes(StandardCharsets.UTF_8);
    ObjectMapper json = new ObjectMapper();
    Javalin.create(c -> {
      c.startup.showJavalinBanner = false;
      c.jetty.host = "127.0.0.1";
      c.jetty.port = Integer.parseInt(args[2]);
      c.routes.post("/v1/workflows/{id}/runs", ctx -> {
        String auth = ctx.header("Authorization");
        if (auth == null || !MessageDigest.isEqual(key, auth.getBytes(StandardCharsets.UTF_8))) {
          ctx.status(401).json(java.util.Map.of("error", "unauthorized"));
          return;
        }
        JsonNode body = json.readTree(ctx.bodyAsBytes());
        String project = body.path("project").asText("");
        if (project.isEmpty()) {
          ctx.status(400).json(java.util.Map.of("error", "project is required"));
          return;
        }
        JsonNode inputs = body.path("inputs");
        Pending p = new Pending("run_" + UUID.randomUUID().toString().replace("-", ""), ctx.pathParam("id"), project,
            inputs.isMissingNode() ? "{}" : inputs.toString(), Instant.now(), new CompletableFuture<>());
        if (!queue.offer(p)) {
          ctx.status(503);
          return;
        }
        ctx.future(() -> p.done().thenAccept(v -> ctx.contentType("application/json").result("{\"id\":\"" + p.id()
            + "\",\"workflow\":\"" + p.workflow() + "\",\"status\":\"running\",\"project\":" + json.valueToTree(p.project())
            + ",\"inputs\":" + p.inputs() + ",\"created_at\":\"" + p.at() + "\"}")));
      });
    }).start();
  }

  /** One transaction for every insert that waits, then the next. */
  private static void write(HikariDataSource db, BlockingQueue<Pending> queue) {
    List<Pending> batch = new ArrayList<>();
    while (true) {
      try {
        batch.add(queue.take());
      } catch (InterruptedException e) {
        return;
      }
      queue.drainTo(batch, 255);
      try (Connection c = db.getConnection()) {
        c.setAutoCommit(false);
        try (PreparedStatement ps = c.prepareStatement(
            "INSERT INTO run (id, workflow_id, project, status, inputs, created_at) VALUES (?, ?, ?, 'running', ?, ?)")) {
          for (Pending p : batch) {
            ps.setString(1, p.id());
            ps.setString(2, p.workflow());
            ps.setString(3, p.project());
            ps.setString(4, p.inputs());
            ps.setTimestamp(5, Timestamp.from(p.at()));
            ps.addBatch();
          }
          ps.executeBatch();
        }
        c.commit();
        batch.forEach(p -> p.done().complete(null));
      } catch (Exception e) {
        batch.forEach(p -> p.done().completeExceptionally(e));
      }
      batch.clear();
    }
  }
}

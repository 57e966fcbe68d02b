package dev.runway.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.Json;
import dev.runway.support.BothDatabases;
import dev.runway.support.Http;
import dev.runway.support.LoadUntilKilled;
import dev.runway.support.TestDatabase;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A 200 to a CRM sync means committed, with the requests for the runs its changes trigger: the
 * packaged jar is killed with SIGKILL three times in the middle of syncs from several clients (new
 * records, updates, deletes, records coming back after their delete) into a type a workflow listens
 * to, restarted, and every acknowledged change must be there, in the record and in the change feed,
 * and once the trigger processor has worked through its queue (also what a kill interrupted),
 * exactly one run for each change of the feed (none lost, none twice, none without its change).
 */
class CrmKillNineIT {
  private static final int THREADS = 6;
  private static final int BATCH = 50;
  private static final int ROUNDS = 3;
  private static final int MIN_SYNCS_PER_ROUND = 3;
  private static final String TYPE = "contacts";
  private static final String WORKFLOW = "on-contact";
  private static final Set<String> CHANGES = Set.of("created", "updated", "deleted");
  private static final String RUNS = "/v1/runs?workflow=" + WORKFLOW + "&limit=100";

  @BothDatabases
  void every_acknowledged_change_and_its_runs_survive_kill_9_in_the_middle_of_syncs(TestDatabase db) throws Exception {
    long t0 = System.nanoTime();
    RunwayProcess process = RunwayProcess.onFreshDatabase(db, Map.of(), "runway-crm-kill-");
    String key = process.createKey("crm:write,crm:read,workflows:write,runs:read", "crm-kill-test");
    Client[] clients = new Client[THREADS];
    for (int t = 0; t < THREADS; t++) {
      clients[t] = new Client(t);
    }
    List<Ack> acked = Collections.synchronizedList(new ArrayList<>());
    List<String> wrong = Collections.synchronizedList(new ArrayList<>());
    AtomicInteger syncs = new AtomicInteger();
    AtomicInteger lost = new AtomicInteger();
    try {
      process.start();
      Http api = process.http(key);
      // Runs wait at their approval gate: the engine leaves them there, so every run stays as started.
      Http.Reply put = api.put("/v1/workflows/" + WORKFLOW, "{\"requires_approval\":true,"
          + "\"triggers\":[{\"crm\":\"" + TYPE + "\",\"on\":[\"created\",\"updated\",\"deleted\"]}]}");
      assertEquals(201, put.status(), put::body);

      for (int round = 1; round <= ROUNDS; round++) {
        if (round > 1) {
          process.start();
        }
        int atStart = syncs.get();
        LoadUntilKilled load = load(process.http(key), clients, acked, wrong, syncs, lost);
        // Kill in the middle of syncs: once a few have been acknowledged (a cold JVM on a slow machine
        // takes a few seconds over its first), after up to a second more of load.
        load.runUntil(() -> syncs.get() >= atStart + MIN_SYNCS_PER_ROUND, 300, 1000);
        int beforeKill = syncs.get();
        process.kill9();
        load.stop();
        assertTrue(beforeKill >= atStart + MIN_SYNCS_PER_ROUND, "round " + round + ": " + (beforeKill - atStart)
            + " syncs acknowledged before the kill came\n" + process.log());
      }
      assertEquals(List.of(), first(wrong), "answers to syncs while the server was up");

      process.start();
      Http api2 = process.http(key);

      // It serves normally: a new sync (a new record, an update and a delete of acknowledged ones)
      // is answered and committed as any other, with its runs; its changes are checked with the rest.
      Map<String, JsonNode> stored = records(api2);
      List<String> liveAcked = new ArrayList<>(new TreeSet<>(acked.stream().map(Ack::externalId)
          .filter(id -> stored.containsKey(id) && !stored.get(id).get("deleted").asBoolean()).toList()));
      assertTrue(liveAcked.size() >= 2, "live records after restart: " + liveAcked.size());
      String fresh = "after restart/1";
      String toUpdate = liveAcked.get(0);
      String toDelete = liveAcked.get(1);
      ObjectNode body = Json.MAPPER.createObjectNode();
      ArrayNode records = body.putArray("records");
      records.addObject().put("external_id", fresh).putObject("properties").put("email", "new@example.com");
      records.addObject().put("external_id", toUpdate).putObject("properties").put("after_restart", true);
      records.addObject().put("external_id", toDelete).put("deleted", true);
      Http.Reply synced = api2.post("/v1/crm/" + TYPE + "/records/sync", Json.string(body));
      assertEquals(200, synced.status(), synced::body);
      JsonNode results = Json.tree(synced.body()).get("results");
      assertEquals(List.of("created", "updated", "deleted"),
          List.of(results.get(0).get("status").asText(), results.get(1).get("status").asText(),
              results.get(2).get("status").asText()), synced::body);
      assertEquals(1, results.get(0).get("version").asInt());
      assertEquals(stored.get(toUpdate).get("version").asInt() + 1, results.get(1).get("version").asInt());
      assertEquals(stored.get(toDelete).get("version").asInt() + 1, results.get(2).get("version").asInt());
      results.forEach(r -> acked.add(new Ack(r.get("external_id").asText(), r.get("status").asText(),
          r.get("version").asInt())));
      Http.Reply one = api2.get("/v1/crm/" + TYPE + "/records/" + encode(fresh));
      assertEquals(200, one.status(), one::body);
      assertEquals(fresh, Json.tree(one.body()).get("external_id").asText());

      Map<String, JsonNode> after = records(api2);
      Map<Key, JsonNode> feed = new LinkedHashMap<>();
      List<String> feedFaults = new ArrayList<>();
      for (JsonNode c : api2.all("/v1/crm/" + TYPE + "/changes?limit=1000", "after", "0")) {
        Key k = new Key(c.get("external_id").asText(), c.get("version").asInt());
        JsonNode record = c.get("record");
        if (feed.put(k, c) != null) {
          feedFaults.add("two changes of " + k);
        }
        if (!record.get("external_id").asText().equals(k.externalId()) || record.get("version").asInt() != k.version()
            || record.get("deleted").asBoolean() != c.get("change").asText().equals("deleted")
            || !CHANGES.contains(c.get("change").asText())) {
          feedFaults.add("change " + c + " does not match its record");
        }
      }
      // The runs are made after the syncs' commits, by the trigger processor: wait for them.
      List<JsonNode> runs = api2.all(RUNS);
      long runsDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
      while (runs.size() < feed.size() && System.nanoTime() < runsDeadline) {
        Thread.sleep(500);
        runs = api2.all(RUNS);
      }
      long ms = (System.nanoTime() - t0) / 1_000_000;
      System.out.printf("CRM kill -9 x%d on %s: %d syncs acknowledged (%d record changes), %d requests failed at a kill; "
          + "%d records, %d changes in the feed, %d runs after restart; %d ms%n", ROUNDS, db.label(), syncs.get(),
          acked.size(), lost.get(), after.size(), feed.size(), runs.size(), ms);

      // 1. Every acknowledged change is there: in its record (this version or a later one) and in the feed.
      List<String> missing = new ArrayList<>();
      Set<Key> ackedKeys = new HashSet<>();
      for (Ack a : List.copyOf(acked)) {
        Key k = new Key(a.externalId(), a.version());
        if (!ackedKeys.add(k)) {
          missing.add("acknowledged twice: " + k);
        }
        JsonNode record = after.get(a.externalId());
        if (record == null) {
          missing.add(a + ": no record");
        } else if (record.get("version").asInt() < a.version()) {
          missing.add(a + ": the record is at version " + record.get("version").asInt());
        }
        JsonNode change = feed.get(k);
        if (change == null) {
          missing.add(a + ": not in the change feed");
        } else if (!change.get("change").asText().equals(a.status())) {
          missing.add(a + ": the feed says " + change.get("change").asText());
        }
      }
      assertEquals(List.of(), first(missing), "acknowledged changes lost by kill -9 (of " + acked.size() + ")");

      // The feed is each record's whole history: one change for each of its versions, the last as stored.
      Map<String, TreeSet<Integer>> versions = new HashMap<>();
      feed.keySet().forEach(k -> versions.computeIfAbsent(k.externalId(), id -> new TreeSet<>()).add(k.version()));
      for (Map.Entry<String, JsonNode> e : after.entrySet()) {
        int version = e.getValue().get("version").asInt();
        TreeSet<Integer> history = versions.getOrDefault(e.getKey(), new TreeSet<>());
        if (history.size() != version || history.first() != 1 || history.last() != version) {
          feedFaults.add(e.getKey() + " at version " + version + " has changes of versions " + history);
        } else {
          JsonNode last = feed.get(new Key(e.getKey(), version)).get("record");
          if (!last.get("properties").equals(e.getValue().get("properties"))
              || last.get("deleted").asBoolean() != e.getValue().get("deleted").asBoolean()) {
            feedFaults.add(e.getKey() + " is stored as " + e.getValue() + " but its last change says " + last);
          }
        }
      }
      versions.keySet().stream().filter(id -> !after.containsKey(id)).forEach(id -> feedFaults.add(id + " has changes but no record"));
      assertEquals(List.of(), first(feedFaults), "the change feed against the records");

      // 2. Exactly one run per change of the feed, carrying that change and its record.
      Map<Key, List<JsonNode>> runsByChange = new HashMap<>();
      List<String> runFaults = new ArrayList<>();
      for (JsonNode run : runs) {
        JsonNode inputs = run.get("inputs");
        JsonNode record = inputs.get("record");
        Key k = new Key(record.get("external_id").asText(), record.get("version").asInt());
        runsByChange.computeIfAbsent(k, x -> new ArrayList<>()).add(run);
        JsonNode change = feed.get(k);
        if (change == null) {
          runFaults.add("run " + run.get("id").asText() + " for " + k + " (" + inputs.get("change").asText()
              + ") whose change is not in the feed");
        } else if (!change.get("change").asText().equals(inputs.get("change").asText())
            || !change.get("record").get("properties").equals(record.get("properties"))
            || change.get("record").get("deleted").asBoolean() != record.get("deleted").asBoolean()) {
          runFaults.add("run " + run.get("id").asText() + " has " + inputs + " but the feed has " + change);
        }
        if (!"awaiting_approval".equals(run.get("status").asText()) || !"crm".equals(run.get("project").asText())) {
          runFaults.add("run " + run.get("id").asText() + " is " + run.get("status").asText() + " in project "
              + run.get("project").asText());
        }
      }
      runsByChange.forEach((k, list) -> {
        if (list.size() > 1) {
          runFaults.add(list.size() + " runs for " + k + ": " + list.stream().map(r -> r.get("id").asText()).toList());
        }
      });
      feed.forEach((k, c) -> {
        if (!runsByChange.containsKey(k)) {
          runFaults.add("no run for the change " + c.get("change").asText() + " " + k + " (cursor "
              + c.get("cursor").asText() + ")");
        }
      });
      assertEquals(List.of(), first(runFaults), "runs against the changes (" + runs.size() + " runs, "
          + feed.size() + " changes)");
      assertEquals(feed.size(), runs.size());
    } finally {
      process.stop();
    }
  }

  /** One record's outcome in an acknowledged sync. */
  private record Ack(String externalId, String status, int version) {}

  /** A version of a record: what a change (and the run it starts) is about. */
  private record Key(String externalId, int version) {}

  private static List<String> first(List<String> faults) {
    synchronized (faults) {
      return faults.size() <= 20 ? List.copyOf(faults) : List.copyOf(faults.subList(0, 20));
    }
  }

  private static String encode(String externalId) {
    return URLEncoder.encode(externalId, StandardCharsets.UTF_8).replace("+", "%20");
  }

  /**
   * What one client thread has asked for so far (kept across rounds): its records it believes live
   * and deleted. A sync that failed at a kill may or may not have committed, so these may be wrong
   * afterwards; the answers then differ (an update that creates, say), which is fine: only the
   * answers are checked.
   */
  private static final class Client {
    private final int thread;
    private final List<String> live = new ArrayList<>();
    private final List<String> deleted = new ArrayList<>();
    private int next;
    private final AtomicLong seq = new AtomicLong();

    Client(int thread) {
      this.thread = thread;
    }

    /** A batch of BATCH records: updates and deletes of its live records, a few come back, the rest new. */
    String nextBatch() {
      ThreadLocalRandom rnd = ThreadLocalRandom.current();
      ObjectNode body = Json.MAPPER.createObjectNode();
      ArrayNode records = body.putArray("records");
      Collections.shuffle(live, rnd);
      Collections.shuffle(deleted, rnd);
      int updates = Math.min(live.size(), 10 + rnd.nextInt(10));
      int deletes = Math.min(live.size() - updates, 3 + rnd.nextInt(6));
      int revivals = Math.min(deleted.size(), rnd.nextInt(4));
      for (int i = 0; i < updates; i++) {
        ObjectNode p = records.addObject().put("external_id", live.get(i)).putObject("properties");
        p.put("n", seq.incrementAndGet());
        if (rnd.nextInt(4) == 0) {
          p.putNull("email");
        } else {
          p.put("email", "u" + seq.get() + "@example.com");
        }
      }
      for (int i = 0; i < deletes; i++) {
        String id = live.remove(live.size() - 1);
        records.addObject().put("external_id", id).put("deleted", true);
        deleted.add(id);
      }
      for (int i = 0; i < revivals; i++) {
        String id = deleted.remove(0);
        records.addObject().put("external_id", id).putObject("properties").put("n", seq.incrementAndGet())
            .put("back", true);
        live.add(id);
      }
      while (records.size() < BATCH) {
        // A slash and a space: read back percent-encoded.
        String id = "t" + thread + "/c " + next++;
        records.addObject().put("external_id", id).putObject("properties").put("n", seq.incrementAndGet())
            .put("thread", thread).put("email", "c" + seq.get() + "@example.com");
        live.add(id);
      }
      return Json.string(body);
    }
  }

  /** Every record of the type, tombstones too, by external id. */
  private static Map<String, JsonNode> records(Http api) {
    Map<String, JsonNode> records = new HashMap<>();
    api.all("/v1/crm/" + TYPE + "/records?include_deleted=true&limit=1000")
        .forEach(r -> records.put(r.get("external_id").asText(), r));
    return records;
  }

  /** THREADS clients syncing until stopped (or the server goes away), recording every 200's outcomes. */
  private static LoadUntilKilled load(Http http, Client[] clients, List<Ack> acked, List<String> wrong,
      AtomicInteger syncs, AtomicInteger lost) {
    Http load = http.timeout(Duration.ofSeconds(15));
    return new LoadUntilKilled(clients.length, client -> {
      Client c = clients[client];
      Http.Reply r;
      try {
        r = load.post("/v1/crm/" + TYPE + "/records/sync", c.nextBatch());
      } catch (RuntimeException serverGone) {
        lost.incrementAndGet();
        throw serverGone;
      }
      try {
        if (r.status() != 200) {
          wrong.add("sync answered " + r.status() + ": " + r.body());
          return;
        }
        List<Ack> outcomes = new ArrayList<>();
        for (JsonNode result : Json.tree(r.body()).get("results")) {
          String status = result.get("status").asText();
          if (CHANGES.contains(status)) {
            outcomes.add(new Ack(result.get("external_id").asText(), status, result.get("version").asInt()));
          } else if (!status.equals("unchanged")) {
            // Unchanged: a delete again of a record whose delete committed unanswered at a kill.
            wrong.add("record " + result + " of an acknowledged sync");
          }
        }
        acked.addAll(outcomes);
        syncs.incrementAndGet();
      } catch (RuntimeException e) {
        wrong.add("unreadable answer " + e + ": " + r.body());
      }
    });
  }
}

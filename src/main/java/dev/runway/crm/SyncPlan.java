package dev.runway.crm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.DomainException;
import dev.runway.core.DomainException.Kind;
import dev.runway.core.Json;
import dev.runway.http.Problem;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What a sync does to each record of its batch, worked out from the records as stored. It reads
 * and writes nothing itself, so it can be worked out before the transaction and again inside it
 * should a record have changed in between. Public for the fuzz tests.
 */
public final class SyncPlan {
  static final String CREATED = "created";
  static final String UPDATED = "updated";
  static final String UNCHANGED = "unchanged";
  static final String DELETED = "deleted";
  static final String STALE = "stale";
  static final String FAILED = "failed";

  /**
   * A record to store: {@code next} replaces the stored version {@code previousVersion} (0: none
   * stored, an insert). {@code change} is what the feed records; {@code properties} is
   * {@code next}'s properties as a tree, for the inputs of runs it triggers.
   */
  public record Write(CrmRecord next, int previousVersion, boolean wasLive, boolean wasTombstone, String change,
      ObjectNode properties) {}

  /** One record's outcome, in the answer's shape; {@code error} is a problem body or null. */
  public record Result(int index, String externalId, String status, Integer version, Map<String, Object> error) {}

  final List<Result> results;
  final List<Write> writes;
  /** How many characters of properties JSON the live records gain (less: lose) by the writes (quotas.crm_megabytes_*). */
  final long liveCharsDelta;

  private SyncPlan(List<Result> results, List<Write> writes, long liveCharsDelta) {
    this.results = results;
    this.writes = writes;
    this.liveCharsDelta = liveCharsDelta;
  }

  public static SyncPlan of(String ws, String type, SyncRequest request, Map<String, CrmRecord> stored, Instant now,
      CrmSettings limits) {
    List<Result> results = new ArrayList<>(request.items().size());
    List<Write> writes = new ArrayList<>();
    long liveChars = 0;
    for (SyncRequest.Item item : request.items()) {
      if (item.error() != null) {
        results.add(new Result(item.index(), item.externalId(), FAILED, null, Problem.of(item.error())));
        continue;
      }
      CrmRecord before = stored.get(item.externalId());
      try {
        Write write = plan(ws, type, request.replace(), item, before, now, limits);
        if (write == null) {
          boolean stale = before != null && isStale(item, before);
          results.add(new Result(item.index(), item.externalId(), stale ? STALE : UNCHANGED,
              before == null ? null : before.version(), null));
        } else {
          writes.add(write);
          liveChars += (write.next().deleted() ? 0 : write.next().properties().length())
              - (before == null || before.deleted() ? 0 : before.properties().length());
          results.add(new Result(item.index(), item.externalId(), write.change(), write.next().version(), null));
        }
      } catch (DomainException e) {
        results.add(new Result(item.index(), item.externalId(), FAILED, null, Problem.of(e)));
      }
    }
    return new SyncPlan(results, writes, liveChars);
  }

  /** The write one record needs, or null when it is stale or nothing differs. */
  private static Write plan(String ws, String type, boolean replace, SyncRequest.Item item, CrmRecord before,
      Instant now, CrmSettings limits) {
    if (before != null && isStale(item, before)) {
      return null;
    }
    boolean wasLive = before != null && !before.deleted();
    boolean wasTombstone = before != null && before.deleted();
    Instant source = item.sourceUpdatedAt() != null ? item.sourceUpdatedAt()
        : before == null ? null : before.sourceUpdatedAt();
    int version = before == null ? 1 : before.version() + 1;
    int previous = before == null ? 0 : before.version();
    if (item.deleted()) {
      if (wasTombstone && Objects.equals(source, before.sourceUpdatedAt())) {
        return null;
      }
      // A tombstone keeps the last properties: a reader of the feed sees what was deleted.
      String properties = before == null ? "{}" : before.properties();
      Instant created = before == null ? now : before.createdAt();
      return new Write(new CrmRecord(ws, type, item.externalId(), properties, version, true, source, created, now),
          previous, wasLive, wasTombstone, DELETED, null);
    }
    ObjectNode base = wasLive ? (ObjectNode) Json.tree(before.properties()) : Json.MAPPER.createObjectNode();
    ObjectNode next = replace ? withoutNulls(item.properties()) : merged(base, item.properties());
    if (wasLive && next.equals(base) && Objects.equals(source, before.sourceUpdatedAt())) {
      return null;
    }
    String at = "records[" + item.index() + "].properties";
    if (next.size() > limits.maxProperties()) {
      throw new DomainException(Kind.INVALID, "too_many_properties", "the record would have " + next.size()
          + " properties; a record may have at most " + limits.maxProperties() + " (crm.max_properties)", at);
    }
    String properties = Json.string(next);
    if ((long) properties.length() * 3 > limits.maxRecordBytes()
        && properties.getBytes(StandardCharsets.UTF_8).length > limits.maxRecordBytes()) {
      throw new DomainException(Kind.INVALID, "record_too_large", "the record's properties would take more than "
          + limits.maxRecordBytes() + " bytes of JSON (crm.max_record_bytes)", at);
    }
    // A record that comes back after its delete starts a new life: created again, new properties only.
    Instant created = wasLive ? before.createdAt() : now;
    return new Write(new CrmRecord(ws, type, item.externalId(), properties, version, false, source, created, now),
        previous, wasLive, wasTombstone, wasLive ? UPDATED : CREATED, next);
  }

  /** Older than what is stored: the source's own time says this copy was overtaken. */
  private static boolean isStale(SyncRequest.Item item, CrmRecord before) {
    return item.sourceUpdatedAt() != null && before.sourceUpdatedAt() != null
        && item.sourceUpdatedAt().isBefore(before.sourceUpdatedAt());
  }

  /** {@code base} with the properties sent: a value replaces, {@code null} removes. */
  private static ObjectNode merged(ObjectNode base, ObjectNode sent) {
    if (sent == null) {
      return base;
    }
    ObjectNode next = base.deepCopy();
    for (Iterator<Map.Entry<String, JsonNode>> it = sent.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> p = it.next();
      if (p.getValue().isNull()) {
        next.remove(p.getKey());
      } else {
        next.set(p.getKey(), p.getValue());
      }
    }
    return next;
  }

  private static ObjectNode withoutNulls(ObjectNode sent) {
    ObjectNode next = Json.MAPPER.createObjectNode();
    if (sent != null) {
      sent.fields().forEachRemaining(p -> {
        if (!p.getValue().isNull()) {
          next.set(p.getKey(), p.getValue());
        }
      });
    }
    return next;
  }

  public List<Result> results() {
    return results;
  }

  /** 413 sync_too_large: the records a sync touches hold more than {@code maxChars} of properties. */
  static DomainException tooLarge(long maxChars) {
    return new DomainException(Kind.TOO_LARGE, "sync_too_large", "the records this sync touches hold more than "
        + maxChars
        + " characters of properties, before and after it; send fewer records in one request", "records");
  }

  /** The characters of properties the plan writes (each also copied into its change). */
  long writtenChars() {
    long chars = 0;
    for (Write w : writes) {
      chars += w.next().properties() == null ? 0 : w.next().properties().length();
    }
    return chars;
  }

  public List<Write> writes() {
    return writes;
  }

  long liveDelta() {
    return writes.stream().mapToLong(w -> (w.next().deleted() ? 0 : 1) - (w.wasLive() ? 1 : 0)).sum();
  }

  long tombstoneDelta() {
    return writes.stream().mapToLong(w -> (w.next().deleted() ? 1 : 0) - (w.wasTombstone() ? 1 : 0)).sum();
  }
}

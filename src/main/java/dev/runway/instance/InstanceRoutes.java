package dev.runway.instance;

import dev.runway.core.Time;
import dev.runway.http.Page;
import dev.runway.http.QueryParams;
import dev.runway.http.Responses;
import io.javalin.http.Context;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jdbi.v3.core.Jdbi;

/** GET /v1/admin/instances: the instances that serve this database, newest first. */
public final class InstanceRoutes {
  private static final Set<String> PARAMS = Set.of("limit");

  private final Jdbi jdbi;
  private final Duration interval;

  /** {@code interval}: how often instances beat (instances.heartbeat_ms), to tell which are silent. */
  public InstanceRoutes(Jdbi jdbi, Duration interval) {
    this.jdbi = jdbi;
    this.interval = interval;
  }

  public void list(Context ctx) {
    int limit = QueryParams.of(ctx, PARAMS).integer("limit", 100, 1, 1000);
    Instant now = Time.now();
    List<Instance> rows = jdbi.withExtension(InstanceDao.class, dao -> dao.newest(limit + 1));
    Map<String, Map<String, Integer>> held = jdbi.withExtension(InstanceDao.class, dao -> dao.held(now));
    List<InstanceView> views = rows.stream().limit(limit)
        .map(i -> InstanceView.of(i, now, interval, held.getOrDefault(i.id(), Map.of()))).toList();
    Responses.json(ctx, 200, new Page<>(views, rows.size() > limit, null));
  }
}

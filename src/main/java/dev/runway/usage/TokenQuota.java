package dev.runway.usage;

import dev.runway.core.DomainException;
import dev.runway.core.DomainException.Kind;
import dev.runway.core.Json;
import dev.runway.db.Tx;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jdbi.v3.core.Jdbi;

/**
 * The tokens a workspace's agent runs may use per UTC day (agents.workspace_tokens_per_day;
 * 0: no bound), counted from the model's reported usage.total_tokens in table token_usage. Runs
 * check it before each model call, so several runs of one workspace calling at once may pass it by
 * what those calls use; nothing starts once it is used up.
 */
public final class TokenQuota {
  public static final String EXCEEDED = "token_quota_exceeded";

  private final Jdbi jdbi;
  private final long perDay;

  public TokenQuota(Jdbi jdbi, long perDay) {
    this.jdbi = jdbi;
    this.perDay = perDay;
  }

  /** The day's bound, 0 when there is none. */
  public long perDay() {
    return perDay;
  }

  public boolean unlimited() {
    return perDay == 0;
  }

  /** The UTC day {@code at} falls in: the day its tokens count for. */
  public static LocalDate day(Instant at) {
    return LocalDate.ofInstant(at, ZoneOffset.UTC);
  }

  /** When the day of {@code at} ends and a new quota begins: the next UTC midnight. */
  public static Instant resetsAt(Instant at) {
    return day(at).plusDays(1).atStartOfDay(ZoneOffset.UTC).toInstant();
  }

  /** The tokens the workspace used on the UTC day of {@code at}. */
  public long used(String workspaceId, Instant at) {
    return jdbi.withExtension(TokenUsageDao.class, dao -> dao.tokens(workspaceId, day(at))).orElse(0L);
  }

  /** The tokens the workspace may still use today (never below 0); Long.MAX_VALUE without a bound. */
  public long left(String workspaceId, Instant at) {
    return unlimited() ? Long.MAX_VALUE : Math.max(0, perDay - used(workspaceId, at));
  }

  /** Counts {@code tokens} the model reported at {@code at}, within the commit that stores its answer. */
  public static void add(Tx tx, String workspaceId, String agentId, Instant at, long tokens) {
    if (tokens > 0) {
      TokenUsageDao dao = tx.dao(TokenUsageDao.class);
      dao.add(workspaceId, day(at), tokens);
      dao.addAgent(workspaceId, day(at), agentId, tokens);
    }
  }

  /** The workspace's tokens of each of the {@code days} UTC days up to the day of {@code now}, newest first (0 for none). */
  public List<TokenUsageDao.DayTokens> days(String workspaceId, Instant now, int days) {
    LocalDate today = day(now);
    Map<LocalDate, Long> used = new HashMap<>();
    jdbi.withExtension(TokenUsageDao.class, dao -> dao.days(workspaceId, today.minusDays(days - 1)))
        .forEach(d -> used.put(d.dayUtc(), d.tokens()));
    List<TokenUsageDao.DayTokens> out = new ArrayList<>();
    for (int i = 0; i < days; i++) {
      LocalDate day = today.minusDays(i);
      out.add(new TokenUsageDao.DayTokens(day, null, used.getOrDefault(day, 0L)));
    }
    return out;
  }

  /** Each agent's tokens of each UTC day of the {@code days} days up to the day of {@code now} (at most {@code limit} rows, the most first). */
  public List<TokenUsageDao.DayTokens> agentDays(String workspaceId, Instant now, int days, int limit) {
    return jdbi.withExtension(TokenUsageDao.class, dao -> dao.agentDays(workspaceId, day(now).minusDays(days - 1),
        limit));
  }

  /** Refuses to start an agent run when the workspace's tokens of the day are used up: 429 until UTC midnight. */
  public void requireRoom(String workspaceId, Instant now) {
    if (unlimited()) {
      return;
    }
    long used = used(workspaceId, now);
    if (used < perDay) {
      return;
    }
    Instant resets = resetsAt(now);
    long seconds = Math.max(1, (Duration.between(now, resets).toMillis() + 999) / 1000);
    Map<String, Object> extensions = new LinkedHashMap<>();
    extensions.put("tokens_used", used);
    extensions.put("tokens_per_day", perDay);
    extensions.put("resets_at", Json.time(resets));
    throw new DomainException(Kind.TOO_MANY, EXCEEDED, exhausted(used, resets), null,
        seconds, extensions);
  }

  /** What a refused start and a stopped run say. */
  public String exhausted(long used, Instant resets) {
    return "the workspace used " + used + " of its " + perDay + " tokens for today "
        + "(agents.workspace_tokens_per_day); agent runs may call the model again after "
        + Json.time(resets);
  }
}

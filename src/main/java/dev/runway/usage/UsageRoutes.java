package dev.runway.usage;

import dev.runway.core.Json;
import dev.runway.core.Time;
import dev.runway.http.AuthHandler;
import dev.runway.http.QueryParams;
import dev.runway.http.Responses;
import io.javalin.http.Context;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** GET /v1/usage: the tokens the caller's workspace used today, and its daily quota, and each agent's tokens of today. */
public final class UsageRoutes {
  /** The most agents GET /v1/usage lists, those that used the most first. */
  static final int MAX_AGENTS = 100;

  private final TokenQuota tokens;

  public UsageRoutes(TokenQuota tokens) {
    this.tokens = tokens;
  }

  public void get(Context ctx) {
    QueryParams.of(ctx, Set.of());
    String workspaceId = AuthHandler.principal(ctx).workspaceId();
    Instant now = Time.now();
    long used = tokens.used(workspaceId, now);
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("day", TokenQuota.day(now).toString());
    body.put("tokens_used", used);
    body.put("tokens_per_day", tokens.unlimited() ? null : tokens.perDay());
    body.put("tokens_remaining", tokens.unlimited() ? null : Math.max(0, tokens.perDay() - used));
    body.put("resets_at", Json.time(TokenQuota.resetsAt(now)));
    List<Map<String, Object>> agents = new ArrayList<>();
    for (TokenUsageDao.DayTokens d : tokens.agentDays(workspaceId, now, 1, MAX_AGENTS)) {
      Map<String, Object> agent = new LinkedHashMap<>();
      agent.put("agent", d.agentId());
      agent.put("tokens_used", d.tokens());
      agents.add(agent);
    }
    body.put("agents", agents);
    Responses.json(ctx, 200, body);
  }
}

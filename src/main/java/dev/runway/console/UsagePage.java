package dev.runway.console;

import dev.runway.core.Time;
import dev.runway.usage.TokenQuota;
import dev.runway.usage.TokenUsageDao;
import io.javalin.http.Context;
import java.time.Instant;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The console's usage page: the workspace's agent tokens of each of the last days against its daily
 * quota, and each agent's tokens of today, the last 7 days and the last 14, from the counts the
 * engine adds to in the commit that stores each model answer (token_usage, agent_token_usage).
 */
public final class UsagePage {
  static final int DAYS = 14;
  /** The most agent-day rows read: the agents that used the most come first. */
  private static final int AGENT_ROWS = 2000;

  private final ConsoleGuard guard;
  private final PageRenderer pages;
  private final TokenQuota tokens;

  public UsagePage(ConsoleGuard guard, PageRenderer pages, TokenQuota tokens) {
    this.guard = guard;
    this.pages = pages;
    this.tokens = tokens;
  }

  /** GET /console/usage. */
  public void show(Context ctx) {
    Optional<SignedIn> signed = guard.requireSignedIn(ctx);
    if (signed.isEmpty()) {
      return;
    }
    String workspace = signed.get().account().workspaceId();
    Instant now = Time.now();
    LocalDate today = TokenQuota.day(now);
    List<Views.UsageDay> days = new ArrayList<>();
    for (TokenUsageDao.DayTokens d : tokens.days(workspace, now, DAYS)) {
      days.add(new Views.UsageDay(d.dayUtc().toString(), d.tokens(), tokens.unlimited() ? null
          : (int) Math.min(100, (d.tokens() * 100 + tokens.perDay() - 1) / tokens.perDay())));
    }
    Map<String, long[]> byAgent = new LinkedHashMap<>();
    for (TokenUsageDao.DayTokens d : tokens.agentDays(workspace, now, DAYS, AGENT_ROWS)) {
      long[] sums = byAgent.computeIfAbsent(d.agentId(), a -> new long[3]);
      sums[0] += d.dayUtc().equals(today) ? d.tokens() : 0;
      sums[1] += d.dayUtc().isAfter(today.minusDays(7)) ? d.tokens() : 0;
      sums[2] += d.tokens();
    }
    List<Views.AgentUsage> agents = new ArrayList<>();
    byAgent.forEach((agent, sums) -> agents.add(new Views.AgentUsage(agent, sums[0], sums[1], sums[2])));
    agents.sort((a, b) -> Long.compare(b.fortnight(), a.fortnight()));
    pages.render(ctx, 200, "usage.jte", "frame", pages.frame("Usage", signed.get(), "usage"), "page",
        new Views.Usage(tokens.unlimited() ? null : tokens.perDay(), Views.time(TokenQuota.resetsAt(now)), days,
            agents));
  }
}

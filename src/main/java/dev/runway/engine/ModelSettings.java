package dev.runway.engine;

import dev.runway.agent.AllowedModels;
import dev.runway.config.Settings;
import dev.runway.run.AgentRunMachine;
import dev.runway.run.ThreadWindow;
import java.time.Duration;

/**
 * Where agent runs reach their model (agents.model.* in config/runway.properties): an
 * OpenAI-compatible Chat Completions endpoint, or the built-in sandbox model; and what tenants may
 * spend there: the model names they may ask for, and the tokens a workspace may use per UTC day
 * (0: no bound); and how many tool calls of one model answer a run makes at once; and how much of
 * a thread's past a run that continues it is given.
 */
public record ModelSettings(String baseUrl, String apiKey, Duration timeout, int maxRetries, Duration retryBase,
    int maxResponseBytes, AllowedModels allowed, long tokensPerWorkspacePerDay, int maxParallelToolCalls,
    ThreadWindow threadWindow) {
  public static final String SANDBOX = AgentRunMachine.SANDBOX;

  public static ModelSettings from(Settings s) {
    String url = s.string("agents.model.base_url").trim();
    if (url.endsWith("/")) {
      url = url.substring(0, url.length() - 1);
    }
    if (!url.equals(SANDBOX)) {
      java.net.URI uri;
      try {
        uri = java.net.URI.create(url);
      } catch (IllegalArgumentException e) {
        throw s.invalid("agents.model.base_url", "not a URL");
      }
      if (uri.getHost() == null || !("http".equals(uri.getScheme()) || "https".equals(uri.getScheme()))) {
        throw s.invalid("agents.model.base_url", "must be sandbox or an http(s) URL such as http://127.0.0.1:11434/v1");
      }
      if (uri.getUserInfo() != null) {
        // Runs show the endpoint that served them: a password in it would be shown to every API caller.
        throw s.invalid("agents.model.base_url", "must not hold credentials: put the key in agents.model.api_key");
      }
    }
    return new ModelSettings(url, s.string("agents.model.api_key"),
        Duration.ofMillis(s.integer("agents.model.timeout_ms", 100, 3_600_000)),
        s.integer("agents.model.max_retries", 0, 20),
        Duration.ofMillis(s.integer("agents.model.retry_base_ms", 1, 600_000)),
        s.integer("agents.model.max_response_bytes", 1024, 16 * 1024 * 1024),
        allowed(s),
        s.integer("agents.workspace_tokens_per_day", 0, Integer.MAX_VALUE),
        s.integer("agents.max_parallel_tool_calls", 1, 64),
        new ThreadWindow(s.integer("agents.thread_window_messages", 0, 10_000),
            s.integer("agents.thread_window_chars", 0, 10_000_000)));
  }

  private static AllowedModels allowed(Settings s) {
    AllowedModels allowed = AllowedModels.parse(s.string("agents.model.allowed"));
    for (String name : allowed.names()) {
      if (name.length() > 200) {
        throw s.invalid("agents.model.allowed", "a model name has at most 200 characters, as an agent's model");
      }
    }
    return allowed;
  }

  public boolean isSandbox() {
    return baseUrl.equals(SANDBOX);
  }

  /** The key is never shown: not in logs, not in toString. */
  @Override
  public String toString() {
    return "ModelSettings[" + baseUrl + "]";
  }
}

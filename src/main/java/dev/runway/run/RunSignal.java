package dev.runway.run;

import java.time.Instant;

/**
 * A signal sent to a run: its {@code body} (JSON text), how it came ({@code via}: api or url), and
 * when a wait step ({@code consumedStep}) took it; kept (consumedAt null) until one does.
 */
public record RunSignal(String id, String workspaceId, String runId, String name, String body, String via,
    Instant createdAt, Instant consumedAt, Integer consumedStep) {}

package dev.runway.run;

import java.time.Instant;

/** A thread of agent runs as stored: its workspace, id ({@code thr_…}), project and when its first run began. */
public record AgentThread(String workspaceId, String id, String project, Instant createdAt) {}

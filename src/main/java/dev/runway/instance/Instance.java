package dev.runway.instance;

import java.time.Instant;

/**
 * A Runway process serving the database, as registered: {@code stoppingAt} and {@code stoppedAt} are
 * null while it runs; {@code livenessLock} is the advisory lock it holds on PostgreSQL (null on H2).
 */
public record Instance(String id, String host, long pid, String version, Instant startedAt, Instant heartbeatAt,
    Instant stoppingAt, Instant stoppedAt, Long livenessLock) {}

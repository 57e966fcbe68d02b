package dev.runway.instance;

import java.time.Instant;

/** A Runway process serving the database, as registered: {@code stoppingAt} and {@code stoppedAt} are null while it runs. */
public record Instance(String id, String host, long pid, String version, Instant startedAt, Instant heartbeatAt,
    Instant stoppingAt, Instant stoppedAt) {}

package dev.runway.run;

import java.time.Instant;
import java.util.List;

/** Which runs a listing asks for; null fields do not filter. {@code projects} is the key's project limit. */
public record RunFilter(
    String kind,
    String workflow,
    String agent,
    String project,
    List<String> statuses,
    Instant createdAfter,
    Instant createdBefore,
    String startingAfter,
    List<String> projects,
    String parentRunId) {}

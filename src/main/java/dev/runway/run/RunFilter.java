package dev.runway.run;

import java.time.Instant;
import java.util.List;

/**
 * Which runs a listing asks for; null fields do not filter. {@code projects} is the key's project
 * limit. A {@code workflow} without a {@code parentRunId} leaves out the iterations of foreach and
 * parallel steps (child runs of a run of the same workflow): a workflow's runs are those started,
 * as a workflow step's child runs are; iterations are listed by their run's {@code parentRunId}.
 */
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

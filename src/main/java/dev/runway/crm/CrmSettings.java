package dev.runway.crm;

import dev.runway.config.Settings;
import java.time.Duration;

/** The crm.* settings: limits per record and workspace, and how long the change feed keeps changes. */
public record CrmSettings(int maxProperties, int maxValueBytes, int maxRecordBytes, int maxObjectTypes,
    Duration changesRetention) {
  /** Most records in one sync. */
  public static final int MAX_BATCH = 1000;
  /** Largest sync body, whatever http.max_body_bytes says for other requests. */
  public static final int MAX_SYNC_BODY_BYTES = 1024 * 1024;
  /**
   * Most characters of properties one sync may read and write: the records it touches as they were
   * and as they become (each write is copied into its change row). 1,000 records of 64 KiB would
   * be 64 MB read and 128 MB written in one transaction; such a sync is 413 sync_too_large.
   */
  public static final long MAX_SYNC_CHARS = 4L * 1024 * 1024;

  public static CrmSettings from(Settings s) {
    return new CrmSettings(
        s.integer("crm.max_properties", 1, 10_000),
        s.integer("crm.max_value_bytes", 16, MAX_SYNC_BODY_BYTES),
        s.integer("crm.max_record_bytes", 64, MAX_SYNC_BODY_BYTES),
        s.integer("crm.max_object_types", 1, 100_000),
        Duration.ofHours(s.integer("crm.changes_retention_hours", 1, 24 * 3650)));
  }
}

package dev.runway.crm;

import java.time.Instant;

/** One change of the feed as the API shows it; {@code cursor} resumes the feed right after it. */
public record ChangeView(String cursor, String change, String objectType, String externalId, int version,
    Instant changedAt, RecordView record) {

  public static ChangeView of(CrmChange c) {
    return new ChangeView(Long.toString(c.seq()), c.change(), c.objectType(), c.externalId(), c.version(), c.changedAt(),
        RecordView.of(c.record()));
  }
}

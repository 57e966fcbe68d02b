package dev.runway.crm;

import com.fasterxml.jackson.annotation.JsonRawValue;
import java.time.Instant;

/** A CRM record as the API shows it; the stored properties are written out as they are, not parsed again. */
public record RecordView(
    String objectType,
    String externalId,
    @JsonRawValue String properties,
    int version,
    boolean deleted,
    Instant sourceUpdatedAt,
    Instant createdAt,
    Instant updatedAt) {

  public static RecordView of(CrmRecord r) {
    return new RecordView(r.objectType(), r.externalId(), r.properties(), r.version(), r.deleted(), r.sourceUpdatedAt(),
        r.createdAt(), r.updatedAt());
  }
}

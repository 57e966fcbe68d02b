package dev.runway.crm;

import java.time.Instant;

/** An object type as GET /v1/crm/objects shows it: live records and tombstones counted apart. */
public record ObjectTypeView(String objectType, long records, long deletedRecords, Instant createdAt,
    Instant updatedAt) {

  public static ObjectTypeView of(CrmObjectType t) {
    return new ObjectTypeView(t.objectType(), t.liveRecords(), t.deletedRecords(), t.createdAt(), t.updatedAt());
  }
}

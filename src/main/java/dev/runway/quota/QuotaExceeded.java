package dev.runway.quota;

import dev.runway.core.DomainException;
import java.util.LinkedHashMap;
import java.util.Map;

/** A create (or start) past a workspace's quota: 403, or 429 with Retry-After for a rate, naming the quota. */
public final class QuotaExceeded extends DomainException {
  QuotaExceeded(Quota quota, long limit, String detail, long retryAfterSeconds) {
    super(retryAfterSeconds > 0 ? Kind.TOO_MANY : Kind.FORBIDDEN, "quota_exceeded", detail, null, retryAfterSeconds,
        members(quota, limit));
  }

  private static Map<String, Object> members(Quota quota, long limit) {
    Map<String, Object> members = new LinkedHashMap<>();
    members.put("quota", quota.wireName());
    members.put("limit", limit);
    return members;
  }
}

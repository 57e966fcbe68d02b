package dev.runway.quota;

import dev.runway.http.ApiException;
import java.util.LinkedHashMap;
import java.util.Map;

/** A create (or start) past a workspace's quota: 403, or 429 with Retry-After for a rate, naming the quota. */
public final class QuotaExceeded extends ApiException {
  QuotaExceeded(Quota quota, long limit, String detail, Map<String, String> headers) {
    super(headers.containsKey("Retry-After") ? 429 : 403, "quota_exceeded", detail, null, headers,
        members(quota, limit));
  }

  private static Map<String, Object> members(Quota quota, long limit) {
    Map<String, Object> members = new LinkedHashMap<>();
    members.put("quota", quota.wireName());
    members.put("limit", limit);
    return members;
  }
}

package dev.runway.http;

import dev.runway.core.DomainException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A refusal of the HTTP layer itself (a missing key, a body it cannot read, too many requests in
 * flight), which may carry headers of its own, such as WWW-Authenticate.
 */
public class ApiException extends DomainException {
  private final Map<String, String> headers;

  /** A Retry-After among {@code headers} becomes the refusal's retry-after; the others are sent as they are. */
  public ApiException(int status, String code, String detail, String param, Map<String, String> headers) {
    super(kindOf(status), code, detail, param, retryAfter(headers), Map.of());
    Map<String, String> others = new LinkedHashMap<>(headers);
    others.remove("Retry-After");
    this.headers = Map.copyOf(others);
  }

  public ApiException(int status, String code, String detail, String param) {
    this(status, code, detail, param, Map.of());
  }

  public ApiException(int status, String code, String detail) {
    this(status, code, detail, null, Map.of());
  }

  public int status() {
    return ErrorMapper.status(kind());
  }

  /** Headers of its own besides Retry-After (see {@link #retryAfterSeconds}). */
  public Map<String, String> headers() {
    return headers;
  }

  private static long retryAfter(Map<String, String> headers) {
    String value = headers.get("Retry-After");
    return value == null ? 0 : Long.parseLong(value);
  }

  private static Kind kindOf(int status) {
    for (Kind kind : Kind.values()) {
      if (ErrorMapper.status(kind) == status) {
        return kind;
      }
    }
    throw new IllegalArgumentException("no kind of refusal answers " + status);
  }
}

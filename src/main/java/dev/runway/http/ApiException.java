package dev.runway.http;

import java.util.Map;

/** A request Runway refuses: becomes an RFC 9457 problem body with a stable {@code code}. */
public class ApiException extends RuntimeException {
  private final int status;
  private final String code;
  private final String param;
  private final Map<String, String> headers;
  private final Map<String, Object> extensions;

  public ApiException(int status, String code, String detail, String param, Map<String, String> headers,
      Map<String, Object> extensions) {
    super(detail, null, false, false);
    this.status = status;
    this.code = code;
    this.param = param;
    this.headers = headers;
    this.extensions = extensions;
  }

  public ApiException(int status, String code, String detail, String param, Map<String, String> headers) {
    this(status, code, detail, param, headers, Map.of());
  }

  public ApiException(int status, String code, String detail, String param) {
    this(status, code, detail, param, Map.of());
  }

  public ApiException(int status, String code, String detail) {
    this(status, code, detail, null, Map.of());
  }

  public static ApiException validation(String param, String detail) {
    return new ApiException(400, "validation_failed", detail, param);
  }

  public static ApiException notFound(String code, String detail) {
    return new ApiException(404, code, detail);
  }

  public int status() {
    return status;
  }

  public String code() {
    return code;
  }

  public String param() {
    return param;
  }

  public Map<String, String> headers() {
    return headers;
  }

  /** Extra members of the problem body, e.g. current_status on a 409. */
  public Map<String, Object> extensions() {
    return extensions;
  }
}

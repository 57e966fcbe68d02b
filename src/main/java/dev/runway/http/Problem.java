package dev.runway.http;

import dev.runway.core.DomainException;
import java.util.LinkedHashMap;
import java.util.Map;

/** The error body: RFC 9457 problem details plus Runway's {@code code}, {@code param}, {@code request_id}. */
public final class Problem {
  private Problem() {}

  /** The body, members in a stable order; {@code extensions} (e.g. current_status) go before request_id. */
  public static Map<String, Object> body(int status, String code, String detail, String param, String requestId,
      Map<String, Object> extensions) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("type", "https://runway.dev/errors/" + code);
    body.put("status", status);
    body.put("title", title(status));
    body.put("code", code);
    body.put("detail", detail);
    if (param != null) {
      body.put("param", param);
    }
    body.putAll(extensions);
    body.put("request_id", requestId);
    return body;
  }

  /** The problem a refusal makes, without a request id: for errors inside a body, e.g. one record's of a batch. */
  public static Map<String, Object> of(DomainException e) {
    Map<String, Object> body = body(ErrorMapper.status(e.kind()), e.code(), e.getMessage(), e.param(), null,
        e.extensions());
    body.remove("request_id");
    return body;
  }

  static String title(int status) {
    return switch (status) {
      case 400 -> "Bad Request";
      case 401 -> "Unauthorized";
      case 403 -> "Forbidden";
      case 404 -> "Not Found";
      case 405 -> "Method Not Allowed";
      case 408 -> "Request Timeout";
      case 409 -> "Conflict";
      case 413 -> "Content Too Large";
      case 415 -> "Unsupported Media Type";
      case 422 -> "Unprocessable Content";
      case 429 -> "Too Many Requests";
      case 431 -> "Request Header Fields Too Large";
      case 503 -> "Service Unavailable";
      default -> status >= 500 ? "Internal Server Error" : "Error";
    };
  }
}

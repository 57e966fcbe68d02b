package dev.runway.http;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;

/** The error body (RFC 9457 problem details plus Runway's {@code code}, {@code param}, {@code request_id}). */
@JsonPropertyOrder({"type", "status", "title", "code", "detail", "param", "request_id"})
public record Problem(
    String type,
    int status,
    String title,
    String code,
    String detail,
    @JsonInclude(JsonInclude.Include.NON_NULL) String param,
    String requestId) {

  public static Problem of(int status, String code, String detail, String param, String requestId) {
    return new Problem("https://runway.dev/errors/" + code, status, title(status), code, detail, param, requestId);
  }

  static String title(int status) {
    return switch (status) {
      case 400 -> "Bad Request";
      case 401 -> "Unauthorized";
      case 403 -> "Forbidden";
      case 404 -> "Not Found";
      case 405 -> "Method Not Allowed";
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

package dev.runway.support;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;

/** Assertions on problem+json error responses. */
public final class Problems {
  private Problems() {}

  /** Checks status, code, content type, that the body repeats the Request-Id header, the headers every response carries; returns the body. */
  public static JsonNode assertProblem(Http.Reply reply, int status, String code) {
    assertEquals(status, reply.status(), () -> "status of " + reply);
    String type = reply.header("Content-Type");
    assertNotNull(type, "Content-Type");
    assertTrue(type.startsWith("application/problem+json"), () -> "content type " + type);
    JsonNode body = reply.json();
    assertEquals(code, body.path("code").asText(), () -> "code of " + reply);
    assertEquals(status, body.path("status").asInt());
    assertFalse(body.path("detail").asText().isBlank(), "detail is present");
    String requestId = reply.header("Request-Id");
    assertNotNull(requestId, "Request-Id header");
    assertTrue(requestId.startsWith("req_"), requestId);
    assertEquals(requestId, body.path("request_id").asText(), "body repeats the Request-Id header");
    assertEquals("no-store", reply.header("Cache-Control"), () -> "Cache-Control of " + reply);
    assertEquals("nosniff", reply.header("X-Content-Type-Options"), () -> "X-Content-Type-Options of " + reply);
    return body;
  }

  public static JsonNode assertProblem(Http.Reply reply, int status, String code, String param) {
    JsonNode body = assertProblem(reply, status, code);
    assertEquals(param, body.path("param").asText(), () -> "param of " + reply);
    return body;
  }
}

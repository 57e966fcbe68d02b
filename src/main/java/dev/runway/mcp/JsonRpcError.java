package dev.runway.mcp;

import com.fasterxml.jackson.databind.JsonNode;

/** A JSON-RPC error to answer a request with: its code, message and optional data. */
final class JsonRpcError extends RuntimeException {
  static final int PARSE_ERROR = -32700;
  static final int INVALID_REQUEST = -32600;
  static final int METHOD_NOT_FOUND = -32601;
  static final int INVALID_PARAMS = -32602;
  /** Runway refused the call as its API would (data.code, data.status say how): a scope, a project, a quota. */
  static final int REFUSED = -32000;

  final int code;
  final transient JsonNode data;

  JsonRpcError(int code, String message, JsonNode data) {
    super(message, null, false, false);
    this.code = code;
    this.data = data;
  }

  static JsonRpcError invalidParams(String message) {
    return new JsonRpcError(INVALID_PARAMS, message, null);
  }

  static JsonRpcError invalidRequest(String message) {
    return new JsonRpcError(INVALID_REQUEST, message, null);
  }
}

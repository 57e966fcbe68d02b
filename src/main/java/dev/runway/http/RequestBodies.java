package dev.runway.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.DomainException;
import dev.runway.core.Json;
import io.javalin.http.Context;
import java.io.IOException;
import java.io.InputStream;
import java.util.Locale;

/** Reads a request body as one JSON object, within the size limit, or refuses it with the right problem. */
public final class RequestBodies {
  private final int maxBytes;

  public RequestBodies(int maxBytes) {
    this.maxBytes = maxBytes;
  }

  /** The body as a JSON object; an empty body is refused (the endpoint needs one). */
  public ObjectNode requiredObject(Context ctx) {
    byte[] bytes = read(ctx, true);
    return parseObject(bytes);
  }

  /**
   * The body as a JSON object whose array field {@code countedArray} holds at most {@code maxElements}
   * elements: counted before the tree is built, so a body of many tiny elements is refused (400
   * naming the field) without the memory its tree would take.
   */
  public ObjectNode requiredObject(Context ctx, String countedArray, int maxElements, String tooMany) {
    return parseObject(read(ctx, true), countedArray, maxElements, tooMany);
  }

  /** The body's bytes, unparsed (for a protocol with errors of its own: JSON-RPC's parse error). */
  public byte[] requiredBytes(Context ctx) {
    return read(ctx, true);
  }

  /** The body as a JSON object, or an empty object when there is no body. */
  public ObjectNode optionalObject(Context ctx) {
    return parseOptionalObject(read(ctx, false));
  }

  /** The body as any JSON value (an object, an array, text, a number, true, false, null); no body is null. */
  public JsonNode anyValue(Context ctx) {
    byte[] bytes = read(ctx, false);
    if (bytes.length == 0) {
      return com.fasterxml.jackson.databind.node.NullNode.getInstance();
    }
    JsonNode node;
    try {
      node = Json.parseUntrusted(bytes, null, Integer.MAX_VALUE);
    } catch (Json.TooMany e) {
      throw new ApiException(413, "body_too_large", "the request body " + e.getMessage() + "; send fewer in one request");
    } catch (Json.InvalidJson e) {
      throw new ApiException(400, "invalid_json", "the request body " + e.getMessage(), e.path());
    }
    return node == null ? com.fasterxml.jackson.databind.node.NullNode.getInstance() : node;
  }

  private byte[] read(Context ctx, boolean required) {
    String contentType = ctx.header("Content-Type");
    long declared = ctx.req().getContentLengthLong();
    boolean chunked = ctx.header("Transfer-Encoding") != null;
    boolean hasBody = declared > 0 || chunked;
    if (contentType == null) {
      if (required || hasBody) {
        throw new ApiException(415, "unsupported_media_type", "Content-Type must be application/json");
      }
      return new byte[0];
    }
    if (!isJson(contentType)) {
      throw new ApiException(415, "unsupported_media_type",
          "Content-Type must be application/json, not " + contentType);
    }
    if (declared > maxBytes) {
      throw tooLarge();
    }
    try (InputStream in = ctx.req().getInputStream()) {
      if (declared >= 0 && !chunked) {
        // The usual case: exactly the declared length, without the growing buffers of readNBytes(max).
        byte[] bytes = new byte[(int) declared];
        if (in.readNBytes(bytes, 0, bytes.length) < bytes.length) {
          throw new ApiException(400, "invalid_json", "the request body ended before its Content-Length");
        }
        return bytes;
      }
      byte[] bytes = in.readNBytes(maxBytes + 1);
      if (bytes.length > maxBytes) {
        throw tooLarge();
      }
      return bytes;
    } catch (IOException e) {
      throw new ApiException(400, "invalid_json", "the request body could not be read");
    }
  }

  private ApiException tooLarge() {
    return new ApiException(413, "body_too_large", "the request body is larger than " + maxBytes + " bytes");
  }

  static boolean isJson(String contentType) {
    String type = contentType.split(";", 2)[0].trim().toLowerCase(Locale.ROOT);
    if (!type.equals("application/json")) {
      return false;
    }
    int at = contentType.toLowerCase(Locale.ROOT).indexOf("charset=");
    if (at < 0) {
      return true;
    }
    String charset = contentType.substring(at + 8).split(";", 2)[0].trim().replace("\"", "");
    return charset.equalsIgnoreCase("utf-8");
  }

  /** Bytes of an optional body as a JSON object: none is an empty object. Public for the fuzz tests. */
  public static ObjectNode parseOptionalObject(byte[] bytes) {
    if (bytes.length == 0) {
      return Json.MAPPER.createObjectNode();
    }
    return parseObject(bytes);
  }

  /** Bytes of a body as one JSON object, or a 400 invalid_json. Public for the fuzz tests. */
  public static ObjectNode parseObject(byte[] bytes) {
    return parseObject(bytes, null, Integer.MAX_VALUE, null);
  }

  /** As {@link #parseObject(byte[])}, refusing an array field of more than {@code maxElements} with {@code tooMany}. */
  public static ObjectNode parseObject(byte[] bytes, String countedArray, int maxElements, String tooMany) {
    JsonNode node;
    try {
      node = Json.parseUntrusted(bytes, countedArray, maxElements);
    } catch (Json.TooMany e) {
      if (e.path() != null) {
        throw DomainException.invalid(e.path(), tooMany);
      }
      throw new ApiException(413, "body_too_large", "the request body " + e.getMessage()
          + "; send fewer in one request");
    } catch (Json.InvalidJson e) {
      throw new ApiException(400, "invalid_json", "the request body " + e.getMessage(), e.path());
    }
    if (node == null) {
      throw new ApiException(400, "invalid_json", "the request body is empty; send a JSON object");
    }
    if (!node.isObject()) {
      throw new ApiException(400, "invalid_json", "the request body must be a JSON object, not " + Json.kindOf(node));
    }
    return (ObjectNode) node;
  }
}

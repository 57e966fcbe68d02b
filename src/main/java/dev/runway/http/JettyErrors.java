package dev.runway.http;

import dev.runway.core.Ids;
import dev.runway.core.Json;
import java.nio.ByteBuffer;
import org.eclipse.jetty.http.HttpField;
import org.eclipse.jetty.http.HttpFields;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.handler.ErrorHandler;
import org.eclipse.jetty.util.Callback;

/** Makes the errors Jetty answers before Javalin sees a request problem+json too, never an HTML page. */
public final class JettyErrors extends ErrorHandler {
  /** Every method gets its problem body: Jetty writes one only for GET, POST and HEAD by default (a PUT over the size limit got an empty 413). */
  @Override
  public boolean errorPageForMethod(String method) {
    return true;
  }

  @Override
  protected void generateResponse(Request request, Response response, int code, String message, Throwable cause,
      Callback callback) {
    String requestId = Ids.newId("req");
    response.getHeaders().put(HttpHeader.CONTENT_TYPE, Responses.PROBLEM_JSON);
    response.getHeaders().put(RequestIds.HEADER, requestId);
    response.getHeaders().put(HttpHeader.CACHE_CONTROL, Responses.CACHE_CONTROL);
    response.getHeaders().put("X-Content-Type-Options", Responses.CONTENT_TYPE_OPTIONS);
    byte[] body = Responses.withNewline(Json.bytes(ErrorMapper.bareProblem(code, message, requestId)));
    response.write(true, ByteBuffer.wrap(body), callback);
  }

  @Override
  public ByteBuffer badMessageError(int status, String reason, HttpFields.Mutable fields) {
    String requestId = Ids.newId("req");
    fields.put(new HttpField(HttpHeader.CONTENT_TYPE, Responses.PROBLEM_JSON));
    fields.put(RequestIds.HEADER, requestId);
    fields.put(HttpHeader.CACHE_CONTROL, Responses.CACHE_CONTROL);
    fields.put("X-Content-Type-Options", Responses.CONTENT_TYPE_OPTIONS);
    return ByteBuffer.wrap(Responses.withNewline(Json.bytes(ErrorMapper.bareProblem(status, reason, requestId))));
  }
}

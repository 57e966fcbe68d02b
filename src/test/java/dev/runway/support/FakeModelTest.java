package dev.runway.support;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Json;
import dev.runway.support.FakeModel.Reply;
import dev.runway.support.FakeModel.ToolCall;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class FakeModelTest {
  private static final HttpClient CLIENT = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  private static HttpRequest request(String url, String body) {
    return HttpRequest.newBuilder(URI.create(url))
        .header("Authorization", "Bearer sk-test")
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body))
        .build();
  }

  private static HttpResponse<String> post(FakeModel model, String body) throws Exception {
    return CLIENT.send(request(model.baseUrl() + "/chat/completions", body), HttpResponse.BodyHandlers.ofString());
  }

  private static String chat(String model, String user) {
    return "{\"model\":\"" + model + "\",\"messages\":[{\"role\":\"user\",\"content\":\"" + user + "\"}]}";
  }

  @Test
  void aTextReplyHasTheChatCompletionsWireShape() throws Exception {
    try (FakeModel model = FakeModel.start()) {
      model.script(Reply.text("Hello"));
      HttpResponse<String> response = post(model, chat("gpt-test", "Hi"));

      assertEquals(200, response.statusCode());
      assertEquals("application/json", response.headers().firstValue("Content-Type").orElseThrow());
      JsonNode body = Json.tree(response.body());
      assertEquals("chatcmpl-1", body.get("id").asText());
      assertEquals("chat.completion", body.get("object").asText());
      assertTrue(body.get("created").isIntegralNumber());
      assertEquals("gpt-test", body.get("model").asText(), "echoes the request's model");
      assertEquals(1, body.get("choices").size());
      JsonNode choice = body.get("choices").get(0);
      assertEquals(0, choice.get("index").asInt());
      assertEquals("stop", choice.get("finish_reason").asText());
      assertTrue(choice.get("logprobs").isNull());
      JsonNode message = choice.get("message");
      assertEquals("assistant", message.get("role").asText());
      assertEquals("Hello", message.get("content").asText());
      assertTrue(message.get("refusal").isNull());
      assertFalse(message.has("tool_calls"), "a text reply has no tool_calls field");
      JsonNode usage = body.get("usage");
      assertEquals(10, usage.get("prompt_tokens").asInt());
      assertEquals(5, usage.get("completion_tokens").asInt());
      assertEquals(15, usage.get("total_tokens").asInt());
    }
  }

  @Test
  void toolCallsKeepArgumentsAsAString() throws Exception {
    try (FakeModel model = FakeModel.start()) {
      model.script(Reply.toolCalls(ToolCall.of("call_a", "lookup", Map.of("email", "ada@example.com")),
          new ToolCall("call_b", "lookup", "{\"email\": ")).usage(7, 3));
      JsonNode body = Json.tree(post(model, chat("m", "find Ada")).body());

      JsonNode choice = body.get("choices").get(0);
      assertEquals("tool_calls", choice.get("finish_reason").asText());
      assertTrue(choice.get("message").get("content").isNull());
      JsonNode calls = choice.get("message").get("tool_calls");
      assertEquals(2, calls.size());
      JsonNode first = calls.get(0);
      assertEquals("call_a", first.get("id").asText());
      assertEquals("function", first.get("type").asText());
      assertEquals("lookup", first.get("function").get("name").asText());
      assertTrue(first.get("function").get("arguments").isTextual(), "arguments is a JSON string");
      assertEquals(Json.tree("{\"email\":\"ada@example.com\"}"),
          Json.tree(first.get("function").get("arguments").asText()));
      assertEquals("{\"email\": ", calls.get(1).get("function").get("arguments").asText(), "invalid JSON kept as is");
      assertEquals(7, body.get("usage").get("prompt_tokens").asInt());
      assertEquals(3, body.get("usage").get("completion_tokens").asInt());
      assertEquals(10, body.get("usage").get("total_tokens").asInt());
    }
  }

  @Test
  void repliesComeInOrderThenTheLastRepeats() throws Exception {
    try (FakeModel model = FakeModel.start()) {
      assertEquals("ok", content(post(model, chat("m", "x"))), "nothing scripted: ok");
      model.script(Reply.text("one"), Reply.text("two"));
      assertEquals("one", content(post(model, chat("m", "x"))));
      assertEquals("two", content(post(model, chat("m", "x"))));
      assertEquals("two", content(post(model, chat("m", "x"))));
      model.script(Reply.text("three"));
      assertEquals("three", content(post(model, chat("m", "x"))));
      assertEquals(5, model.requestCount());

      HttpResponse<String> missing = CLIENT.send(request(model.baseUrl() + "/completions", "{}"),
          HttpResponse.BodyHandlers.ofString());
      assertEquals(404, missing.statusCode());
      assertEquals("invalid_request_error", Json.tree(missing.body()).get("error").get("type").asText());
      assertEquals(5, model.requestCount(), "only completion requests are recorded");
    }
  }

  @Test
  void errorsCarryRetryAfterAndRawBodiesAreSentAsIs() throws Exception {
    try (FakeModel model = FakeModel.start()) {
      model.script(Reply.status(429, "Rate limit reached").retryAfter("2"), Reply.status(503, "overloaded"),
          Reply.raw(502, "<html>Bad gateway</html>"));

      HttpResponse<String> limited = post(model, chat("m", "x"));
      assertEquals(429, limited.statusCode());
      assertEquals("2", limited.headers().firstValue("Retry-After").orElseThrow());
      assertEquals("application/json", limited.headers().firstValue("Content-Type").orElseThrow());
      JsonNode error = Json.tree(limited.body()).get("error");
      assertEquals("Rate limit reached", error.get("message").asText());
      assertEquals("rate_limit_exceeded", error.get("code").asText());

      HttpResponse<String> overloaded = post(model, chat("m", "x"));
      assertEquals(503, overloaded.statusCode());
      assertFalse(overloaded.headers().firstValue("Retry-After").isPresent());
      JsonNode error503 = Json.tree(overloaded.body()).get("error");
      assertEquals("server_error", error503.get("type").asText());
      assertTrue(error503.get("code").isNull());

      HttpResponse<String> raw = post(model, chat("m", "x"));
      assertEquals(502, raw.statusCode());
      assertEquals("<html>Bad gateway</html>", raw.body());
    }
  }

  @Test
  void aResponderSeesTheRequestAndRequestsAreRecordedWithHeaders() throws Exception {
    try (FakeModel model = FakeModel.start()) {
      model.script(Reply.text("from the queue"));
      model.respondWith(request -> Reply.text("you said " + request.get("messages").get(0).get("content").asText()));

      assertEquals("you said hello", content(post(model, chat("m", "hello"))));

      FakeModel.Request request = model.lastRequest();
      assertEquals("Bearer sk-test", request.headers().get("Authorization"));
      assertEquals("Bearer sk-test", request.headers().get("authorization"), "header names ignore case");
      assertEquals("m", request.body().get("model").asText());
      assertEquals(List.of(request), model.requests());
    }
  }

  @Test
  void delayedRepliesAreAnsweredConcurrently() throws Exception {
    try (FakeModel model = FakeModel.start()) {
      model.script(Reply.text("slow").after(Duration.ofMillis(500)));
      List<CompletableFuture<HttpResponse<String>>> pending = new ArrayList<>();
      for (int i = 0; i < 5; i++) {
        pending.add(CLIENT.sendAsync(request(model.baseUrl() + "/chat/completions", chat("m", "x")),
            HttpResponse.BodyHandlers.ofString()));
      }
      for (CompletableFuture<HttpResponse<String>> response : pending) {
        assertEquals("slow", content(response.get()));
      }
      assertEquals(5, model.peakConcurrency());
    }
  }

  private static String content(HttpResponse<String> response) {
    assertEquals(200, response.statusCode(), response.body());
    return Json.tree(response.body()).get("choices").get(0).get("message").get("content").asText();
  }
}

package dev.runway.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The reading of a streamed Chat Completions answer, whatever way its bytes are cut. */
class ChatStreamTest {
  private static final String STREAM = String.join("", List.of(
      ": keep-alive\r\n\r\n",
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}],\"usage\":null}\r\n\r\n",
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Grüße, \"},\"finish_reason\":null}],\"usage\":null}\n\n",
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"日本\"},\"finish_reason\":null}],\"usage\":null}\n\n",
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_9\",\"type\":\"function\","
          + "\"function\":{\"name\":\"lookup\",\"arguments\":\"\"}}]},\"finish_reason\":null}],\"usage\":null}\n\n",
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"q\\\":\"}}]},"
          + "\"finish_reason\":null}],\"usage\":null}\n\n",
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"1}\"}}]},"
          + "\"finish_reason\":null}],\"usage\":null}\n\n",
      "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}],\"usage\":null}\n\n",
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3,\"total_tokens\":10}}\n\n",
      "data: [DONE]\n\n"));

  @Test
  void a_stream_cut_at_every_byte_gives_the_whole_answer_and_its_text_in_pieces() {
    byte[] bytes = STREAM.getBytes(StandardCharsets.UTF_8);
    for (int size : new int[] {1, 2, 3, 7, 64, bytes.length}) {
      List<String> pieces = new ArrayList<>();
      ChatStream stream = new ChatStream(pieces::add, 10_000, null);
      for (int i = 0; i < bytes.length; i += size) {
        assertTrue(stream.take(ByteBuffer.wrap(bytes, i, Math.min(size, bytes.length - i))));
      }
      ModelOutcome.Answer answer = assertInstanceOf(ModelOutcome.Answer.class, stream.outcome());
      assertEquals(List.of("Grüße, ", "日本"), pieces, "cut every " + size + " bytes");
      assertEquals("Grüße, 日本", answer.content());
      assertEquals(List.of(new ModelOutcome.ToolCall("call_9", "lookup", "{\"q\":1}")), answer.toolCalls());
      assertEquals("tool_calls", answer.finishReason());
      assertEquals(10, answer.totalTokens());
      assertEquals(7, answer.promptTokens());
    }
  }

  @Test
  void a_stream_without_its_end_or_with_an_error_is_a_retryable_failure() {
    String head = STREAM.substring(0, STREAM.indexOf("data: {\"choices\":[{\"index\":0,\"delta\":{},"));
    ChatStream broken = new ChatStream(p -> { }, 10_000, null);
    broken.take(ByteBuffer.wrap(head.getBytes(StandardCharsets.UTF_8)));
    ModelOutcome.Failure failure = assertInstanceOf(ModelOutcome.Failure.class, broken.outcome());
    assertTrue(failure.retryable() && failure.message().contains("broke off"), failure::toString);

    ChatStream error = new ChatStream(p -> { }, 10_000, null);
    assertFalse(error.take(ByteBuffer.wrap("data: {\"error\":{\"message\":\"overloaded\"}}\n\n"
        .getBytes(StandardCharsets.UTF_8))));
    failure = assertInstanceOf(ModelOutcome.Failure.class, error.outcome());
    assertTrue(failure.retryable() && failure.message().contains("overloaded"), failure::toString);
  }

  @Test
  void an_endless_line_stops_the_stream() {
    ChatStream stream = new ChatStream(p -> { }, 10, null);
    byte[] line = new byte[70_000];
    java.util.Arrays.fill(line, (byte) 'x');
    assertFalse(stream.take(ByteBuffer.wrap(line)));
    ModelOutcome.Failure failure = assertInstanceOf(ModelOutcome.Failure.class, stream.outcome());
    assertTrue(failure.message().contains("longer than"), failure::toString);
  }

  @Test
  void an_answer_past_the_size_limit_stops_the_stream_and_is_not_retried() {
    ChatStream stream = new ChatStream(p -> { }, 5, null);
    assertFalse(stream.take(ByteBuffer.wrap(STREAM.getBytes(StandardCharsets.UTF_8))));
    ModelOutcome.Failure failure = assertInstanceOf(ModelOutcome.Failure.class, stream.outcome());
    assertFalse(failure.retryable());
    assertTrue(failure.message().contains("max_response_bytes"), failure::toString);
  }
}

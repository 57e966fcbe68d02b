package dev.runway.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.runway.core.Json;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What McpClient reads from an answer: the events of an SSE stream, and a tools/call result for the model. */
class McpClientTest {

  @Test
  void sse_events_are_read_data_lines_joined_comments_and_other_fields_skipped() {
    String stream = ": keep-alive\n\nid: 1\nevent: message\ndata: {\"a\":\r\ndata: 1}\r\n\r\n"
        + "event: message\ndata:{\"b\":2}\n\ndata: {\"c\":3}";
    assertEquals(List.of("{\"a\":\n1}", "{\"b\":2}", "{\"c\":3}"), McpClient.sseData(stream));
    assertEquals(List.of(), McpClient.sseData(""));
  }

  @Test
  void a_result_is_its_text_items_joined_other_items_described_and_structured_content_when_it_says_more() {
    assertEquals("one\ntwo\n[image content, image/png, not shown]\n[resource link file:///a (a)]\ninside",
        McpClient.content(Json.tree("{\"content\":[{\"type\":\"text\",\"text\":\"one\"},{\"type\":\"text\",\"text\":\"two\"},"
            + "{\"type\":\"image\",\"data\":\"AAAA\",\"mimeType\":\"image/png\"},"
            + "{\"type\":\"resource_link\",\"uri\":\"file:///a\",\"name\":\"a\"},"
            + "{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///b\",\"text\":\"inside\"}}]}")));
    assertEquals("{\"n\":1}", McpClient.content(Json.tree("{\"content\":[],\"structuredContent\":{\"n\":1}}")));
    assertEquals("{\"n\": 1}", McpClient.content(Json.tree(
        "{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"n\\\": 1}\"}],\"structuredContent\":{\"n\":1}}")),
        "the same JSON as the text: not twice");
    assertEquals("n is one\n{\"n\":1}", McpClient.content(Json.tree(
        "{\"content\":[{\"type\":\"text\",\"text\":\"n is one\"}],\"structuredContent\":{\"n\":1}}")));
    assertEquals("(the MCP tool returned no content)", McpClient.content(Json.tree("{\"content\":[]}")));
  }
}

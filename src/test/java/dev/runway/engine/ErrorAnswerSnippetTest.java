package dev.runway.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** What a step's error keeps of an error answer's body. */
class ErrorAnswerSnippetTest {
  /** Python's http.server's error page, as it answers a POST it has no handler for. */
  private static final String PYTHON_501 = """
      <!DOCTYPE HTML>
      <html lang="en">
          <head>
              <meta charset="utf-8">
              <title>Error response</title>
          </head>
          <body>
              <h1>Error response</h1>
              <p>Error code: 501</p>
              <p>Message: Unsupported method (&#x27;POST&#x27;).</p>
              <p>Error code explanation: 501 - Server does not support this operation.</p>
          </body>
      </html>
      """;

  private static String snippet(String body) {
    return HttpStepCaller.snippet(body.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void an_html_error_page_is_reduced_to_its_visible_text() {
    assertEquals(": Error response Error code: 501 Message: Unsupported method ('POST'). Error code explanation: "
        + "501 - Server does not support this operation.", snippet(PYTHON_501));
  }

  @Test
  void scripts_styles_and_comments_of_a_page_are_left_out() {
    assertEquals(": Bad gateway a < b", snippet("<html><head><style>p{}</style></head><body><!-- x --><script>var a"
        + " = 1;</script><p>Bad   gateway</p>\n<p>a &lt; b</p></body></html>"));
  }

  @Test
  void plain_text_and_json_are_kept_as_they_are_with_whitespace_collapsed() {
    assertEquals(": {\"error\": \"no such <thing>\"}", snippet("{\"error\":   \"no such <thing>\"}\n"));
    assertEquals(": upstream timed out", snippet("upstream\n  timed out\n"));
    assertEquals("", snippet(""));
    assertEquals("", snippet("<html><body></body></html>"));
  }

  @Test
  void a_long_text_is_cut_to_its_first_characters() {
    String cut = snippet("<p>" + "word ".repeat(500) + "</p>");
    assertEquals(2 + HttpStepCaller.SNIPPET_CHARS + 1, cut.length(), cut);
    assertTrue(cut.startsWith(": word word") && cut.endsWith("…"), cut);
  }
}

package dev.runway.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import dev.runway.core.DomainException;
import dev.runway.core.Json;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class ToolSchemasTest {
  private static final String SCHEMA = "{\"type\":\"object\",\"properties\":{\"email\":{\"type\":\"string\","
      + "\"format\":\"email\"},\"count\":{\"type\":\"integer\",\"minimum\":1}},\"required\":[\"email\"],"
      + "\"additionalProperties\":false}";

  @Test
  void arguments_are_checked_against_the_schema_with_messages_for_the_model() {
    assertEquals(List.of(), ToolSchemas.violations(Json.tree(SCHEMA), Json.tree("{\"email\":\"a@example.com\",\"count\":2}")));
    List<String> wrong = ToolSchemas.violations(Json.tree(SCHEMA), Json.tree("{\"count\":0,\"extra\":true}"));
    assertEquals(3, wrong.size(), wrong::toString);
    assertTrue(wrong.stream().anyMatch(m -> m.contains("email")), wrong::toString);
    assertTrue(wrong.stream().anyMatch(m -> m.contains("count")), wrong::toString);
    assertTrue(wrong.stream().anyMatch(m -> m.contains("extra")), wrong::toString);
  }

  @Test
  void a_schema_that_refers_to_a_url_is_refused_without_fetching_it() throws Exception {
    AtomicInteger fetched = new AtomicInteger();
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 10);
    server.createContext("/", exchange -> {
      fetched.incrementAndGet();
      byte[] body = "{\"type\":\"string\"}".getBytes();
      exchange.sendResponseHeaders(200, body.length);
      exchange.getResponseBody().write(body);
      exchange.close();
    });
    server.start();
    try {
      String remote = "{\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"http://127.0.0.1:"
          + server.getAddress().getPort() + "/schema.json\"}}}";
      DomainException e = assertThrows(DomainException.class, () -> ToolSchemas.check(Json.tree(remote), "tools[0].parameters"));
      assertEquals("tools[0].parameters", e.param());
      assertEquals(0, fetched.get(), "the URL was not fetched");
      ToolSchemas.check(Json.tree("{\"type\":\"object\",\"$defs\":{\"e\":{\"type\":\"string\"}},"
          + "\"properties\":{\"a\":{\"$ref\":\"#/$defs/e\"}}}"), "p"); // a reference within the schema is fine
    } finally {
      server.stop(0);
    }
  }
}

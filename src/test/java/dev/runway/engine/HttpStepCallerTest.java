package dev.runway.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import dev.runway.core.Json;
import dev.runway.workflow.Step;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** One attempt of an http step, without a database: time-outs that cover the whole answer, and address checks. */
class HttpStepCallerTest {

  @Test
  void a_tool_that_sends_headers_then_stalls_the_body_is_cut_off_at_timeout_ms() throws Exception {
    HttpServer tool = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    tool.createContext("/", exchange -> {
      exchange.sendResponseHeaders(200, 100);
      OutputStream out = exchange.getResponseBody();
      out.write("{\"partial\":".getBytes());
      out.flush();
      try {
        Thread.sleep(5_000);
      } catch (InterruptedException ignored) {
        Thread.currentThread().interrupt();
      }
      exchange.close();
    });
    tool.start();
    try {
      Step.Http step = new Step.Http("http://127.0.0.1:" + tool.getAddress().getPort() + "/", "POST", Map.of(), 300, 1);
      long t0 = System.nanoTime();
      HttpStepCaller.Outcome outcome = new HttpStepCaller(true, 65536).call(step, Json.MAPPER.createObjectNode(), "run_x:0");
      long ms = (System.nanoTime() - t0) / 1_000_000;
      assertFalse(outcome.succeeded());
      assertTrue(outcome.retryable(), "a time-out is retried");
      assertTrue(outcome.message().contains("300 ms"), outcome.message());
      assertTrue(ms < 2_000, "cut off near the deadline, not after the tool's 5 s: " + ms + " ms");
    } finally {
      tool.stop(0);
    }
  }

  @Test
  void a_private_address_is_refused_without_calling_unless_allowed() {
    Step.Http step = new Step.Http("http://127.0.0.1:9/", "POST", Map.of(), 1000, 1);
    HttpStepCaller.Outcome refused = new HttpStepCaller(false, 65536).call(step, Json.MAPPER.createObjectNode(), "k");
    assertFalse(refused.succeeded());
    assertFalse(refused.retryable(), "refusal is final");
    assertTrue(refused.message().contains("allow_private_networks"), refused.message());
    assertEquals(null, refused.httpStatus());
  }

  @Test
  void every_special_purpose_address_is_refused_not_only_private_ones() {
    // the whole table is tested in SpecialAddressesTest; these show the caller asks it
    for (String host : new String[] {"198.18.0.1", "192.0.0.170", "[64:ff9b::7f00:1]", "[::7f00:1]", "[::ffff:10.0.0.1]"}) {
      Step.Http step = new Step.Http("http://" + host + ":9/", "POST", Map.of(), 1000, 1);
      HttpStepCaller.Outcome refused = new HttpStepCaller(false, 65536).call(step, Json.MAPPER.createObjectNode(), "k");
      assertFalse(refused.retryable(), host);
      assertTrue(refused.message().startsWith("refused to call"), refused.message());
    }
  }
}

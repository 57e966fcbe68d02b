package dev.runway.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import dev.runway.core.Json;
import dev.runway.outbound.OutboundHttp;
import dev.runway.workflow.Step;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * One attempt of an http step, without a database: time-outs that cover the whole answer, address
 * checks, and answers of every shape ending as an outcome the run can record.
 */
class HttpStepCallerTest {
  private final OutboundHttp open = new OutboundHttp(OutboundHttp.AddressPolicy.publicOnly(true), 10, 100, null);
  private final OutboundHttp strict = new OutboundHttp(OutboundHttp.AddressPolicy.publicOnly(false), 10, 100, null);
  private HttpServer tool;

  @AfterEach
  void close() {
    open.close();
    strict.close();
    if (tool != null) {
      tool.stop(0);
    }
  }

  private HttpStepCaller.Outcome call(OutboundHttp client, String url, int timeoutMs) throws Exception {
    Step.Http step = new Step.Http(url, "POST", Map.of(), timeoutMs, 1);
    return new HttpStepCaller(client, (workspace, names) -> Map.of(), 65536)
        .call("ws", step, Json.MAPPER.createObjectNode(), "run_x:0").get(10, TimeUnit.SECONDS);
  }

  /** A tool on 127.0.0.1 that answers every call with this status and body. */
  private String answering(int status, byte[] body) throws Exception {
    tool = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    tool.createContext("/", exchange -> {
      exchange.getRequestBody().readAllBytes();
      exchange.getResponseHeaders().set("Content-Type", "application/json");
      exchange.sendResponseHeaders(status, body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    });
    tool.start();
    return "http://127.0.0.1:" + tool.getAddress().getPort() + "/";
  }

  @Test
  void a_tool_that_sends_headers_then_stalls_the_body_is_cut_off_at_timeout_ms() throws Exception {
    tool = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
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
    long t0 = System.nanoTime();
    HttpStepCaller.Outcome outcome = call(open, "http://127.0.0.1:" + tool.getAddress().getPort() + "/", 300);
    long ms = (System.nanoTime() - t0) / 1_000_000;
    assertFalse(outcome.succeeded());
    assertTrue(outcome.retryable(), "a time-out is retried");
    assertTrue(outcome.message().contains("300 ms"), outcome.message());
    assertTrue(ms < 2_000, "cut off near the deadline, not after the tool's 5 s: " + ms + " ms");
  }

  @Test
  void a_private_address_is_refused_without_calling_and_the_refusal_names_no_address() throws Exception {
    String url = answering(200, "{}".getBytes(StandardCharsets.UTF_8));
    String viaName = url.replace("127.0.0.1", "localhost");
    HttpStepCaller.Outcome refused = call(strict, viaName, 1000);
    assertFalse(refused.succeeded());
    assertFalse(refused.retryable(), "refusal is final");
    assertNull(refused.httpStatus());
    assertTrue(refused.message().startsWith("refused to call localhost"), refused.message());
    assertTrue(refused.message().contains("allow_private_networks"), refused.message());
    assertFalse(refused.message().contains("127.0.0.1") || refused.message().contains("0:0:0:0:0:0:0:1")
        || refused.message().contains("::1"), () -> "names no resolved address: " + refused.message());
    assertTrue(call(open, viaName, 1000).succeeded(), "allowed when private networks are");
  }

  @Test
  void every_special_purpose_address_is_refused_not_only_private_ones() throws Exception {
    // the whole table is tested in SpecialAddressesTest; these show the caller asks it
    for (String host : new String[] {"198.18.0.1", "192.0.0.170", "[64:ff9b::7f00:1]", "[::7f00:1]", "[::ffff:10.0.0.1]"}) {
      HttpStepCaller.Outcome refused = call(strict, "http://" + host + ":9/", 1000);
      assertFalse(refused.retryable(), host);
      assertTrue(refused.message().startsWith("refused to call"), refused.message());
    }
  }

  @Test
  void json_nested_deeper_than_runway_keeps_fails_the_attempt_without_retry() throws Exception {
    String deep = "[".repeat(999) + "]".repeat(999);
    HttpStepCaller.Outcome outcome = call(open, answering(200, deep.getBytes(StandardCharsets.UTF_8)), 5000);
    assertFalse(outcome.succeeded());
    assertFalse(outcome.retryable(), "the tool would answer the same again");
    assertEquals(200, outcome.httpStatus());
    assertTrue(outcome.message().contains("cannot be kept") && outcome.message().contains("nested deeper than 100"),
        outcome.message());
  }

  @Test
  void a_number_no_type_holds_or_a_broken_string_fails_the_attempt() throws Exception {
    for (String body : new String[] {"[1e-2147483648]", "{\"a\":\"\\ud800\"}"}) {
      HttpStepCaller.Outcome outcome = call(open, answering(200, body.getBytes(StandardCharsets.UTF_8)), 5000);
      assertFalse(outcome.succeeded(), body);
      assertFalse(outcome.retryable(), body);
      assertTrue(outcome.message().contains("cannot be kept"), outcome.message());
      tool.stop(0);
    }
  }

  @Test
  void text_and_oversized_answers_succeed_without_being_kept() throws Exception {
    HttpStepCaller.Outcome text = call(open, answering(200, "hello, <b>world</b>".getBytes(StandardCharsets.UTF_8)), 5000);
    assertTrue(text.succeeded());
    assertNull(text.output());
    assertTrue(text.message().contains("not JSON, not kept"), text.message());
    tool.stop(0);
    byte[] big = ("[\"" + "x".repeat(70_000) + "\"]").getBytes(StandardCharsets.UTF_8);
    HttpStepCaller.Outcome large = call(open, answering(200, big), 5000);
    assertTrue(large.succeeded());
    assertNull(large.output());
    assertTrue(large.message().contains("over 65536 bytes not kept"), large.message());
    tool.stop(0);
    HttpStepCaller.Outcome kept = call(open, answering(201, "{\"ok\":true}".getBytes(StandardCharsets.UTF_8)), 5000);
    assertTrue(kept.succeeded());
    assertEquals(Json.tree("{\"ok\":true}"), kept.output());
  }
}

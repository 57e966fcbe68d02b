package dev.runway.outbound;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.eclipse.jetty.util.SocketAddressResolver;
import org.junit.jupiter.api.Test;

/**
 * The address check is tied to the connection: whatever a name resolves to from one moment to the
 * next, only an address the policy allows is ever connected to. Here 127.0.0.2 plays a public tool
 * and 127.0.0.1 the server's own network, both listening on one port; a name flips between them.
 */
class OutboundHttpTest {
  /** Allows 127.0.0.2 ("public"), refuses every other address. */
  private static final OutboundHttp.AddressPolicy ONLY_127_0_0_2 =
      address -> address.getHostAddress().equals("127.0.0.2");

  private record Tools(HttpServer publicTool, HttpServer internal, AtomicInteger publicCalls, AtomicInteger internalCalls,
      int port) implements AutoCloseable {
    @Override
    public void close() {
      publicTool.stop(0);
      internal.stop(0);
    }
  }

  private static Tools tools() throws Exception {
    AtomicInteger publicCalls = new AtomicInteger();
    AtomicInteger internalCalls = new AtomicInteger();
    HttpServer publicTool = server(new InetSocketAddress("127.0.0.2", 0), publicCalls);
    int port = publicTool.getAddress().getPort();
    HttpServer internal = server(new InetSocketAddress("127.0.0.1", port), internalCalls);
    return new Tools(publicTool, internal, publicCalls, internalCalls, port);
  }

  private static HttpServer server(InetSocketAddress at, AtomicInteger calls) throws Exception {
    HttpServer server = HttpServer.create(at, 100);
    server.createContext("/", exchange -> {
      calls.incrementAndGet();
      byte[] body = "{}".getBytes(StandardCharsets.UTF_8);
      exchange.getResponseHeaders().set("Connection", "close"); // every call opens (and resolves) anew
      exchange.sendResponseHeaders(200, body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    });
    server.start();
    return server;
  }

  /** A DNS that answers each lookup of a name with the next of its answers, round and round. */
  private static SocketAddressResolver rotating(List<List<String>> answers, AtomicInteger lookups) {
    return (host, port, context, promise) -> {
      List<String> answer = answers.get(lookups.getAndIncrement() % answers.size());
      try {
        List<InetSocketAddress> addresses = new java.util.ArrayList<>();
        for (String a : answer) {
          addresses.add(new InetSocketAddress(InetAddress.getByAddress(host, InetAddress.getByName(a).getAddress()), port));
        }
        promise.succeeded(addresses);
      } catch (Exception e) {
        promise.failed(e);
      }
    };
  }

  /** A server on loopback whose every answer is 200 with {@code bytes} bytes of "x". */
  private static HttpServer answering(int bytes) throws Exception {
    HttpServer big = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 10);
    big.createContext("/", exchange -> {
      byte[] body = "x".repeat(bytes).getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(200, body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      } catch (java.io.IOException cut) {
        // the client stopped reading
      }
    });
    big.start();
    return big;
  }

  private static OutboundHttp.Call call(String url) {
    return new OutboundHttp.Call("POST", URI.create(url), Map.of("Content-Type", "application/json"),
        "{}".getBytes(StandardCharsets.UTF_8), Duration.ofSeconds(5), 1024);
  }

  @Test
  void a_name_that_flips_between_a_public_and_an_internal_address_never_reaches_the_internal_one() throws Exception {
    AtomicInteger lookups = new AtomicInteger();
    try (Tools tools = tools();
         OutboundHttp http = new OutboundHttp(ONLY_127_0_0_2, 10, 1000,
             rotating(List.of(List.of("127.0.0.2"), List.of("127.0.0.1")), lookups))) {
      int answered = 0;
      int refused = 0;
      for (int i = 0; i < 300; i++) {
        CompletableFuture<OutboundHttp.Answer> sent = http.send(call("http://rebind.test:" + tools.port() + "/hook"));
        try {
          assertEquals(200, sent.get(10, TimeUnit.SECONDS).status());
          answered++;
        } catch (ExecutionException e) {
          OutboundHttp.NoAnswer none = (OutboundHttp.NoAnswer) e.getCause();
          assertEquals(OutboundHttp.Failure.REFUSED, none.failure(), none.getMessage());
          assertTrue(!none.getMessage().contains("127.0.0.1"), none.getMessage());
          refused++;
        }
      }
      System.out.printf("rebinding name: %d lookups, %d calls answered by the public tool, %d refused, %d reached 127.0.0.1%n",
          lookups.get(), answered, refused, tools.internalCalls().get());
      assertEquals(0, tools.internalCalls().get(), "no call reached the internal address");
      assertEquals(answered, tools.publicCalls().get());
      assertTrue(answered >= 100 && refused >= 100, "both answers came up: " + answered + " / " + refused);
    }
  }

  @Test
  void of_a_name_with_both_kinds_of_address_only_the_allowed_one_is_connected_to() throws Exception {
    AtomicInteger lookups = new AtomicInteger();
    try (Tools tools = tools();
         OutboundHttp http = new OutboundHttp(ONLY_127_0_0_2, 10, 1000,
             rotating(List.of(List.of("127.0.0.1", "127.0.0.2")), lookups))) {
      for (int i = 0; i < 20; i++) {
        assertEquals(200, http.send(call("http://mixed.test:" + tools.port() + "/")).get(10, TimeUnit.SECONDS).status());
      }
      assertEquals(0, tools.internalCalls().get());
      assertEquals(20, tools.publicCalls().get());
    }
  }

  @Test
  void redirects_are_not_followed() throws Exception {
    HttpServer redirecting = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 10);
    AtomicInteger targetCalls = new AtomicInteger();
    redirecting.createContext("/", exchange -> {
      if (exchange.getRequestURI().getPath().equals("/target")) {
        targetCalls.incrementAndGet();
      }
      exchange.getResponseHeaders().set("Location", "/target");
      exchange.sendResponseHeaders(302, -1);
      exchange.close();
    });
    redirecting.start();
    try (OutboundHttp http = new OutboundHttp(OutboundHttp.AddressPolicy.publicOnly(true), 10, 100, null)) {
      OutboundHttp.Answer answer = http.send(call("http://127.0.0.1:" + redirecting.getAddress().getPort() + "/start"))
          .get(10, TimeUnit.SECONDS);
      assertEquals(302, answer.status());
      assertEquals(0, targetCalls.get());
    } finally {
      redirecting.stop(0);
    }
  }

  @Test
  void an_answer_is_read_up_to_its_limit_and_no_further() throws Exception {
    HttpServer big = answering(5_000_000);
    try (OutboundHttp http = new OutboundHttp(OutboundHttp.AddressPolicy.publicOnly(true), 10, 100, null)) {
      OutboundHttp.Answer answer = http.send(call("http://127.0.0.1:" + big.getAddress().getPort() + "/"))
          .get(10, TimeUnit.SECONDS);
      assertEquals(200, answer.status());
      assertTrue(answer.cut());
      assertEquals(1024, answer.body().length);
    } finally {
      big.stop(0);
    }
  }

  @Test
  void an_answer_takes_memory_as_it_arrives_and_is_not_read_past_what_there_is_room_for() throws Exception {
    HttpServer big = answering(200_000);
    try (OutboundHttp http = new OutboundHttp(OutboundHttp.AddressPolicy.publicOnly(true), 10, 100, null)) {
      java.net.URI uri = java.net.URI.create("http://127.0.0.1:" + big.getAddress().getPort() + "/");
      java.util.List<Integer> asked = new java.util.concurrent.CopyOnWriteArrayList<>();
      OutboundHttp.Answer kept = http.send(new OutboundHttp.Call("GET", uri, java.util.Map.of(), null,
          java.time.Duration.ofSeconds(5), 1_000_000, bytes -> asked.add(bytes))).get(10, TimeUnit.SECONDS);
      assertEquals(200_000, kept.body().length);
      assertEquals(200_000, (int) asked.get(asked.size() - 1), "asked before each growth, up to the whole answer");
      java.util.concurrent.ExecutionException refused = org.junit.jupiter.api.Assertions.assertThrows(
          java.util.concurrent.ExecutionException.class, () -> http.send(new OutboundHttp.Call("GET", uri,
              java.util.Map.of(), null, java.time.Duration.ofSeconds(5), 1_000_000, bytes -> bytes <= 8192))
              .get(10, TimeUnit.SECONDS));
      assertEquals(OutboundHttp.Failure.NO_ROOM, ((OutboundHttp.NoAnswer) refused.getCause()).failure());
    } finally {
      big.stop(0);
    }
  }
}

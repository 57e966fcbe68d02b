package dev.runway.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.javalin.Javalin;
import io.javalin.config.RoutesConfig;
import io.javalin.testtools.HttpClient;
import io.javalin.testtools.JavalinTest;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * Requests hold only so many places in flight, given back once each; those without a key (outside
 * /v1: the console) only so many per client address.
 */
class InFlightLimitTest {
  @Test
  void one_address_outside_v1_holds_at_most_its_share_of_places() {
    InFlightLimit limit = new InFlightLimit(10, 2);
    Held held = new Held("/console/held");
    Javalin app = app(limit, held, routes -> {
      routes.get("/console/quick", ctx -> ctx.result("quick"));
      routes.get("/v1/quick", ctx -> ctx.result("api"));
    });
    JavalinTest.test(app, (server, client) -> {
      try {
        held.start(client);
        var refused = client.get("/console/quick");
        assertEquals(429, refused.code());
        assertEquals(List.of("1"), refused.headers().get("Retry-After"));
        assertTrue(refused.body().string().contains("this client address has 2 requests in flight"));
        assertEquals(200, client.get("/v1/quick").code(), "the API's places are not the address's");
        held.finish();
        assertEquals(200, client.get("/console/quick").code(), "its places are given back");
      } finally {
        held.close();
      }
    });
  }

  /**
   * The bound holds across requests that give their place back early (a live stream does, then the
   * after-handler leaves again): a place is given back once, so the bound never grows.
   */
  @Test
  void a_place_is_given_back_once_however_often_a_request_leaves() {
    InFlightLimit limit = new InFlightLimit(2, 2);
    Held held = new Held("/v1/held");
    Javalin app = app(limit, held, routes -> {
      routes.get("/v1/early", ctx -> {
        limit.leave(ctx);
        limit.leave(ctx);
        ctx.result("left early");
      });
      routes.get("/v1/quick", ctx -> ctx.result("quick"));
    });
    JavalinTest.test(app, (server, client) -> {
      try {
        for (int i = 0; i < 5; i++) {
          assertEquals(200, client.get("/v1/early").code());
        }
        held.start(client);
        var refused = client.get("/v1/quick");
        assertEquals(503, refused.code(), "two places, both held: the early leavers gave back no more than theirs");
        assertEquals(List.of("1"), refused.headers().get("Retry-After"));
        assertTrue(refused.body().string().contains("limit of 2 requests in flight"));
        held.finish();
        assertEquals(200, client.get("/v1/quick").code(), "their places are given back");
      } finally {
        held.close();
      }
    });
  }

  /** An app bounded by {@code limit}, with {@code held}'s route and those {@code more} adds. */
  private static Javalin app(InFlightLimit limit, Held held, Consumer<RoutesConfig> more) {
    return Javalin.create(config -> {
      config.routes.before(limit::enter);
      config.routes.after(limit::leave);
      ErrorMapper.register(config.routes);
      config.routes.get(held.path, ctx -> {
        held.entered.countDown();
        held.release.await(30, TimeUnit.SECONDS);
        ctx.result("done");
      });
      more.accept(config.routes);
    });
  }

  /** Two requests to a route that answers only once released, holding their places meanwhile. */
  private static final class Held {
    final String path;
    final CountDownLatch entered = new CountDownLatch(2);
    final CountDownLatch release = new CountDownLatch(1);
    final ExecutorService pool = Executors.newFixedThreadPool(2);
    final List<Future<Integer>> answers = new ArrayList<>();

    Held(String path) {
      this.path = path;
    }

    /** Sends both and returns once both are in flight. */
    void start(HttpClient client) throws InterruptedException {
      for (int i = 0; i < 2; i++) {
        answers.add(pool.submit(() -> client.get(path).code()));
      }
      assertTrue(entered.await(30, TimeUnit.SECONDS), "both held requests are in flight");
    }

    /** Releases both and checks they were answered 200. */
    void finish() throws Exception {
      release.countDown();
      for (Future<Integer> f : answers) {
        assertEquals(200, f.get(30, TimeUnit.SECONDS));
      }
    }

    void close() {
      release.countDown();
      pool.shutdownNow();
    }
  }
}

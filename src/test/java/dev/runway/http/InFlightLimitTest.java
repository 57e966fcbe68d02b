package dev.runway.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.javalin.Javalin;
import io.javalin.testtools.JavalinTest;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Requests without a key (outside /v1: the console) hold only so many places in flight per client address. */
class InFlightLimitTest {
  @Test
  void one_address_outside_v1_holds_at_most_its_share_of_places() {
    InFlightLimit limit = new InFlightLimit(10, 2);
    CountDownLatch entered = new CountDownLatch(2);
    CountDownLatch release = new CountDownLatch(1);
    Javalin app = Javalin.create(config -> {
      config.routes.before(limit::enter);
      config.routes.after(limit::leave);
      ErrorMapper.register(config.routes);
      config.routes.get("/console/held", ctx -> {
        entered.countDown();
        release.await(30, TimeUnit.SECONDS);
        ctx.result("done");
      });
      config.routes.get("/console/quick", ctx -> ctx.result("quick"));
      config.routes.get("/v1/quick", ctx -> ctx.result("api"));
    });
    JavalinTest.test(app, (server, client) -> {
      ExecutorService pool = Executors.newFixedThreadPool(2);
      try {
        List<Future<Integer>> held = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
          held.add(pool.submit(() -> client.get("/console/held").code()));
        }
        assertTrue(entered.await(30, TimeUnit.SECONDS), "both held requests are in flight");
        var refused = client.get("/console/quick");
        assertEquals(429, refused.code());
        assertEquals(List.of("1"), refused.headers().get("Retry-After"));
        assertTrue(refused.body().string().contains("this client address has 2 requests in flight"));
        assertEquals(200, client.get("/v1/quick").code(), "the API's places are not the address's");
        release.countDown();
        for (Future<Integer> f : held) {
          assertEquals(200, f.get(30, TimeUnit.SECONDS));
        }
        assertEquals(200, client.get("/console/quick").code(), "its places are given back");
      } finally {
        release.countDown();
        pool.shutdownNow();
      }
    });
  }
}

package dev.runway.support;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * Client threads sending requests to a server (the packaged jar) over and over until stopped, so
 * that a test can kill the server in the middle of them; what the requests were answered is the
 * test's to record.
 */
public final class LoadUntilKilled {
  /** One request of client {@code client}; an exception ends that client (the server is gone). */
  public interface Request {
    void send(int client) throws Exception;
  }

  private final ExecutorService pool;
  private volatile boolean running = true;

  public LoadUntilKilled(int clients, Request request) {
    pool = Executors.newFixedThreadPool(clients);
    for (int c = 0; c < clients; c++) {
      int client = c;
      pool.submit(() -> {
        while (running) {
          try {
            request.send(client);
          } catch (Exception serverGone) {
            return;
          }
        }
      });
    }
  }

  /**
   * Lets the load run until {@code loaded} holds (a loaded machine may take a while over its first
   * requests: 30 s at most), then a random while of {@code minMs} to {@code maxMs} more, so that
   * what comes next (a kill) finds requests in flight.
   */
  public void runUntil(BooleanSupplier loaded, long minMs, long maxMs) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!loaded.getAsBoolean() && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    Thread.sleep(minMs >= maxMs ? minMs : ThreadLocalRandom.current().nextLong(minMs, maxMs));
  }

  public void stop() throws InterruptedException {
    running = false;
    pool.shutdown();
    assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS));
  }
}

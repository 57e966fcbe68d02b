package dev.runway.support;

import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The JDK's HTTP server on 127.0.0.1, a free port, on daemon threads enough for many slow requests
 * at once: what the tests' fake services (ToolServer, FakeModel) listen with.
 */
record LoopbackHttp(HttpServer server, ExecutorService threads) implements AutoCloseable {

  /** Starts serving every path with {@code handler}; its threads are named {@code name}-n. */
  static LoopbackHttp serve(String name, HttpHandler handler) {
    try {
      HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1000);
      AtomicInteger n = new AtomicInteger();
      ExecutorService threads = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, name + "-" + n.incrementAndGet());
        t.setDaemon(true);
        return t;
      });
      server.createContext("/", handler);
      server.setExecutor(threads);
      server.start();
      return new LoopbackHttp(server, threads);
    } catch (IOException e) {
      throw new IllegalStateException("cannot start " + name, e);
    }
  }

  int port() {
    return server.getAddress().getPort();
  }

  @Override
  public void close() {
    server.stop(0);
    threads.shutdownNow();
  }
}

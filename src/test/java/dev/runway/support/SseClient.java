package dev.runway.support;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.core.Json;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;

/**
 * A Server-Sent Events client for tests: opens a stream, parses what arrives on a thread of its own
 * (events, and comments such as heartbeats) and lets the test wait for what it expects.
 */
public final class SseClient implements AutoCloseable {
  private static final HttpClient CLIENT = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  /** One event as it arrived: its id:, event: and data: lines. */
  public record Event(String id, String type, String data) {
    public JsonNode json() {
      return Json.tree(data);
    }
  }

  private final HttpResponse<InputStream> response;
  private final List<Event> events = new ArrayList<>();
  private final List<String> comments = new ArrayList<>();
  private final Thread reader;
  private boolean ended;

  private final String errorBody;

  private SseClient(HttpResponse<InputStream> response) {
    this.response = response;
    if (response.statusCode() != 200) {
      // A refusal: a problem+json body, read whole.
      try (InputStream body = response.body()) {
        errorBody = new String(body.readAllBytes(), StandardCharsets.UTF_8);
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
      reader = null;
      ended = true;
      return;
    }
    errorBody = null;
    this.reader = new Thread(this::read, "sse-client");
    reader.setDaemon(true);
    reader.start();
  }

  /** The body of a refusal (not 200), parsed. */
  public JsonNode problem() {
    return Json.tree(errorBody);
  }

  /** Opens {@code origin + path} with Accept: text/event-stream, the key and any more headers (name, value, …). */
  public static SseClient open(String origin, String path, String key, String... headers) {
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(origin + path))
        .header("Accept", "text/event-stream").GET();
    if (key != null) {
      request.header("Authorization", "Bearer " + key);
    }
    for (int i = 0; i < headers.length; i += 2) {
      request.header(headers[i], headers[i + 1]);
    }
    try {
      return new SseClient(CLIENT.send(request.build(), HttpResponse.BodyHandlers.ofInputStream()));
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  public int status() {
    return response.statusCode();
  }

  public String header(String name) {
    return response.headers().firstValue(name).orElse(null);
  }

  private void read() {
    try (BufferedReader in = new BufferedReader(new InputStreamReader(response.body(), StandardCharsets.UTF_8))) {
      String id = null;
      String type = null;
      StringBuilder data = null;
      for (String line; (line = in.readLine()) != null; ) {
        if (line.isEmpty()) {
          if (data != null) {
            add(new Event(id, type, data.toString()));
          }
          id = null;
          type = null;
          data = null;
        } else if (line.startsWith(":")) {
          synchronized (this) {
            comments.add(line.substring(1).strip());
            notifyAll();
          }
        } else if (line.startsWith("id: ")) {
          id = line.substring(4);
        } else if (line.startsWith("event: ")) {
          type = line.substring(7);
        } else if (line.startsWith("data: ")) {
          data = data == null ? new StringBuilder(line.substring(6)) : data.append('\n').append(line.substring(6));
        }
      }
    } catch (IOException e) {
      // closed
    } finally {
      synchronized (this) {
        ended = true;
        notifyAll();
      }
    }
  }

  private synchronized void add(Event event) {
    events.add(event);
    notifyAll();
  }

  /** The events so far. */
  public synchronized List<Event> events() {
    return new ArrayList<>(events);
  }

  public synchronized List<String> comments() {
    return new ArrayList<>(comments);
  }

  /** Whether the server ended the stream. */
  public synchronized boolean ended() {
    return ended;
  }

  /** Waits until the events so far satisfy {@code until}; fails the test after {@code patience}. */
  public synchronized List<Event> await(Duration patience, Predicate<List<Event>> until, String what) {
    long deadline = System.nanoTime() + patience.toNanos();
    while (!until.test(events)) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw new AssertionError("no " + what + " within " + patience + "; got " + events + " comments " + comments
            + (ended ? " (stream ended)" : ""));
      }
      waitNanos(left);
    }
    return new ArrayList<>(events);
  }

  /** Waits for the server to end the stream; fails the test after {@code patience}. */
  public synchronized void awaitEnd(Duration patience) {
    long deadline = System.nanoTime() + patience.toNanos();
    while (!ended) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw new AssertionError("the stream did not end within " + patience + "; got " + events);
      }
      waitNanos(left);
    }
  }

  /** Waits for {@code n} comments (such as heartbeats); fails the test after {@code patience}. */
  public synchronized List<String> awaitComments(Duration patience, int n) {
    long deadline = System.nanoTime() + patience.toNanos();
    while (comments.size() < n) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw new AssertionError("fewer than " + n + " comments within " + patience + ": " + comments);
      }
      waitNanos(left);
    }
    return new ArrayList<>(comments);
  }

  private void waitNanos(long nanos) {
    try {
      wait(Math.max(1, nanos / 1_000_000));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  @Override
  public void close() {
    try {
      response.body().close();
    } catch (IOException e) {
      // gone already
    }
  }
}

package dev.runway.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.WriteListener;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The non-blocking writer of a stream: it waits for a client that reads slowly, up to its bound. */
class SseOutputTest {
  /** An output the test makes ready or not, as a client that reads or does not. */
  private static final class Client extends ServletOutputStream {
    final ByteArrayOutputStream received = new ByteArrayOutputStream();
    WriteListener listener;
    boolean ready = true;
    boolean broken;

    @Override
    public boolean isReady() {
      return ready;
    }

    @Override
    public void setWriteListener(WriteListener writeListener) {
      listener = writeListener;
    }

    @Override
    public void write(int b) throws IOException {
      if (!ready) {
        throw new IllegalStateException("written while not ready");
      }
      if (broken) {
        throw new IOException("broken pipe");
      }
      received.write(b);
    }

    /** The client read what was sent: the container calls back. */
    void reads() throws IOException {
      ready = true;
      listener.onWritePossible();
    }

    String text() {
      return received.toString(StandardCharsets.UTF_8);
    }
  }

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void what_a_slow_client_has_not_taken_waits_and_is_sent_when_it_reads() throws IOException {
    Client client = new Client();
    SseOutput out = new SseOutput(client, 100);
    out.start();
    assertTrue(out.write(bytes("a\n\n")));
    client.ready = false;
    assertTrue(out.write(bytes("b\n\n")));
    assertTrue(out.write(bytes("c\n\n")));
    assertEquals("a\n\n", client.text());
    out.finish();
    assertTrue(out.isOpen(), "a finished stream ends only once everything is written");
    client.reads();
    assertEquals("a\n\nb\n\nc\n\n", client.text());
    assertFalse(out.isOpen());
    assertTrue(out.ended().isDone());
  }

  @Test
  void a_client_that_does_not_read_is_cut_off_at_the_bound() {
    Client client = new Client();
    SseOutput out = new SseOutput(client, 10);
    out.start();
    client.ready = false;
    assertTrue(out.write(bytes("12345")));
    assertTrue(out.write(bytes("67890")));
    assertFalse(out.write(bytes("x")), "past 10 bytes waiting");
    assertTrue(out.ended().isDone());
    assertFalse(out.write(bytes("y")), "an ended stream takes nothing more");
  }

  @Test
  void a_failed_write_ends_the_stream() {
    Client client = new Client();
    SseOutput out = new SseOutput(client, 100);
    out.start();
    client.broken = true;
    assertFalse(out.write(bytes("a")));
    assertTrue(out.ended().isDone());
  }

  @Test
  void slow_clients_together_are_cut_off_at_the_servers_bound() throws IOException {
    java.util.concurrent.atomic.AtomicLong all = new java.util.concurrent.atomic.AtomicLong();
    Client first = new Client();
    Client second = new Client();
    SseOutput a = new SseOutput(first, 100, all, 12);
    SseOutput b = new SseOutput(second, 100, all, 12);
    a.start();
    b.start();
    first.ready = false;
    second.ready = false;
    assertTrue(a.write(bytes("123456")));
    assertTrue(b.write(bytes("123456")));
    assertEquals(12, all.get());
    assertFalse(b.write(bytes("x")), "past 12 bytes waiting on the server, each stream under its own 100");
    assertTrue(b.ended().isDone());
    assertEquals(6, all.get(), "a closed stream gives back what it held");
    first.reads();
    assertEquals(0, all.get(), "what was written is no longer held");
    assertTrue(a.isOpen());
  }
}

package dev.runway.support;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** A loopback TCP proxy a test can cut (drop every connection, refuse new ones) and restore: a database outage. */
public final class TcpProxy implements AutoCloseable {
  private final int targetPort;
  private final ServerSocket listener;
  private final List<Socket> open = new CopyOnWriteArrayList<>();
  private volatile boolean cut;

  public TcpProxy(int targetPort) throws IOException {
    this.targetPort = targetPort;
    this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread acceptor = new Thread(this::accept, "tcp-proxy");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  public int port() {
    return listener.getLocalPort();
  }

  /** Drops every connection and refuses new ones until {@link #restore}. */
  public void cut() {
    cut = true;
    for (Socket s : open) {
      closeQuietly(s);
    }
    open.clear();
  }

  public void restore() {
    cut = false;
  }

  private void accept() {
    while (!listener.isClosed()) {
      try {
        Socket client = listener.accept();
        if (cut) {
          closeQuietly(client);
          continue;
        }
        Socket server = new Socket(InetAddress.getLoopbackAddress(), targetPort);
        open.add(client);
        open.add(server);
        pipe(client, server);
        pipe(server, client);
      } catch (IOException e) {
        // listener closed, or the target refused: the client sees its connection dropped
      }
    }
  }

  private void pipe(Socket from, Socket to) {
    Thread t = new Thread(() -> {
      byte[] buffer = new byte[16384];
      try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
        int n;
        while ((n = in.read(buffer)) >= 0) {
          out.write(buffer, 0, n);
          out.flush();
        }
      } catch (IOException e) {
        // connection dropped
      } finally {
        closeQuietly(from);
        closeQuietly(to);
      }
    }, "tcp-proxy-pipe");
    t.setDaemon(true);
    t.start();
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException ignored) {
      // closing anyway
    }
  }

  @Override
  public void close() throws IOException {
    cut();
    listener.close();
  }
}

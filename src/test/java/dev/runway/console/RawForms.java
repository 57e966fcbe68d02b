package dev.runway.console;

import dev.runway.support.Browser;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Console form posts over a plain socket, from a chosen local address (another client, as the server sees it). */
final class RawForms {
  private RawForms() {}

  /** Posts the url-encoded {@code body} from {@code localAddress} with the session cookie; the page that came back. */
  static Browser.Page post(String origin, String localAddress, String path, String cookie, String body) {
    URI uri = URI.create(origin);
    try (Socket socket = new Socket()) {
      socket.bind(new InetSocketAddress(InetAddress.getByName(localAddress), 0));
      socket.connect(new InetSocketAddress(uri.getHost(), uri.getPort()), 5000);
      socket.setSoTimeout(10_000);
      byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
      String head = "POST " + path + " HTTP/1.1\r\nHost: " + uri.getAuthority() + "\r\nConnection: close\r\n"
          + "Content-Type: application/x-www-form-urlencoded\r\nCookie: runway_session=" + cookie + "\r\n"
          + "Content-Length: " + bytes.length + "\r\n\r\n";
      socket.getOutputStream().write(head.getBytes(StandardCharsets.US_ASCII));
      socket.getOutputStream().write(bytes);
      socket.getOutputStream().flush();
      return read(socket.getInputStream());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A response read to the end of its Content-Length (or of the connection). */
  static Browser.Page read(InputStream in) throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    while (true) {
      int b = in.read();
      if (b < 0) {
        break;
      }
      head.write(b);
      byte[] h = head.toByteArray();
      int n = h.length;
      if (n >= 4 && h[n - 4] == '\r' && h[n - 3] == '\n' && h[n - 2] == '\r' && h[n - 1] == '\n') {
        break;
      }
    }
    String[] lines = head.toString(StandardCharsets.ISO_8859_1).split("\r\n");
    int status = Integer.parseInt(lines[0].split(" ")[1]);
    Map<String, List<String>> headers = new LinkedHashMap<>();
    int length = -1;
    for (int i = 1; i < lines.length; i++) {
      int colon = lines[i].indexOf(':');
      if (colon > 0) {
        String name = lines[i].substring(0, colon).strip();
        String value = lines[i].substring(colon + 1).strip();
        headers.computeIfAbsent(name, n -> new ArrayList<>()).add(value);
        if (name.toLowerCase(Locale.ROOT).equals("content-length")) {
          length = Integer.parseInt(value);
        }
      }
    }
    byte[] body = length >= 0 ? in.readNBytes(length) : in.readAllBytes();
    return new Browser.Page(status, headers, new String(body, StandardCharsets.UTF_8));
  }
}

package dev.runway.support;

import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A browser as far as the console's HTTP tests need one: keeps the cookies the server sets, sends
 * forms (url-encoded, with the page's CSRF token unless told otherwise), follows no redirect (the
 * test checks them), and remembers the last page's CSRF token.
 */
public final class Browser {
  private static final HttpClient CLIENT = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER)
      .connectTimeout(Duration.ofSeconds(5)).build();
  private static final Pattern CSRF = Pattern.compile("name=\"csrf\" value=\"([0-9a-f]+)\"");

  private final String origin;
  private final Map<String, String> cookies = new LinkedHashMap<>();
  private String csrf;

  /** A page as it came: status, headers, body. */
  public record Page(int status, Map<String, List<String>> headers, String body) {
    public String header(String name) {
      return headers.entrySet().stream().filter(e -> e.getKey().equalsIgnoreCase(name)).findFirst()
          .map(e -> e.getValue().get(0)).orElse(null);
    }

    public List<String> all(String name) {
      return headers.entrySet().stream().filter(e -> e.getKey().equalsIgnoreCase(name)).findFirst()
          .map(Map.Entry::getValue).orElse(List.of());
    }

    @Override
    public String toString() {
      return status + " " + headers + "\n" + (body.length() > 2000 ? body.substring(0, 2000) + "…" : body);
    }
  }

  public Browser(String origin) {
    this.origin = origin;
  }

  public Page get(String path) {
    return send(HttpRequest.newBuilder(URI.create(origin + path)).GET());
  }

  /** Posts the form fields (name, value, …) with the CSRF token of the last page seen. */
  public Page post(String path, String... fields) {
    return postWithToken(path, csrf, fields);
  }

  /** Posts the form with this token (null: none), and any headers set on the builder by {@code extra}. */
  public Page postWithToken(String path, String token, String... fields) {
    return postAs(path, token, null, fields);
  }

  public Page postAs(String path, String token, String originHeader, String... fields) {
    StringBuilder body = new StringBuilder();
    if (token != null) {
      body.append("csrf=").append(token);
    }
    for (int i = 0; i < fields.length; i += 2) {
      body.append(body.length() == 0 ? "" : "&").append(URLEncoder.encode(fields[i], StandardCharsets.UTF_8))
          .append('=').append(URLEncoder.encode(fields[i + 1], StandardCharsets.UTF_8));
    }
    HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(origin + path))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .POST(HttpRequest.BodyPublishers.ofString(body.toString()));
    if (originHeader != null) {
      request.header("Origin", originHeader);
    }
    return send(request);
  }

  /** The value of a cookie this browser holds, or null. */
  public String cookie(String name) {
    return cookies.get(name);
  }

  public void setCookie(String name, String value) {
    cookies.put(name, value);
  }

  public String csrf() {
    return csrf;
  }

  private Page send(HttpRequest.Builder request) {
    if (!cookies.isEmpty()) {
      StringBuilder header = new StringBuilder();
      cookies.forEach((k, v) -> header.append(header.length() == 0 ? "" : "; ").append(k).append('=').append(v));
      request.header("Cookie", header.toString());
    }
    try {
      HttpResponse<String> response = CLIENT.send(request.build(), HttpResponse.BodyHandlers.ofString());
      for (String set : response.headers().allValues("Set-Cookie")) {
        String pair = set.split(";", 2)[0];
        String name = pair.substring(0, pair.indexOf('='));
        String value = pair.substring(pair.indexOf('=') + 1);
        if (value.isEmpty() || set.contains("Max-Age=0")) {
          cookies.remove(name);
        } else {
          cookies.put(name, value);
        }
      }
      Matcher m = CSRF.matcher(response.body());
      if (m.find()) {
        csrf = m.group(1);
      }
      return new Page(response.statusCode(), response.headers().map(), response.body());
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}

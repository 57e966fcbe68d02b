package dev.runway.http;

import dev.runway.core.Sha256;
import io.javalin.http.Context;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Properties;

/**
 * The API's description: {@code GET /v1/openapi.json}, the OpenAPI document (a resource, served as
 * it is), and {@code /docs}, a reference page Swagger UI renders from it. Swagger UI's files come
 * from its webjar in this jar, so the page asks no other host for anything.
 */
public final class ApiReference {
  /** Only 'self': scripts, styles and the document come from this server (icons in Swagger UI's CSS are data: URIs). */
  static final String CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
      + "connect-src 'self'; font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
  private static final String CACHE = "public, max-age=300";
  private static final String WEBJAR = "/META-INF/resources/webjars/swagger-ui/";
  /** The files the page loads, and their types: anything else under /docs is not found. */
  private static final Map<String, String> FILES = Map.of(
      "docs.js", "text/javascript; charset=utf-8",
      "docs.css", "text/css; charset=utf-8",
      "swagger-ui-bundle.js", "text/javascript; charset=utf-8",
      "swagger-ui.css", "text/css; charset=utf-8",
      "favicon-32x32.png", "image/png");

  private final byte[] document;
  private final String documentTag;
  private final String swaggerUi;

  public ApiReference() {
    document = resource("/openapi.json");
    documentTag = "\"" + Sha256.hex(new String(document, StandardCharsets.UTF_8)).substring(0, 32) + "\"";
    swaggerUi = WEBJAR + swaggerUiVersion() + "/";
  }

  /** GET /v1/openapi.json: the same for every caller, so (unlike API answers) caches may keep it. */
  public void openApi(Context ctx) {
    ctx.header("Cache-Control", CACHE);
    ctx.header("ETag", documentTag);
    if (documentTag.equals(ctx.header("If-None-Match"))) {
      ctx.status(304);
      return;
    }
    ctx.status(200).contentType(Responses.JSON).result(document);
  }

  /** GET /docs: the reference page. */
  public void page(Context ctx) {
    headers(ctx);
    ctx.contentType("text/html; charset=utf-8").result(ApiReference.class.getResourceAsStream("/docs/index.html"));
  }

  /** GET /docs/{file}: the page's script and styles, and Swagger UI's. */
  public void file(Context ctx) {
    headers(ctx);
    String file = ctx.pathParam("file");
    String type = FILES.get(file);
    if (type == null) {
      Responses.problem(ctx, 404, "not_found", "no such file: " + ctx.path(), null);
      return;
    }
    String path = file.startsWith("docs.") ? "/docs/" + file : swaggerUi + file;
    // Streamed from the jar (Swagger UI's bundle is 1.6 MB): nothing of it is kept in the heap.
    ctx.contentType(type).result(ApiReference.class.getResourceAsStream(path));
  }

  private static void headers(Context ctx) {
    ctx.header("Cache-Control", CACHE);
    ctx.header("Content-Security-Policy", CSP);
    ctx.header("X-Frame-Options", "DENY");
    ctx.header("Referrer-Policy", "same-origin");
  }

  /** The webjar's version, from its Maven metadata: the folder its files are in. */
  private static String swaggerUiVersion() {
    Properties properties = new Properties();
    try (InputStream in = ApiReference.class.getResourceAsStream("/META-INF/maven/org.webjars/swagger-ui/pom.properties")) {
      if (in == null) {
        throw new IllegalStateException("the swagger-ui webjar is not on the class path");
      }
      properties.load(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return properties.getProperty("version");
  }

  private static byte[] resource(String path) {
    try (InputStream in = ApiReference.class.getResourceAsStream(path)) {
      if (in == null) {
        throw new IllegalStateException("missing resource " + path);
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}

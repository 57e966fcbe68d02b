package dev.runway.console;

import gg.jte.ContentType;
import gg.jte.TemplateEngine;
import gg.jte.output.StringOutput;
import io.javalin.http.Context;
import java.util.LinkedHashMap;
import java.util.Map;

/** Renders the console's pages: JTE templates compiled at build time (src/main/jte), which escape what they show. */
public final class PageRenderer {
  private final TemplateEngine templates = TemplateEngine.createPrecompiled(ContentType.Html);

  /** The frame of a page for a visitor not signed in: its forms carry the visitor session's token. */
  Views.Frame frame(String title, ConsoleSession visitor) {
    return new Views.Frame(title, null, null, visitor.csrfToken(), null);
  }

  /** The frame of a signed-in page, with the tab it is under. */
  Views.Frame frame(String title, SignedIn signed, String nav) {
    return new Views.Frame(title, signed.account().email(), signed.account().workspaceId(),
        signed.session().csrfToken(), nav);
  }

  /** A page that only says something; without a frame, one that shows no one signed in. */
  void message(Context ctx, int status, Views.Frame frame, Views.Message message) {
    render(ctx, status, "message.jte", "frame", frame == null ? new Views.Frame(message.heading(), null, null, "", null)
        : frame, "message", message);
  }

  /** The template with its parameters given as name, value, name, value… */
  void render(Context ctx, int status, String template, Object... params) {
    Map<String, Object> model = new LinkedHashMap<>();
    for (int i = 0; i < params.length; i += 2) {
      model.put((String) params[i], params[i + 1]);
    }
    StringOutput out = new StringOutput();
    templates.render(template, model, out);
    ctx.status(status).contentType("text/html; charset=utf-8").result(out.toString());
  }
}

package dev.runway.console;

import com.fasterxml.jackson.databind.JsonNode;
import dev.runway.agent.Agent;
import dev.runway.agent.AgentService;
import dev.runway.auth.Principal;
import dev.runway.auth.Scope;
import dev.runway.core.DomainException;
import dev.runway.core.Ids;
import dev.runway.core.Json;
import dev.runway.core.Slugs;
import dev.runway.db.Slice;
import dev.runway.events.EventReads;
import dev.runway.http.ErrorMapper;
import dev.runway.http.Responses;
import dev.runway.run.AgentRunMachine;
import dev.runway.run.Event;
import dev.runway.run.Run;
import dev.runway.run.RunFilter;
import dev.runway.run.RunMessage;
import dev.runway.run.RunService;
import dev.runway.run.RunSignals;
import dev.runway.run.RunStatus;
import dev.runway.workflow.Workflow;
import dev.runway.workflow.WorkflowService;
import io.javalin.http.Context;
import io.javalin.http.HttpStatus;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The console's pages of a workspace's runs (a filtered list, and one run with its steps or its
 * transcript, its events, and Approve / Reject / Cancel), of its workflows and agents, and of one
 * workflow with its steps and triggers (schedules with their next times). They call the services
 * the API calls, as the signed-in account (which events record as the actor), so the same rules
 * answer: an approval of an ended run is refused as the API's 409 is.
 */
public final class RunPages {
  private static final int PAGE = 25;
  /** The most stored JSON one page of runs reads (runs may be near 512 KB each): fewer rows past it. */
  private static final long PAGE_BYTES = 1 << 20;
  /** The most workflows and agents the definitions page lists (each fewer past PAGE_BYTES). */
  private static final int DEFINITIONS = 100;
  private static final int EVENTS = 200;
  /** The most events one ask of a streamed answer reads (its pieces, gathered per write). */
  private static final int LIVE_EVENTS = 1000;
  /** The most child runs a run's page lists (each fewer past PAGE_BYTES); the rest are on the runs list. */
  private static final int CHILDREN = 100;
  /** A page showing a run still moving reloads itself this often (a meta refresh: no script needed). */
  static final int REFRESH_SECONDS = 5;

  private final ConsoleGuard guard;
  private final PageRenderer pages;
  private final RunService runs;
  private final EventReads events;
  private final WorkflowService workflows;
  private final AgentService agents;
  private final RunSignals signals;

  public RunPages(ConsoleGuard guard, PageRenderer pages, RunService runs, EventReads events,
      WorkflowService workflows, AgentService agents, RunSignals signals) {
    this.signals = signals;
    this.guard = guard;
    this.pages = pages;
    this.events = events;
    this.runs = runs;
    this.workflows = workflows;
    this.agents = agents;
  }

  /** The account acting on its workspace, with every scope, as the workspace's owner. */
  private static Principal actor(SignedIn signed) {
    return new Principal(signed.account().id(), signed.account().workspaceId(), Scope.all(), null);
  }

  /** GET /console/runs?status=&kind=&workflow=&parent_run_id=&starting_after= */
  public void list(Context ctx) {
    Optional<SignedIn> signed = guard.requireSignedIn(ctx);
    if (signed.isEmpty()) {
      return;
    }
    String status = ctx.queryParam("status");
    status = status != null && RunStatus.parse(status).isPresent() ? status : null;
    String kind = ctx.queryParam("kind");
    kind = "workflow".equals(kind) || "agent".equals(kind) ? kind : null;
    String after = ctx.queryParam("starting_after");
    after = after != null && Ids.looksLike("run", after) ? after : null;
    String parent = ctx.queryParam("parent_run_id");
    parent = parent != null && Ids.looksLike("run", parent) ? parent : null;
    // As GET /v1/runs?workflow= filters: the workflow's runs started, without its iterations.
    String workflow = ctx.queryParam("workflow");
    workflow = workflow != null && Slugs.isSlug(workflow) ? workflow : null;
    Slice<Run> rows = runs.list(actor(signed.get()), new RunFilter(kind, workflow, null, null,
        status == null ? null : List.of(status), null, null, after, null, parent), PAGE, PAGE_BYTES);
    boolean more = rows.more();
    List<Views.RunRow> page = rows.rows().stream().map(Views.RunRow::of).toList();
    String next = more ? "/console/runs?" + (status == null ? "" : "status=" + status + "&")
        + (kind == null ? "" : "kind=" + kind + "&") + (workflow == null ? "" : "workflow=" + workflow + "&")
        + (parent == null ? "" : "parent_run_id=" + parent + "&")
        + "starting_after=" + page.get(page.size() - 1).id() : null;
    boolean moving = page.stream().anyMatch(r -> !RunStatus.isEnded(r.status()));
    String title = parent != null ? "Child runs of " + parent : workflow != null ? "Runs of " + workflow : "Runs";
    pages.render(ctx, 200, "runs.jte", "frame", pages.frame(title, signed.get(), "runs"), "page",
        new Views.Runs(page, status, kind, workflow, parent, after != null, next, moving ? REFRESH_SECONDS : 0));
  }

  /** GET /console/runs/{id} */
  public void show(Context ctx) {
    Optional<SignedIn> signed = guard.requireSignedIn(ctx);
    if (signed.isEmpty()) {
      return;
    }
    showRun(ctx, signed.get(), 200, null);
  }

  /** POST /console/runs/{id}/approve, …/reject (with a comment), …/cancel and …/signal (a name and a JSON body). */
  public void decide(Context ctx) {
    ConsoleForm posted = guard.readForm(ctx);
    if (posted == null) {
      return;
    }
    Optional<SignedIn> signed = guard.requireSignedInForm(ctx, posted);
    if (signed.isEmpty()) {
      return;
    }
    String runId = ctx.pathParam("id");
    String comment = posted.get("comment");
    comment = comment == null || comment.isBlank() ? null : comment.strip();
    String toolCallId = posted.get("tool_call_id"); // one call of several decided alone
    List<String> toolCallIds = toolCallId == null || toolCallId.isBlank() ? null : List.of(toolCallId);
    try {
      if (!Ids.looksLike("run", runId)) {
        throw DomainException.notFound("run_not_found", "no such run");
      }
      if (comment != null && comment.length() > 1000) {
        throw DomainException.invalid("comment", "A comment may have at most 1,000 characters.");
      }
      switch (ctx.pathParam("action")) {
        case "approve" -> runs.approve(actor(signed.get()), runId, comment, toolCallIds);
        case "reject" -> runs.reject(actor(signed.get()), runId, comment, toolCallIds);
        case "cancel" -> runs.cancel(actor(signed.get()), runId);
        case "signal" -> sendSignal(actor(signed.get()), runId, posted);
        default -> throw DomainException.notFound("not_found", "no such action");
      }
      ctx.redirect("/console/runs/" + runId, HttpStatus.SEE_OTHER);
    } catch (DomainException e) {
      if (e.kind() == DomainException.Kind.NOT_FOUND) {
        notFound(ctx, signed.get());
      } else {
        showRun(ctx, signed.get(), ErrorMapper.status(e.kind()), e.getMessage());
      }
    }
  }

  /**
   * GET /console/workflows?starting_after=: the workspace's workflows by id, archived ones too, a
   * page at a time, and (on the first page) its agents.
   */
  public void definitions(Context ctx) {
    Optional<SignedIn> signed = guard.requireSignedIn(ctx);
    if (signed.isEmpty()) {
      return;
    }
    String workspace = signed.get().account().workspaceId();
    String after = ctx.queryParam("starting_after");
    after = after != null && Slugs.isSlug(after) ? after : null;
    Slice<Workflow> page = workflows.page(workspace, after, true, DEFINITIONS, PAGE_BYTES);
    List<Views.DefinitionRow> flows = new ArrayList<>();
    for (Workflow w : page.rows()) {
      flows.add(new Views.DefinitionRow(w.id(), w.name(), w.description(), Json.tree(w.steps()).size() + " steps"
          + (w.requiresApproval() ? ", approval" : ""), Views.time(w.updatedAt()), w.archived()));
    }
    String next = page.more() ? "/console/workflows?starting_after=" + flows.get(flows.size() - 1).id() : null;
    List<Views.DefinitionRow> agentRows = new ArrayList<>();
    if (after == null) {
      for (Agent a : agents.page(workspace, null, false, DEFINITIONS, PAGE_BYTES).rows()) {
        JsonNode d = Json.tree(a.definition());
        agentRows.add(new Views.DefinitionRow(a.id(), a.name(), a.description(), d.path("model").asText()
            + ", " + d.path("tools").size() + " tools", Views.time(a.updatedAt()), false));
      }
    }
    pages.render(ctx, 200, "definitions.jte", "frame", pages.frame("Workflows and agents", signed.get(),
        "workflows"), "page", new Views.Definitions(flows, agentRows, after != null, next));
  }

  /** GET /console/workflows/{id}: one workflow (archived or not), its steps and its triggers with their next times. */
  public void workflow(Context ctx) {
    Optional<SignedIn> signed = guard.requireSignedIn(ctx);
    if (signed.isEmpty()) {
      return;
    }
    String id = ctx.pathParam("id");
    Workflow workflow;
    try {
      if (!Slugs.isSlug(id)) {
        throw DomainException.notFound("workflow_not_found", "no such workflow");
      }
      workflow = workflows.get(signed.get().account().workspaceId(), id);
    } catch (DomainException e) {
      pages.message(ctx, 404, pages.frame("Not found", signed.get(), "workflows"), new Views.Message(
          "No such workflow", "This workspace has no workflow with that id.", "/console/workflows",
          "Back to the workflows"));
      return;
    }
    pages.render(ctx, 200, "workflow.jte", "frame", pages.frame("Workflow " + workflow.id(), signed.get(),
        "workflows"), "workflow", Views.WorkflowDetail.of(workflows.view(workflow)));
  }

  private void showRun(Context ctx, SignedIn signed, int status, String error) {
    String runId = ctx.pathParam("id");
    if (!Ids.looksLike("run", runId)) {
      notFound(ctx, signed);
      return;
    }
    Principal actor = actor(signed);
    Run run;
    try {
      run = runs.get(actor, runId);
    } catch (DomainException e) {
      notFound(ctx, signed);
      return;
    }
    List<Event> events = this.events.timeline(actor, runId, EVENTS);
    List<RunMessage> messages = run.isAgent() ? runs.messages(actor, runId, -1, 500) : List.of();
    // Its workflow and agent steps' runs and its foreach and parallel iterations, newest first.
    Slice<Run> children = runs.list(actor, new RunFilter(null, null, null, null, null, null, null, null, null, runId),
        CHILDREN, PAGE_BYTES);
    boolean moving = !RunStatus.isEnded(run.status()) && !RunStatus.AWAITING_APPROVAL.wireName().equals(run.status());
    // A streamed answer in progress shows as it comes (console.js asks /live from the last event shown).
    String live = moving && run.isAgent() && !events.isEmpty() && AgentRunMachine.streams(Json.tree(run.steps()))
        ? events.get(events.size() - 1).id() : null;
    pages.render(ctx, status, "run.jte", "frame", pages.frame("Run " + run.id(), signed, "runs"),
        "run", Views.RunDetail.of(run, events, messages, children, error, moving ? REFRESH_SECONDS : 0, live));
  }

  /**
   * GET /console/runs/{id}/live?after=evt_…: the text the model has streamed so far of the answer it
   * is giving (its latest turn and attempt after the event {@code after}), and whether anything
   * else happened since that event (the page then reloads to show it). JSON, for console.js.
   */
  public void live(Context ctx) {
    Optional<SignedIn> signed = guard.requireSignedIn(ctx);
    if (signed.isEmpty()) {
      return;
    }
    String runId = ctx.pathParam("id");
    String after = ctx.queryParam("after");
    StringBuilder text = new StringBuilder();
    boolean changed = false;
    try {
      if (!Ids.looksLike("run", runId) || after == null || !Ids.looksLike("evt", after)) {
        throw DomainException.notFound("run_not_found", "no such run");
      }
      int turn = -1;
      int attempt = -1;
      for (Event e : events.events(actor(signed.get()), runId, after, LIVE_EVENTS)) {
        if (!e.type().equals(AgentRunMachine.MESSAGE_DELTA)) {
          changed = true;
          break;
        }
        JsonNode data = Json.tree(e.data());
        int t = data.path("turn").asInt();
        int a = e.attempt() == null ? 0 : e.attempt();
        if (t != turn || a != attempt) {
          text.setLength(0); // a new answer, or the same answer streamed again by a retry
          turn = t;
          attempt = a;
        }
        text.append(data.path("delta").asText());
      }
    } catch (DomainException e) {
      Responses.json(ctx, 404, Map.of("changed", true));
      return;
    }
    ctx.header("Cache-Control", "no-store");
    Responses.json(ctx, 200, Map.of("text", text.toString(), "changed", changed));
  }

  /** Sends the signal the form names with its body (JSON; empty: null), as the API does. */
  private void sendSignal(Principal actor, String runId, ConsoleForm posted) {
    String name = posted.get("signal");
    if (name == null || !Slugs.isSlug(name)) {
      throw DomainException.invalid("signal", "The signal's name must be a slug.");
    }
    String text = posted.get("body");
    JsonNode body;
    try {
      body = text == null || text.isBlank() ? com.fasterxml.jackson.databind.node.NullNode.getInstance()
          : Json.parseUntrusted(text.getBytes(java.nio.charset.StandardCharsets.UTF_8), null, Integer.MAX_VALUE);
    } catch (Json.InvalidJson e) {
      throw DomainException.invalid("body", "The body must be JSON: " + e.getMessage());
    }
    signals.send(actor, runId, name, body, null);
  }

  private void notFound(Context ctx, SignedIn signed) {
    pages.message(ctx, 404, pages.frame("Not found", signed, "runs"), new Views.Message("No such run",
        "This workspace has no run with that id.", "/console/runs", "Back to the runs"));
  }
}

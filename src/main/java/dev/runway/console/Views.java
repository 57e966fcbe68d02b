package dev.runway.console;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.auth.ApiKey;
import dev.runway.core.Json;
import dev.runway.core.Slugs;
import dev.runway.db.Slice;
import dev.runway.run.Event;
import dev.runway.run.Run;
import dev.runway.run.RunMessage;
import dev.runway.run.RunStatus;
import dev.runway.workflow.WorkflowView;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;

/** What the console's templates show: plain records, every text escaped by the templates. */
public final class Views {
  private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm 'UTC'")
      .withZone(ZoneOffset.UTC);

  private Views() {}

  /** Every page's frame: its title, who is signed in (null: nobody), the CSRF token, the active tab. */
  public record Frame(String title, String email, String workspace, String csrf, String nav) {
    public boolean signedIn() {
      return email != null;
    }

    public String navClass(String tab) {
      return tab.equals(nav) ? "active" : null;
    }
  }

  /**
   * The sign-in and sign-up forms: the message, the field it is about, what was typed (never the
   * password; every field bounded by ConsoleForm), whether sign-up needs an invitation, and a notice
   * (a fixed text, never from the request).
   */
  public record Form(String error, String field, String email, String setupCode, boolean signupOpen,
      boolean byInvitation, String notice) {
    public Form(String error, String field, String email, String setupCode, boolean signupOpen, boolean byInvitation) {
      this(error, field, email, setupCode, signupOpen, byInvitation, null);
    }

    Form withNotice(String text) {
      return new Form(error, field, email, setupCode, signupOpen, byInvitation, text);
    }
  }

  /** One scope's checkbox. */
  public record ScopeOption(String name, String description, boolean checked) {}

  public record KeyRow(String id, String name, String prefix, String scopes, String projects, String created,
      String lastUsed, String expires, String state) {

    static KeyRow of(ApiKey key, Instant now) {
      String state = key.revokedAt() != null ? "revoked"
          : key.expiresAt() != null && !now.isBefore(key.expiresAt()) ? "expired" : "active";
      return new KeyRow(key.id(), key.name(), key.prefix() == null ? "wsk_…" : key.prefix() + "…",
          key.scopes().replace(",", ", "), key.projects() == null ? "all" : key.projects().replace(",", ", "),
          time(key.createdAt()), key.lastUsedAt() == null ? "never" : time(key.lastUsedAt()),
          key.expiresAt() == null ? "never" : time(key.expiresAt()), state);
    }

    public boolean active() {
      return state.equals("active");
    }
  }

  /** The keys page: the workspace's keys, the form to make one (with what was typed on an error), a notice. */
  public record Keys(List<KeyRow> keys, List<ScopeOption> scopes, String name, String projects, String expiry,
      String error, String field, String notice) {}

  /** The page that shows a new key, once. */
  public record KeyCreated(String name, String key, String tryIt, String curl) {}

  /** A page with one message: an error, a refusal, a wait. */
  public record Message(String heading, String text, String link, String linkText) {}

  /** One run in the list. */
  public record RunRow(String id, String kind, String what, String project, String status, String created,
      String updated, String concurrencyKey) {
    static RunRow of(Run run) {
      return new RunRow(run.id(), run.kind(), run.isAgent() ? run.agentId() : run.workflowId(), run.project(),
          run.status(), time(run.createdAt()), time(run.updatedAt()), run.concurrencyKey());
    }
  }

  /**
   * The runs page: a page of runs, the filters (the workflow whose runs it lists and the run whose
   * children it lists, or null), the next page's link, and how often it reloads (0: never).
   */
  public record Runs(List<RunRow> runs, String status, String kind, String workflow, String parentRunId,
      boolean paged, String next, int refresh) {
    /** The first page with the same workflow's runs or the same run's children, or of all runs. */
    public String first() {
      return parentRunId != null ? "/console/runs?parent_run_id=" + parentRunId + (workflow == null ? ""
          : "&workflow=" + workflow) : workflow != null ? "/console/runs?workflow=" + workflow : "/console/runs";
    }

    public List<String> statuses() {
      return java.util.Arrays.stream(RunStatus.values()).map(RunStatus::wireName).toList();
    }
  }

  /**
   * A step of a workflow run; {@code output} is a failed step's error message instead;
   * {@code childRunId} is the child run of a workflow or agent step (null for others).
   */
  public record StepRow(String index, String id, String type, String status, String attempts, String finished,
      String output, String childRunId) {
    /** Whether the step runs iterations (foreach, parallel), listed among the run's child runs. */
    public boolean iterations() {
      return type.equals("foreach") || type.equals("parallel");
    }
  }

  public record EventRow(String id, String time, String type, String actor, String data) {}

  /** A transcript message: a tool result names its call ({@code call}, else ""), as a turn's calls may be several. */
  public record MessageRow(String role, String call, String text) {}

  /** A tool call waiting for its approval, decided on its own from the run page. */
  public record AskedCall(String id, String name, String arguments) {}

  /**
   * One run: its record (with the run it reruns, or null), steps (a workflow run; a rerun's reused
   * ones say so) or transcript (an agent run), its output (text, or a JSON value pretty-printed when
   * {@code outputIsJson}), events, its child runs (the first ones, newest first; {@code allChildren}
   * links to the rest, null when they are all here), and what may be done.
   */
  public record RunDetail(String id, String kind, String what, String project, String status, String created,
      String updated, String finished, String parentRunId, String rerunOf, String concurrencyKey, String threadId,
      int threadMessagesGiven, String inputs,
      String approval,
      String failure, List<StepRow> steps, List<MessageRow> transcript, String output, boolean outputIsJson, List<EventRow> events,
      List<RunRow> children, String allChildren, String error, int refresh, String signal, String signalUntil,
      List<AskedCall> askedCalls, String live) {

    /** {@code live}: the last event shown of an agent run whose streamed answer shows as it comes (else null). */
    static RunDetail of(Run run, List<Event> events, List<RunMessage> messages, Slice<Run> children, String error,
        int refresh, String live) {
      List<StepRow> steps = new ArrayList<>();
      String signal = null;
      String signalUntil = null;
      if (!run.isAgent() && run.steps() != null) {
        for (JsonNode step : Json.tree(run.steps())) {
          String output = step.path("error").hasNonNull("message") ? step.path("error").path("message").asText()
              : step.path("output").isMissingNode() || step.path("output").isNull() ? "" : shorten(step.path("output"));
          if (step.path("type").asText().equals("wait") && step.path("status").asText().equals("waiting")
              && step.hasNonNull("signal") && !run.isEnded()) {
            signal = step.path("signal").asText();
            signalUntil = time(java.time.Instant.parse(step.path("expires_at").asText()));
            output = "waiting for signal " + signal + " until " + signalUntil;
          }
          steps.add(new StepRow(step.path("index").asText(), step.path("id").asText(""), step.path("type").asText(),
              step.path("status").asText() + (step.path("reused").asBoolean() ? " (reused)" : ""),
              step.path("attempts").isArray() ? String.valueOf(step.path("attempts").size())
                  : step.path("attempts").asText(""),
              step.path("finished_at").isTextual() ? step.path("finished_at").asText().replace('T', ' ') : "", output,
              step.path("child_run_id").asText(null)));
        }
      }
      JsonNode output = run.isAgent() ? (run.steps() == null ? null : Json.tree(run.steps()).path("output"))
          : run.output() == null ? null : Json.tree(run.output());
      boolean outputIsJson = output != null && !output.isTextual() && !output.isNull() && !output.isMissingNode();
      String outputText = output == null || output.isNull() || output.isMissingNode() ? null
          : outputIsJson ? pretty(Json.string(output)) : output.asText();
      List<MessageRow> transcript = messages.stream().map(m -> new MessageRow(m.role(),
          m.toolCallId() == null ? "" : m.toolCallId(), m.content() != null ? m.content() : m.toolCalls() != null ? "calls " + m.toolCalls() : "")).toList();
      List<EventRow> eventRows = events.stream().map(e -> new EventRow(e.id(), time(e.createdAt()), e.type(),
          e.actor(), e.data() == null ? "" : shorten(Json.tree(e.data())))).toList();
      return new RunDetail(run.id(), run.kind(), run.isAgent() ? run.agentId() : run.workflowId(), run.project(),
          run.status(), time(run.createdAt()), time(run.updatedAt()), run.finishedAt() == null ? null
          : time(run.finishedAt()), run.parentRunId(), run.rerunOf(), run.concurrencyKey(), run.threadId(),
          run.isAgent() && run.steps() != null ? Json.tree(run.steps()).path("thread_context_messages").asInt() : 0,
          pretty(run.isAgent() ? null : run.inputs()),
          pretty(run.approval()), pretty(run.error()), steps, transcript, outputText, outputIsJson, eventRows,
          children.rows().stream().map(RunRow::of).toList(),
          children.more() ? "/console/runs?parent_run_id=" + run.id() : null, error, signal != null ? 0 : refresh,
          signal, signalUntil, askedCalls(run), live);
    }

    /** Whether the run waits for a signal (its form then shows). */
    public boolean awaitingSignal() {
      return signal != null;
    }

    /** The tool calls an agent run waits to have approved, when they are several (each may be decided alone). */
    private static List<AskedCall> askedCalls(Run run) {
      List<AskedCall> asked = new ArrayList<>();
      if (run.approval() != null && RunStatus.AWAITING_APPROVAL.wireName().equals(run.status())) {
        for (JsonNode c : Json.tree(run.approval()).path("tool_calls")) {
          asked.add(new AskedCall(c.path("id").asText(), c.path("name").asText(), Json.string(c.path("arguments"))));
        }
      }
      return asked.size() > 1 ? asked : List.of();
    }

    public boolean awaitingApproval() {
      return RunStatus.AWAITING_APPROVAL.wireName().equals(status);
    }

    public boolean cancellable() {
      return !RunStatus.isEnded(status);
    }
  }

  public record DefinitionRow(String id, String name, String description, String summary, String updated,
      boolean archived) {}

  /**
   * The workflows and agents page: a page of workflows (archived ones too), the next page's link (or
   * null), and the agents (on the first page only; {@code paged} on the others).
   */
  public record Definitions(List<DefinitionRow> workflows, List<DefinitionRow> agents, boolean paged, String next) {}

  /** One UTC day's agent tokens of the workspace, and the share of the daily quota they took (null: no quota). */
  public record UsageDay(String day, long tokens, Integer percent) {}

  /** One agent's tokens: today, the last 7 days and the last 14 (today included). */
  public record AgentUsage(String agent, long today, long week, long fortnight) {}

  /** The usage page: the daily quota (null: none), when today's count ends, the days newest first, the agents. */
  public record Usage(Long perDay, String resetsAt, List<UsageDay> days, List<AgentUsage> agents) {}

  /**
   * One step of a workflow's definition: its index, id ("" without one), type, the rest of it as
   * JSON ("" when nothing else; a foreach's or a parallel's steps among it), and the workflow a
   * workflow step starts (null for other steps).
   */
  public record StepDefinitionRow(String index, String id, String type, String definition, String workflow) {}

  /** A CRM trigger: the records' type, the changes that start a run, the runs' project. */
  public record RecordTriggerRow(String objectType, String changes, String project) {}

  /**
   * A schedule: its cron and time zone, or its interval ({@code every}; the others null), what
   * happens to missed times, the runs' project and inputs (JSON), and the next time (null: none,
   * the workflow is archived).
   */
  public record ScheduleRow(String cron, String timezone, String every, String missed, String project, String inputs,
      String next) {}

  /**
   * An inbound webhook: the trigger's index, the sender's signature scheme, the secret it checks
   * with (null for none), the headers its runs get, their project, and the URL senders post to.
   */
  public record HookRow(String index, String verify, String secret, String headers, String project, String url) {}

  /** One workflow, as GET /v1/workflows/{id} shows it (schedules' next times and hooks' URLs included). */
  public record WorkflowDetail(String id, String name, String description, boolean requiresApproval, String created,
      String updated, String archived, List<StepDefinitionRow> steps, List<RecordTriggerRow> recordTriggers,
      List<ScheduleRow> schedules, List<HookRow> hooks, String inputsSchema, String output, Concurrency concurrency) {

    /** A workflow's concurrency setting as its page shows it: the key's template, the limit, what a run past it does. */
    public record Concurrency(String key, int limit, String onLimit) {}

    static WorkflowDetail of(WorkflowView w) {
      List<StepDefinitionRow> steps = new ArrayList<>();
      for (int i = 0; i < w.steps().size(); i++) {
        JsonNode step = w.steps().get(i);
        ObjectNode rest = step.deepCopy();
        rest.remove(List.of("id", "type"));
        String workflow = step.path("type").asText().equals("workflow") && step.path("workflow").isTextual()
            && Slugs.isSlug(step.path("workflow").asText()) ? step.path("workflow").asText() : null;
        steps.add(new StepDefinitionRow(String.valueOf(i), step.path("id").asText(""), step.path("type").asText(),
            rest.isEmpty() ? "" : Json.string(rest), workflow));
      }
      List<RecordTriggerRow> records = new ArrayList<>();
      List<ScheduleRow> schedules = new ArrayList<>();
      List<HookRow> hooks = new ArrayList<>();
      for (int i = 0; i < w.triggers().size(); i++) {
        JsonNode t = w.triggers().get(i);
        if (t.has("webhook")) {
          JsonNode hook = t.path("webhook");
          List<String> headers = new ArrayList<>();
          hook.path("headers").forEach(h -> headers.add(h.asText()));
          hooks.add(new HookRow(String.valueOf(i), hook.path("verify").asText().replace('_', ' '),
              hook.path("secret").asText(null), String.join(", ", headers), t.path("project").asText(),
              t.path("hook_url").asText(null)));
        } else if (t.has("schedule")) {
          JsonNode when = t.path("schedule");
          schedules.add(new ScheduleRow(when.path("cron").asText(null), when.path("timezone").asText(null),
              when.path("every").asText(null), when.path("missed").asText().replace('_', ' '), t.path("project").asText(),
              t.path("inputs").isEmpty() ? null : Json.string(t.path("inputs")),
              t.path("next_run_at").isTextual() ? time(Instant.parse(t.path("next_run_at").asText())) : null));
        } else {
          List<String> on = new ArrayList<>();
          t.path("on").forEach(change -> on.add(change.asText()));
          records.add(new RecordTriggerRow(t.path("crm").asText(), String.join(", ", on), t.path("project").asText()));
        }
      }
      return new WorkflowDetail(w.id(), w.name(), w.description(), w.requiresApproval(), time(w.createdAt()),
          time(w.updatedAt()), w.archivedAt() == null ? null : time(w.archivedAt()), steps, records, schedules, hooks,
          w.inputsSchema() == null ? null : pretty(Json.string(w.inputsSchema())),
          w.output() == null ? null : pretty(Json.string(w.output())),
          w.concurrency() == null ? null : new Concurrency(w.concurrency().path("key").asText(),
              w.concurrency().path("limit").asInt(), w.concurrency().path("on_limit").asText().replace('_', ' ')));
    }

    /** The console's list of the workflow's runs (as GET /v1/runs?workflow=). */
    public String runs() {
      return "/console/runs?workflow=" + id;
    }
  }

  private static String pretty(String json) {
    if (json == null || json.equals("null")) {
      return null;
    }
    try {
      return Json.MAPPER.writerWithDefaultPrettyPrinter().writeValueAsString(Json.tree(json));
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      return json;
    }
  }

  private static String shorten(JsonNode node) {
    String text = node.isTextual() ? node.asText() : node.toString();
    return text.length() > 300 ? text.substring(0, 300) + "…" : text;
  }

  static String time(Instant t) {
    return TIME.format(t);
  }
}

package dev.runway.webhook;

import dev.runway.auth.Principal;
import dev.runway.core.DomainException;
import dev.runway.core.DomainException.Kind;
import dev.runway.core.Ids;
import dev.runway.core.Json;
import dev.runway.core.Time;
import dev.runway.db.GroupCommitter;
import dev.runway.db.Tx;
import dev.runway.metrics.Metrics;
import dev.runway.outbound.SpecialAddresses;
import dev.runway.quota.Quota;
import dev.runway.quota.QuotaDao;
import dev.runway.quota.Quotas;
import dev.runway.secret.SecretBox;
import dev.runway.webhook.WebhookViews.DeliveryDetail;
import dev.runway.webhook.WebhookViews.EndpointView;
import java.net.InetAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.UnknownHostException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;
import org.jdbi.v3.core.Jdbi;

/**
 * Webhook endpoints of a workspace (their secrets encrypted with the server's secrets key), the
 * delivery log, redelivery and recovery. Every change goes through the group commit, so it is
 * ordered with the events whose deliveries it decides.
 */
public final class WebhookService {
  /** How long a rotated secret keeps signing beside the new one. */
  static final Duration PREVIOUS_SECRET_LIFE = Duration.ofHours(24);
  static final String DISABLED_EVENT = "webhook_endpoint.disabled";

  private final Jdbi jdbi;
  private final GroupCommitter committer;
  private final Supplier<SecretBox> box;
  private final WebhookSettings settings;
  private final WebhookOutbox outbox;
  private final Metrics metrics;
  private final Quotas quotas;

  /** The dispatcher counts its attempts' outcomes in {@code metrics}. */
  public WebhookService(Jdbi jdbi, GroupCommitter committer, Supplier<SecretBox> box, WebhookSettings settings,
      Metrics metrics, Quotas quotas) {
    this.jdbi = jdbi;
    this.quotas = quotas;
    this.committer = committer;
    this.box = box;
    this.settings = settings;
    this.metrics = metrics;
    this.outbox = new WebhookOutbox(settings.retryWindow());
    committer.useOutbox(outbox);
  }

  WebhookSettings settings() {
    return settings;
  }

  WebhookOutbox outbox() {
    return outbox;
  }

  Jdbi jdbi() {
    return jdbi;
  }

  GroupCommitter committer() {
    return committer;
  }

  Metrics metrics() {
    return metrics;
  }

  // ---- endpoints ----

  /** A new endpoint, answered with its secret (the only time it is shown). */
  public EndpointView create(Principal caller, String url, List<String> eventTypes, String description) {
    checkUrl(url);
    Instant now = Time.now();
    String id = Ids.newId("we", now.toEpochMilli());
    String secret = Signatures.newSecret();
    WebhookEndpoint endpoint = new WebhookEndpoint(id, caller.workspaceId(), url, description,
        Json.string(eventTypes), true, null, seal(caller.workspaceId(), id, secret), null, null, null, now, now);
    committer.commit(caller.workspaceId(), tx -> {
      // Counted under the workspace's lock the committer holds (one writer on H2): exact.
      quotas.check(Quota.WEBHOOK_ENDPOINTS, caller.workspaceId(),
          () -> tx.dao(QuotaDao.class).webhookEndpoints(caller.workspaceId()));
      tx.dao(WebhookDao.class).insertEndpoint(endpoint);
      return null;
    });
    return EndpointView.of(endpoint, secret);
  }

  public WebhookEndpoint get(Principal caller, String id) {
    return jdbi.withExtension(WebhookDao.class, dao -> dao.endpoint(caller.workspaceId(), id))
        .orElseThrow(() -> endpointNotFound(caller.workspaceId(), id));
  }

  public List<WebhookEndpoint> list(Principal caller, String after, int limit) {
    return jdbi.withExtension(WebhookDao.class, dao -> dao.endpoints(caller.workspaceId(), after, limit));
  }

  /** What a PATCH changes: each field null when not given. */
  public record Changes(String url, List<String> eventTypes, String description, Boolean enabled) {}

  public WebhookEndpoint update(Principal caller, String id, Changes changes) {
    if (changes.url() != null) {
      checkUrl(changes.url());
    }
    return committer.commit(caller.workspaceId(), tx -> {
      WebhookDao dao = tx.dao(WebhookDao.class);
      WebhookEndpoint e = dao.endpoint(caller.workspaceId(), id).orElseThrow(() -> endpointNotFound(caller.workspaceId(), id));
      Instant now = Time.now();
      boolean enabled = changes.enabled() != null ? changes.enabled() : e.enabled();
      boolean disabling = e.enabled() && !enabled;
      WebhookEndpoint next = new WebhookEndpoint(e.id(), e.workspaceId(),
          changes.url() != null ? changes.url() : e.url(),
          changes.description() != null ? changes.description() : e.description(),
          changes.eventTypes() != null ? Json.string(changes.eventTypes()) : e.eventTypes(),
          enabled, enabled ? null : disabling ? "disabled_by_caller" : e.disabledReason(), e.secret(),
          e.previousSecret(), e.previousSecretUntil(), enabled && !e.enabled() ? null : e.failingSince(),
          e.createdAt(), now);
      dao.updateEndpoint(next);
      if (disabling) {
        dao.failPending(id, "the endpoint was disabled", now);
      }
      return next;
    });
  }

  public void delete(Principal caller, String id) {
    committer.commit(caller.workspaceId(), tx -> {
      WebhookDao dao = tx.dao(WebhookDao.class);
      if (dao.endpoint(caller.workspaceId(), id).isEmpty()) {
        throw endpointNotFound(caller.workspaceId(), id);
      }
      dao.deleteAttemptsOf(id);
      dao.deleteDeliveriesOf(id);
      dao.deleteEndpoint(caller.workspaceId(), id);
      return null;
    });
  }

  /** A new secret; the current one keeps signing beside it for 24 hours (one before it stops at once). */
  public EndpointView rotateSecret(Principal caller, String id) {
    String secret = Signatures.newSecret();
    WebhookEndpoint rotated = committer.commit(caller.workspaceId(), tx -> {
      WebhookDao dao = tx.dao(WebhookDao.class);
      WebhookEndpoint e = dao.endpoint(caller.workspaceId(), id).orElseThrow(() -> endpointNotFound(caller.workspaceId(), id));
      Instant now = Time.now();
      WebhookEndpoint next = new WebhookEndpoint(e.id(), e.workspaceId(), e.url(), e.description(), e.eventTypes(),
          e.enabled(), e.disabledReason(), seal(e.workspaceId(), e.id(), secret), e.secret(),
          now.plus(PREVIOUS_SECRET_LIFE), e.failingSince(), e.createdAt(), now);
      dao.updateEndpoint(next);
      return next;
    });
    return EndpointView.of(rotated, secret);
  }

  /** Sends a {@code ping} event to this endpoint alone; answers its delivery. */
  public WebhookDelivery test(Principal caller, String id) {
    return committer.commit(caller.workspaceId(), tx -> {
      WebhookDao dao = tx.dao(WebhookDao.class);
      WebhookEndpoint e = dao.endpoint(caller.workspaceId(), id).orElseThrow(() -> endpointNotFound(caller.workspaceId(), id));
      if (!e.enabled()) {
        throw new DomainException(Kind.CONFLICT, "endpoint_disabled", "this endpoint is disabled (" + e.disabledReason()
            + "): enable it with PATCH {\"enabled\": true} first", "enabled");
      }
      Instant now = Time.now();
      String eventId = Ids.newId("evt", now.toEpochMilli());
      String data = Json.string(Map.of("endpoint_id", id, "message", "a test event from Runway"));
      WebhookOutbox.storeMessage(tx, e.workspaceId(), eventId, "ping", WebhookOutbox.envelope(eventId, "ping", now, data),
          now);
      outbox.storeDelivery(tx, e.workspaceId(), id, eventId, "ping", now, settings.retryWindow());
      tx.flush();
      return dao.deliveries(id, null, null, "ping", 1).get(0);
    });
  }

  // ---- deliveries ----

  public List<WebhookDelivery> deliveries(Principal caller, String endpointId, String after, String status,
      String eventType, int limit) {
    get(caller, endpointId);
    return jdbi.withExtension(WebhookDao.class, dao -> dao.deliveries(endpointId, after, status, eventType, limit));
  }

  public DeliveryDetail delivery(Principal caller, String id) {
    return jdbi.withExtension(WebhookDao.class, dao -> {
      WebhookDelivery d = dao.delivery(caller.workspaceId(), id).orElseThrow(() -> deliveryNotFound(caller.workspaceId(), id));
      return DeliveryDetail.of(d, dao.payload(d.eventId()).orElse("null"), dao.attempts(id));
    });
  }

  /** Makes a delivery due now again (whatever its status), with a new retry window. */
  public DeliveryDetail redeliver(Principal caller, String id) {
    committer.commit(caller.workspaceId(), tx -> {
      WebhookDao dao = tx.dao(WebhookDao.class);
      WebhookDelivery d = dao.delivery(caller.workspaceId(), id).orElseThrow(() -> deliveryNotFound(caller.workspaceId(), id));
      requireEnabled(dao.endpoint(caller.workspaceId(), d.endpointId()).orElseThrow(() -> deliveryNotFound(caller.workspaceId(), id)));
      Instant now = Time.now();
      dao.redeliver(caller.workspaceId(), id, now, now.plus(settings.retryWindow()));
      outbox.deliveriesDue();
      return null;
    });
    return delivery(caller, id);
  }

  /** Makes every failed delivery of the endpoint made since {@code since} due now again; how many. */
  public int recover(Principal caller, String endpointId, Instant since) {
    return committer.commit(caller.workspaceId(), tx -> {
      WebhookDao dao = tx.dao(WebhookDao.class);
      requireEnabled(dao.endpoint(caller.workspaceId(), endpointId).orElseThrow(() -> endpointNotFound(caller.workspaceId(), endpointId)));
      Instant now = Time.now();
      outbox.deliveriesDue();
      return dao.recover(endpointId, since, now, now.plus(settings.retryWindow()));
    });
  }

  private static void requireEnabled(WebhookEndpoint e) {
    if (!e.enabled()) {
      throw new DomainException(Kind.CONFLICT, "endpoint_disabled", "endpoint " + e.id() + " is disabled ("
          + e.disabledReason()
          + "): enable it with PATCH {\"enabled\": true} first", null);
    }
  }

  /** Removes deliveries that ended more than webhooks.retention_hours ago, their attempts and the bodies no delivery needs; how many. */
  public int prune() {
    return prune(Time.now().minus(settings.retention()));
  }

  /** Removes deliveries last changed before {@code before} and ended, their attempts, and bodies no delivery needs. */
  public int prune(Instant before) {
    String deliveriesBefore = Ids.firstOf("del", before.toEpochMilli());
    return jdbi.inTransaction(h -> {
      WebhookDao dao = h.attach(WebhookDao.class);
      dao.pruneAttempts(deliveriesBefore, before);
      int deliveries = dao.pruneDeliveries(deliveriesBefore, before);
      dao.pruneMessages(Ids.firstOf("evt", before.toEpochMilli()));
      return deliveries;
    });
  }

  // ---- what the dispatcher records ----

  /**
   * Disables an endpoint (a 410, or failing for too long): its pending deliveries fail (recover
   * sends them again), and a {@code webhook_endpoint.disabled} event tells the workspace's other
   * endpoints.
   */
  static void disable(Tx tx, WebhookEndpoint e, String reason, Instant now) {
    WebhookDao dao = tx.dao(WebhookDao.class);
    WebhookEndpoint current = dao.endpoint(e.workspaceId(), e.id()).orElse(null);
    if (current == null || !current.enabled()) {
      return;
    }
    WebhookEndpoint disabled = new WebhookEndpoint(current.id(), current.workspaceId(), current.url(),
        current.description(), current.eventTypes(), false, reason, current.secret(), current.previousSecret(),
        current.previousSecretUntil(), current.failingSince(), current.createdAt(), now);
    dao.updateEndpoint(disabled);
    dao.failPending(e.id(), "the endpoint was disabled (" + reason + ")", now);
    tx.outbox().publish(tx, e.workspaceId(), Ids.newId("evt", now.toEpochMilli()), DISABLED_EVENT, now,
        () -> Json.string(EndpointView.of(disabled)));
  }

  /** The endpoint's live secrets, newest first. */
  List<String> secrets(WebhookEndpoint e, Instant now) {
    SecretBox b = box.get();
    try {
      String current = b.decrypt(e.workspaceId(), secretName(e.id()), e.secret());
      if (e.previousSecret() == null || e.previousSecretUntil() == null || !e.previousSecretUntil().isAfter(now)) {
        return List.of(current);
      }
      return List.of(current, b.decrypt(e.workspaceId(), secretName(e.id()), e.previousSecret()));
    } catch (SecretBox.Unreadable unreadable) {
      throw new IllegalStateException(unreadable.getMessage());
    }
  }

  private String seal(String ws, String id, String secret) {
    return box.get().encrypt(ws, secretName(id), secret);
  }

  private static String secretName(String endpointId) {
    return "webhook:" + endpointId;
  }

  /**
   * An absolute http(s) URL without credentials, at most 2,000 characters; an address literal of a
   * private or special network is refused here already unless engine.http.allow_private_networks
   * (names are checked on each delivery, on the addresses they resolve to).
   */
  void checkUrl(String url) {
    URI uri;
    try {
      uri = new URI(url);
    } catch (URISyntaxException e) {
      throw DomainException.invalid("url", "url must be an absolute http or https URL");
    }
    String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
    if (!(scheme.equals("http") || scheme.equals("https")) || uri.getHost() == null || url.length() > 2000) {
      throw DomainException.invalid("url", "url must be an absolute http or https URL of at most 2000 characters");
    }
    if (uri.getRawUserInfo() != null) {
      throw DomainException.invalid("url", "url must not hold a user name or password");
    }
    if (!settings.allowPrivateNetworks() && isSpecialLiteral(uri.getHost())) {
      throw DomainException.invalid("url", "url points to a loopback, private or special-purpose address, which "
          + "webhooks may not call (engine.http.allow_private_networks=true allows it)");
    }
  }

  private static boolean isSpecialLiteral(String host) {
    String h = host.startsWith("[") ? host.substring(1, host.length() - 1) : host;
    if (h.equalsIgnoreCase("localhost") || h.toLowerCase(Locale.ROOT).endsWith(".localhost")) {
      return true;
    }
    if (!h.matches("[0-9.]+|[0-9a-fA-F:.]*:[0-9a-fA-F:.]*")) {
      return false;
    }
    try {
      return SpecialAddresses.isSpecial(InetAddress.getByName(h)); // a literal: no lookup
    } catch (UnknownHostException e) {
      return false;
    }
  }

  static DomainException endpointNotFound(String workspaceId, String id) {
    return DomainException.notFound("webhook_endpoint_not_found", "no webhook endpoint '" + id + "' in workspace '"
        + workspaceId + "'");
  }

  static DomainException deliveryNotFound(String workspaceId, String id) {
    return DomainException.notFound("webhook_delivery_not_found", "no webhook delivery '" + id + "' in workspace '"
        + workspaceId + "'");
  }
}

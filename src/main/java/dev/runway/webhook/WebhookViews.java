package dev.runway.webhook;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonRawValue;
import com.fasterxml.jackson.core.type.TypeReference;
import dev.runway.core.Json;
import java.time.Instant;
import java.util.List;

/** Webhook endpoints, deliveries and attempts as the API shows them. */
public final class WebhookViews {
  private WebhookViews() {}

  /** An endpoint; {@code secret} only in the answer that made it (creation, rotation). */
  public record EndpointView(String id, String url, String description, List<String> eventTypes, boolean enabled,
      String disabledReason, Instant createdAt, Instant updatedAt,
      @JsonInclude(JsonInclude.Include.NON_NULL) String secret) {
    static EndpointView of(WebhookEndpoint e) {
      return of(e, null);
    }

    static EndpointView of(WebhookEndpoint e, String secret) {
      return new EndpointView(e.id(), e.url(), e.description(), WebhookViews.eventTypes(e), e.enabled(), e.disabledReason(),
          e.createdAt(), e.updatedAt(), secret);
    }
  }

  static List<String> eventTypes(WebhookEndpoint e) {
    return Json.MAPPER.convertValue(Json.tree(e.eventTypes()), new TypeReference<List<String>>() {});
  }

  /** A delivery in a list. */
  public record DeliveryView(String id, String endpointId, String eventId, String eventType, String status,
      int attemptCount, Instant nextAttemptAt, Integer lastResponseStatus, String lastError, Instant createdAt,
      Instant updatedAt) {
    static DeliveryView of(WebhookDelivery d) {
      return new DeliveryView(d.id(), d.endpointId(), d.eventId(), d.eventType(), d.status(), d.attempts(),
          d.nextAttemptAt(), d.lastResponseStatus(), d.lastError(), d.createdAt(), d.updatedAt());
    }
  }

  /** One delivery with what was sent and every attempt. */
  public record DeliveryDetail(String id, String endpointId, String eventId, String eventType, String status,
      int attemptCount, Instant nextAttemptAt, Integer lastResponseStatus, String lastError, Instant createdAt,
      Instant updatedAt, @JsonRawValue String payload, List<AttemptView> attempts) {
    static DeliveryDetail of(WebhookDelivery d, String payload, List<WebhookAttempt> attempts) {
      return new DeliveryDetail(d.id(), d.endpointId(), d.eventId(), d.eventType(), d.status(), d.attempts(),
          d.nextAttemptAt(), d.lastResponseStatus(), d.lastError(), d.createdAt(), d.updatedAt(), payload,
          attempts.stream().map(AttemptView::of).toList());
    }
  }

  public record AttemptView(int attempt, Instant startedAt, int durationMs, Integer responseStatus,
      String responseBody, String error) {
    static AttemptView of(WebhookAttempt a) {
      return new AttemptView(a.attempt(), a.startedAt(), a.durationMs(), a.responseStatus(), a.responseBody(),
          a.error());
    }
  }
}

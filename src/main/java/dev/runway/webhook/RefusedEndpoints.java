package dev.runway.webhook;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Says in the log, once per endpoint, that its deliveries are refused by the address guard (a URL
 * on this machine or a private network, accepted while engine.http.allow_private_networks was on):
 * otherwise they wait {@code pending}, retried, with nothing in the log to say why.
 */
final class RefusedEndpoints {
  private static final Logger LOG = LoggerFactory.getLogger(WebhookDispatcher.class);
  /** Past this many endpoints remembered, they are forgotten and each is named once more. */
  private static final int MAX_REMEMBERED = 10_000;

  private final Set<String> named = ConcurrentHashMap.newKeySet();

  void refused(WebhookEndpoint endpoint, String reason) {
    if (named.size() >= MAX_REMEMBERED) {
      named.clear();
    }
    if (named.add(endpoint.id())) {
      LOG.warn("webhook endpoint {} ({}, workspace {}): deliveries are refused and wait pending: {}", endpoint.id(),
          endpoint.url(), endpoint.workspaceId(), reason);
    }
  }
}

package dev.runway.workflow;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.runway.core.DomainException;
import dev.runway.core.Json;
import dev.runway.core.JsonFields;
import dev.runway.secret.SecretReferences;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * A workflow trigger that starts a run for each delivery a sender posts to the trigger's URL
 * ({@code POST /hooks/<hook id>}): {@code {"webhook": {"verify": "github", "secret": "GITHUB_HOOK",
 * "headers": ["x-github-event"]}, "project": "hooks"}}. {@code verify} names the sender's signature
 * scheme ({@code standard_webhooks}, {@code github}, {@code stripe}, or {@code none}), checked against
 * the workspace secret {@code secret}; {@code headers} are the request headers the run gets in
 * {@code inputs.headers} (default: the scheme's delivery headers). {@code position} is the trigger's
 * index in the workflow's {@code triggers}.
 */
public record Hook(int position, Verify verify, String secret, List<String> headers, String project) {
  public static final String DEFAULT_PROJECT = "hooks";
  /** The most headers a hook hands to its runs. */
  public static final int MAX_HEADERS = 20;
  private static final Set<String> FIELDS = Set.of("webhook", "project");
  private static final Set<String> HOOK_FIELDS = Set.of("verify", "secret", "headers");
  private static final Pattern HEADER = Pattern.compile("[a-z0-9!#$%&'*+.^_`|~-]{1,100}");
  /** What a hook id looks like: {@code hook_} and 32 base-32 characters (160 random bits). */
  public static final Pattern ID = Pattern.compile("hook_[a-z2-7]{32}");
  private static final String BASE32 = "abcdefghijklmnopqrstuvwxyz234567";
  private static final SecureRandom RANDOM = new SecureRandom();

  /** A new hook id: 160 random bits, the credential of the hook's URL. */
  public static String newId() {
    byte[] bytes = new byte[20];
    RANDOM.nextBytes(bytes);
    StringBuilder id = new StringBuilder("hook_");
    for (int bit = 0; bit < bytes.length * 8; bit += 5) {
      int value = 0;
      for (int i = 0; i < 5; i++) {
        value = (value << 1) | ((bytes[(bit + i) / 8] >> (7 - (bit + i) % 8)) & 1);
      }
      id.append(BASE32.charAt(value));
    }
    return id.toString();
  }

  /** The signature schemes of senders, each with the headers that name a delivery by default. */
  public enum Verify {
    STANDARD_WEBHOOKS("webhook-id", "webhook-timestamp"),
    GITHUB("x-github-event", "x-github-delivery", "x-github-hook-id"),
    STRIPE(),
    NONE();

    private final List<String> defaultHeaders;

    Verify(String... defaultHeaders) {
      this.defaultHeaders = List.of(defaultHeaders);
    }

    public String wireName() {
      return name().toLowerCase(Locale.ROOT);
    }

    static Verify of(String wireName) {
      for (Verify v : values()) {
        if (v.wireName().equals(wireName)) {
          return v;
        }
      }
      return null;
    }
  }

  /** Reads trigger {@code node} at {@code at} (e.g. {@code triggers[2]}); each fault a 400 naming its field. */
  static Hook parse(int position, ObjectNode node, String at) {
    JsonFields fields = JsonFields.of(node, FIELDS, at + ".");
    JsonNode hook = node.get("webhook");
    String hat = at + ".webhook";
    if (!hook.isObject()) {
      throw DomainException.invalid(hat, hat + " must be an object such as {\"verify\": \"github\", \"secret\": "
          + "\"GITHUB_HOOK\"}, not " + Json.kindOf(hook));
    }
    JsonFields given = JsonFields.of((ObjectNode) hook, HOOK_FIELDS, hat + ".");
    String scheme = given.optionalString("verify", null, 40);
    if (scheme == null) {
      throw DomainException.invalid(hat + ".verify", hat + ".verify is required: \"standard_webhooks\", \"github\", "
          + "\"stripe\", or \"none\" (anyone who has the URL may start runs)");
    }
    Verify verify = Verify.of(scheme);
    if (verify == null) {
      throw DomainException.invalid(hat + ".verify", hat + ".verify must be \"standard_webhooks\", \"github\", "
          + "\"stripe\" or \"none\", not '" + scheme + "'");
    }
    String secret = given.optionalString("secret", null, 64);
    if (verify == Verify.NONE && secret != null) {
      throw DomainException.invalid(hat + ".secret", hat + ".secret goes with a signature scheme: \"verify\": \"none\" "
          + "checks no signature");
    }
    if (verify != Verify.NONE && secret == null) {
      throw DomainException.invalid(hat + ".secret", hat + ".secret is required with \"verify\": \"" + scheme
          + "\": the name of the workspace secret (PUT /v1/secrets/{name}) the sender signs with");
    }
    if (secret != null && !SecretReferences.NAME.matcher(secret).matches()) {
      throw DomainException.invalid(hat + ".secret", hat + ".secret must be a secret's name: "
          + SecretReferences.NAME_RULE);
    }
    List<String> headers = headers((ObjectNode) hook, hat + ".headers", verify);
    String project = node.hasNonNull("project") ? fields.requiredSlug("project") : DEFAULT_PROJECT;
    return new Hook(position, verify, secret, headers, project);
  }

  private static List<String> headers(ObjectNode hook, String at, Verify verify) {
    JsonNode given = hook.get("headers");
    if (given == null || given.isNull()) {
      return verify.defaultHeaders;
    }
    if (!given.isArray() || given.size() > MAX_HEADERS) {
      throw DomainException.invalid(at, at + " must be an array of at most " + MAX_HEADERS + " header names");
    }
    Set<String> names = new LinkedHashSet<>();
    for (int i = 0; i < given.size(); i++) {
      JsonNode name = given.get(i);
      if (!name.isTextual() || !HEADER.matcher(name.textValue().toLowerCase(Locale.ROOT)).matches()) {
        throw DomainException.invalid(at + "[" + i + "]", at + "[" + i + "] must be an HTTP header name such as "
            + "\"x-github-event\"");
      }
      names.add(name.textValue().toLowerCase(Locale.ROOT));
    }
    return new ArrayList<>(names);
  }

  /** The trigger as stored and shown: complete, with its defaults (header names in lower case). */
  public ObjectNode toJson() {
    ObjectNode node = Json.MAPPER.createObjectNode();
    ObjectNode hook = node.putObject("webhook").put("verify", verify.wireName());
    if (secret != null) {
      hook.put("secret", secret);
    }
    ArrayNode names = hook.putArray("headers");
    headers.forEach(names::add);
    return node.put("project", project);
  }

  /** Reads a trigger as stored by {@link #toJson} (trusted: it was checked when the workflow was put). */
  public static Hook ofStored(int position, JsonNode stored) {
    JsonNode hook = stored.get("webhook");
    List<String> headers = new ArrayList<>();
    hook.path("headers").forEach(h -> headers.add(h.textValue()));
    return new Hook(position, Verify.of(hook.get("verify").textValue()),
        hook.hasNonNull("secret") ? hook.get("secret").textValue() : null, headers, stored.get("project").textValue());
  }
}

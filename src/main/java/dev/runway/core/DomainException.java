package dev.runway.core;

import java.util.Map;

/**
 * Something Runway refuses to do, said in the domain's terms (a kind, a stable code, which field): the
 * HTTP layer's one error mapper gives each kind its status, so no service knows about HTTP.
 */
public class DomainException extends RuntimeException {
  /** What went wrong, from the caller's side. */
  public enum Kind {
    /** The input is wrong (a field, a value, a combination). */
    INVALID,
    /** The caller is not who they claim (wrong password, no session). */
    UNAUTHENTICATED,
    /** The caller may not do this. */
    FORBIDDEN,
    NOT_FOUND,
    /** The thing is not in a state that allows this. */
    CONFLICT,
    /** It existed but is gone for good (a pruned cursor). */
    GONE,
    /** The input is larger than Runway takes. */
    TOO_LARGE,
    /** The input is in a form Runway does not read. */
    UNSUPPORTED_FORMAT,
    /** Well-formed but contradicting what was sent before (an idempotency key reused for another request). */
    MISMATCH,
    /** Too many at once or too fast: retry later. */
    TOO_MANY,
    /** Runway cannot take it now (stopping, at a limit of this instance): retry shortly or elsewhere. */
    UNAVAILABLE
  }

  private final Kind kind;
  private final String code;
  private final String param;
  private final long retryAfterSeconds;
  private final Map<String, Object> extensions;

  public DomainException(Kind kind, String code, String detail, String param, long retryAfterSeconds,
      Map<String, Object> extensions) {
    super(detail, null, false, false);
    this.kind = kind;
    this.code = code;
    this.param = param;
    this.retryAfterSeconds = retryAfterSeconds;
    this.extensions = extensions;
  }

  public DomainException(Kind kind, String code, String detail, String param) {
    this(kind, code, detail, param, 0, Map.of());
  }

  public DomainException(Kind kind, String code, String detail) {
    this(kind, code, detail, null, 0, Map.of());
  }

  /** A field's value is wrong: {@code validation_failed} naming the field. */
  public static DomainException invalid(String param, String detail) {
    return new DomainException(Kind.INVALID, "validation_failed", detail, param);
  }

  public static DomainException notFound(String code, String detail) {
    return new DomainException(Kind.NOT_FOUND, code, detail);
  }

  public static DomainException conflict(String code, String detail) {
    return new DomainException(Kind.CONFLICT, code, detail);
  }

  public static DomainException forbidden(String code, String detail, String param) {
    return new DomainException(Kind.FORBIDDEN, code, detail, param);
  }

  /** Too many at once or too fast, with when to try again. */
  public static DomainException tooMany(String code, String detail, long retryAfterSeconds) {
    return new DomainException(Kind.TOO_MANY, code, detail, null, retryAfterSeconds, Map.of());
  }

  /** This instance cannot take it now, with when to try again. */
  public static DomainException unavailable(String detail, long retryAfterSeconds) {
    return new DomainException(Kind.UNAVAILABLE, "unavailable", detail, null, retryAfterSeconds, Map.of());
  }

  public Kind kind() {
    return kind;
  }

  public String code() {
    return code;
  }

  public String param() {
    return param;
  }

  /** Seconds after which a retry may succeed; 0 when unknown or not meant to be retried. */
  public long retryAfterSeconds() {
    return retryAfterSeconds;
  }

  /** Extra members of the problem body, e.g. current_status on a conflict. */
  public Map<String, Object> extensions() {
    return extensions;
  }
}

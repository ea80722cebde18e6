package spades.client;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import spades.client.rpc.BadRequest;
import spades.client.rpc.ErrorInfo;
import spades.v1.Spades.ActionError;

/**
 * A refusal from the server, or a failure to reach it.
 *
 * <p>Switch on {@link #getCode()} and {@link #getReason()} (the {@code ErrorInfo.reason} of the
 * status details, such as {@code NOT_YOUR_TURN}), never on the message, which is for people. A
 * rule refusal also carries {@link #getRule()}, the broken rule in a sentence, and a field
 * violation on {@code action}. The same exception comes from a unary call (parsed from the
 * {@code grpc-status-details-bin} trailer) and from a refused action on a {@link SeatSession}
 * (parsed from {@code ActionResult.error}, which has the bytes of a {@code google.rpc.Status}).
 *
 * <p>A failure without details (the connection dropped, a deadline passed) has an empty reason.
 */
public class SpadesException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** The trailer that carries a google.rpc.Status with the details of a refusal. */
  static final Metadata.Key<byte[]> STATUS_DETAILS_KEY =
      Metadata.Key.of("grpc-status-details-bin", Metadata.BINARY_BYTE_MARSHALLER);

  private static final String ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo";
  private static final String BAD_REQUEST_TYPE = "type.googleapis.com/google.rpc.BadRequest";

  /** The gRPC code. */
  private final Status.Code code;
  /** The status message, for people. */
  private final String statusMessage;
  /** ErrorInfo.reason, or "" without details. */
  private final String reason;
  /** ErrorInfo.domain, or "". */
  private final String domain;
  /** ErrorInfo.metadata, in the order received. */
  private final Map<String, String> metadata;
  /** BadRequest.field_violations. */
  private final List<BadRequest.FieldViolation> fieldViolations;

  /**
   * A refusal made of its parts (for tests and for callers that build their own).
   *
   * @param code the gRPC code
   * @param statusMessage the status message
   * @param reason the ErrorInfo reason, or "" for none
   * @param domain the ErrorInfo domain, or ""
   * @param metadata the ErrorInfo metadata
   * @param fieldViolations the BadRequest field violations
   * @param cause the exception it comes from, or null
   */
  public SpadesException(
      Status.Code code,
      String statusMessage,
      String reason,
      String domain,
      Map<String, String> metadata,
      List<BadRequest.FieldViolation> fieldViolations,
      Throwable cause) {
    super(summary(code, reason, statusMessage), cause);
    this.code = code;
    this.statusMessage = statusMessage == null ? "" : statusMessage;
    this.reason = reason == null ? "" : reason;
    this.domain = domain == null ? "" : domain;
    this.metadata = Collections.unmodifiableMap(new LinkedHashMap<>(metadata));
    this.fieldViolations = Collections.unmodifiableList(new ArrayList<>(fieldViolations));
  }

  private static String summary(Status.Code code, String reason, String message) {
    StringBuilder b = new StringBuilder(code.name());
    if (reason != null && !reason.isEmpty()) {
      b.append(' ').append(reason);
    }
    if (message != null && !message.isEmpty()) {
      b.append(": ").append(message);
    }
    return b.toString();
  }

  /**
   * The exception for any failure of a call: a {@link StatusRuntimeException} or {@link
   * StatusException} with its trailers parsed, a {@code SpadesException} as it is, anything else
   * as {@code UNKNOWN}.
   *
   * @param t what the call failed with
   * @return the exception to throw
   */
  public static SpadesException from(Throwable t) {
    if (t instanceof SpadesException) {
      return (SpadesException) t;
    }
    if (t instanceof StatusRuntimeException) {
      StatusRuntimeException e = (StatusRuntimeException) t;
      return fromStatus(e.getStatus(), e.getTrailers(), e);
    }
    if (t instanceof StatusException) {
      StatusException e = (StatusException) t;
      return fromStatus(e.getStatus(), e.getTrailers(), e);
    }
    return fromStatus(Status.fromThrowable(t), Status.trailersFromThrowable(t), t);
  }

  /**
   * The exception for a call that ended with {@code status} and {@code trailers}.
   *
   * @param status the call's status
   * @param trailers its trailers, or null
   * @param cause the exception it comes from, or null
   * @return the exception
   */
  public static SpadesException fromStatus(Status status, Metadata trailers, Throwable cause) {
    spades.client.rpc.Status details = null;
    if (trailers != null) {
      byte[] bytes = trailers.get(STATUS_DETAILS_KEY);
      if (bytes != null) {
        try {
          details = spades.client.rpc.Status.parseFrom(bytes);
        } catch (InvalidProtocolBufferException e) {
          details = null; // a malformed trailer: keep the bare status
        }
      }
    }
    String message = status.getDescription();
    if (details != null && details.getCode() == status.getCode().value()) {
      return fromStatusProto(details, cause == null ? status.asRuntimeException(trailers) : cause);
    }
    return new SpadesException(
        status.getCode(),
        message,
        "",
        "",
        Collections.emptyMap(),
        Collections.emptyList(),
        cause == null ? status.getCause() : cause);
  }

  /**
   * The exception for a refused action on a Play call ({@code ActionResult.error}).
   *
   * @param error the result's error
   * @return the exception
   */
  public static SpadesException fromActionError(ActionError error) {
    try {
      return fromStatusProto(spades.client.rpc.Status.parseFrom(error.toByteString()), null);
    } catch (InvalidProtocolBufferException e) {
      // Cannot happen: ActionError and Status have the same fields.
      return new SpadesException(
          Status.Code.UNKNOWN,
          error.getMessage(),
          "",
          "",
          Collections.emptyMap(),
          Collections.emptyList(),
          e);
    }
  }

  /**
   * The exception for a google.rpc.Status.
   *
   * @param status the status, details included
   * @param cause the exception it comes from, or null
   * @return the exception
   */
  public static SpadesException fromStatusProto(spades.client.rpc.Status status, Throwable cause) {
    String reason = "";
    String domain = "";
    Map<String, String> metadata = Collections.emptyMap();
    List<BadRequest.FieldViolation> violations = new ArrayList<>();
    for (Any any : status.getDetailsList()) {
      try {
        if (ERROR_INFO_TYPE.equals(any.getTypeUrl()) && reason.isEmpty()) {
          ErrorInfo info = ErrorInfo.parseFrom(any.getValue());
          reason = info.getReason();
          domain = info.getDomain();
          metadata = info.getMetadataMap();
        } else if (BAD_REQUEST_TYPE.equals(any.getTypeUrl())) {
          violations.addAll(BadRequest.parseFrom(any.getValue()).getFieldViolationsList());
        }
      } catch (InvalidProtocolBufferException e) {
        // A detail this client cannot read is left out; the others still count.
      }
    }
    return new SpadesException(
        Status.fromCodeValue(status.getCode()).getCode(),
        status.getMessage(),
        reason,
        domain,
        metadata,
        violations,
        cause);
  }

  /**
   * The gRPC code, such as {@code FAILED_PRECONDITION}.
   *
   * @return the code
   */
  public Status.Code getCode() {
    return code;
  }

  /**
   * The stable reason ({@code ErrorInfo.reason}), such as {@code MUST_FOLLOW_SUIT}; "" when the
   * status had no details (a transport failure).
   *
   * @return the reason
   */
  public String getReason() {
    return reason;
  }

  /**
   * The ErrorInfo domain, {@code spades.v1} for this service's refusals.
   *
   * @return the domain, or ""
   */
  public String getDomain() {
    return domain;
  }

  /**
   * The ErrorInfo metadata ({@code rule}, {@code current_seq}, {@code value}, ...).
   *
   * @return an unmodifiable map
   */
  public Map<String, String> getMetadata() {
    return metadata;
  }

  /**
   * The broken rule in a sentence ({@code ErrorInfo.metadata["rule"]}), on a rule refusal.
   *
   * @return the rule, or null
   */
  public String getRule() {
    return metadata.get("rule");
  }

  /**
   * {@code metadata["current_seq"]} of STALE_SEQUENCE and FUTURE_SEQUENCE: the latest event this
   * seat may see.
   *
   * @return the sequence number, or null
   */
  public Long getCurrentSeq() {
    String v = metadata.get("current_seq");
    if (v == null) {
      return null;
    }
    try {
      return Long.parseUnsignedLong(v);
    } catch (NumberFormatException e) {
      return null;
    }
  }

  /**
   * The fields at fault ({@code BadRequest.field_violations}): {@code action} for a rule refusal,
   * a path such as {@code seats[2].name} for bad input.
   *
   * @return an unmodifiable list
   */
  public List<BadRequest.FieldViolation> getFieldViolations() {
    return fieldViolations;
  }

  /**
   * The status message as the server wrote it, for people.
   *
   * @return the message, or ""
   */
  public String getStatusMessage() {
    return statusMessage;
  }
}

// Refusals as one error type, whether they came as the status of a unary call
// or as ActionResult.error on a Play call.
import { fromBinary, type MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { BadRequestSchema, ErrorInfoSchema, type BadRequest, type ErrorInfo } from "./gen/google/rpc/error_details_pb.js";
import type { ActionError } from "./gen/spades/v1/spades_pb.js";

export { Code };

/** The gRPC status codes by their canonical names (`FAILED_PRECONDITION`, ...). */
const CODE_NAMES: Readonly<Record<number, string>> = {
  0: "OK",
  1: "CANCELLED",
  2: "UNKNOWN",
  3: "INVALID_ARGUMENT",
  4: "DEADLINE_EXCEEDED",
  5: "NOT_FOUND",
  6: "ALREADY_EXISTS",
  7: "PERMISSION_DENIED",
  8: "RESOURCE_EXHAUSTED",
  9: "FAILED_PRECONDITION",
  10: "ABORTED",
  11: "OUT_OF_RANGE",
  12: "UNIMPLEMENTED",
  13: "INTERNAL",
  14: "UNAVAILABLE",
  15: "DATA_LOSS",
  16: "UNAUTHENTICATED",
};

/** The canonical name of a gRPC status code: `codeName(9)` is `"FAILED_PRECONDITION"`. */
export function codeName(code: number): string {
  return CODE_NAMES[code] ?? `CODE_${code}`;
}

/** One entry of a google.rpc.BadRequest: which field of the request is at fault. */
export interface FieldViolation {
  readonly field: string;
  readonly description: string;
}

const ERROR_INFO = "google.rpc.ErrorInfo";

/**
 * A detail whose type is written as a type URL (`type.googleapis.com/google.rpc.ErrorInfo`)
 * rather than the type's name, which is all `findDetails` matches: Envoy's
 * connect_grpc_bridge (1.40) copies google.protobuf.Any's type_url into a
 * Connect error's details as it is.
 */
function detailByTypeUrl<Desc extends typeof ErrorInfoSchema | typeof BadRequestSchema>(
  err: ConnectError,
  schema: Desc,
): MessageShape<Desc> | undefined {
  for (const detail of err.details) {
    if ("desc" in detail || detail.type.slice(detail.type.lastIndexOf("/") + 1) !== schema.typeName) {
      continue;
    }
    try {
      return fromBinary(schema, detail.value);
    } catch {
      return undefined;
    }
  }
  return undefined;
}
const BAD_REQUEST = "google.rpc.BadRequest";

/**
 * A call or an action the server refused, or a call that failed on the way.
 *
 * Switch on `code` and `reason`, never on `message` (which is for people).
 * `rule` is the sentence of the broken rule for the rules' refusals
 * (`MUST_FOLLOW_SUIT`: "a player who holds the suit led must follow it").
 * A failure below the service (a dropped connection, a deadline) has a code
 * and no `reason`.
 */
export class SpadesError extends Error {
  override readonly name = "SpadesError";
  /** The gRPC status code (connect's `Code` has the same numbers). */
  readonly code: Code;
  /** ErrorInfo.reason: `MUST_FOLLOW_SUIT`, `STALE_SEQUENCE`, ... ("" when there is none). */
  readonly reason: string;
  /** ErrorInfo.domain: `spades.v1` for the service's own refusals. */
  readonly domain: string;
  /** ErrorInfo.metadata (`rule`, `current_seq`, ...). */
  readonly metadata: Readonly<Record<string, string>>;
  /** BadRequest.field_violations: the request's fields at fault. */
  readonly fieldViolations: readonly FieldViolation[];

  constructor(
    code: Code,
    message: string,
    init: {
      reason?: string;
      domain?: string;
      metadata?: Record<string, string>;
      fieldViolations?: FieldViolation[];
      cause?: unknown;
    } = {},
  ) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = code;
    this.reason = init.reason ?? "";
    this.domain = init.domain ?? "";
    this.metadata = Object.freeze({ ...(init.metadata ?? {}) });
    this.fieldViolations = Object.freeze([...(init.fieldViolations ?? [])]);
  }

  /** The canonical name of `code`: `FAILED_PRECONDITION`, `UNAUTHENTICATED`, ... */
  get codeName(): string {
    return codeName(this.code);
  }

  /** ErrorInfo.metadata["rule"]: the broken rule's sentence, for the rules' refusals. */
  get rule(): string | undefined {
    return this.metadata["rule"];
  }

  /** Any error from a call (a ConnectError, an abort, anything thrown) as a SpadesError. */
  static from(reason: unknown): SpadesError {
    if (reason instanceof SpadesError) {
      return reason;
    }
    const err = ConnectError.from(reason);
    const info = err.findDetails(ErrorInfoSchema)[0] ?? detailByTypeUrl(err, ErrorInfoSchema);
    const bad = err.findDetails(BadRequestSchema)[0] ?? detailByTypeUrl(err, BadRequestSchema);
    return SpadesError.build(err.code, err.rawMessage, info, bad, reason);
  }

  /** A refusal on a Play call (ActionResult.error, the fields of google.rpc.Status). */
  static fromActionError(error: ActionError): SpadesError {
    let info: ErrorInfo | undefined;
    let bad: BadRequest | undefined;
    for (const any of error.details) {
      const type = any.typeUrl.slice(any.typeUrl.lastIndexOf("/") + 1);
      if (type === ERROR_INFO && info === undefined) {
        info = fromBinary(ErrorInfoSchema, any.value);
      } else if (type === BAD_REQUEST && bad === undefined) {
        bad = fromBinary(BadRequestSchema, any.value);
      }
    }
    return SpadesError.build(error.code as Code, error.message, info, bad, undefined);
  }

  private static build(
    code: Code,
    message: string,
    info: ErrorInfo | undefined,
    bad: BadRequest | undefined,
    cause: unknown,
  ): SpadesError {
    return new SpadesError(code, message, {
      reason: info?.reason ?? "",
      domain: info?.domain ?? "",
      metadata: info?.metadata ?? {},
      fieldViolations: (bad?.fieldViolations ?? []).map((v) => ({ field: v.field, description: v.description })),
      cause,
    });
  }
}

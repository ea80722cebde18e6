"""Every refusal as a gRPC status with google.rpc details.

Each error carries an ErrorInfo with a stable reason (the same strings as the
engine's ``Reason`` for rule violations), and a BadRequest naming the field or
the rule when the client sent something wrong.  Clients switch on the reason,
never on the message.
"""

from __future__ import annotations

import grpc
import structlog
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2

DOMAIN = "spades.v1"
log = structlog.get_logger("spades.errors")


class ServiceError(Exception):
    """A refusal to send back as a gRPC status; raised anywhere in a handler."""

    def __init__(
        self,
        code: grpc.StatusCode,
        reason: str,
        message: str,
        *,
        fields: tuple[str, ...] = (),
        metadata: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.fields = fields
        self.metadata = metadata or {}

    def to_status(self) -> status_pb2.Status:
        info = error_details_pb2.ErrorInfo(reason=self.reason, domain=DOMAIN)
        info.metadata.update(self.metadata)
        details = [info]
        packed = []
        for d in details:
            a = any_pb2.Any()
            a.Pack(d)
            packed.append(a)
        if self.fields:
            bad = error_details_pb2.BadRequest()
            for f in self.fields:
                bad.field_violations.add(field=f, description=self.message)
            a = any_pb2.Any()
            a.Pack(bad)
            packed.append(a)
        return status_pb2.Status(code=self.code.value[0], message=self.message, details=packed)


def invalid(reason: str, message: str, *fields: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, reason, message, fields=fields)


def not_found(what: str, ident: str) -> ServiceError:
    return ServiceError(
        grpc.StatusCode.NOT_FOUND, f"{what.upper()}_NOT_FOUND", f"no {what} {ident!r}"
    )


def unauthenticated(message: str, reason: str = "UNAUTHENTICATED") -> ServiceError:
    return ServiceError(grpc.StatusCode.UNAUTHENTICATED, reason, message)


def denied(reason: str, message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.PERMISSION_DENIED, reason, message)


def exhausted(reason: str, message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.RESOURCE_EXHAUSTED, reason, message)


def precondition(reason: str, message: str, **metadata: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.FAILED_PRECONDITION, reason, message, metadata=metadata)


def unavailable(reason: str, message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.UNAVAILABLE, reason, message)


def store_message(what: str, error: Exception) -> str:
    """A store failure as a client may read it: ``what`` and the error's
    public part; the whole error goes to the server's log."""
    log.warning("store failure", error=str(error), kind=type(error).__name__)
    public = getattr(error, "public", "")
    return f"{what}: {public}" if public else what

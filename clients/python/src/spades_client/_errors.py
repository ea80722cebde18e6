"""Refusals as one exception type, ``SpadesError``, whatever way they came.

The server answers every refusal with a gRPC status whose details hold a
``google.rpc.ErrorInfo`` (the stable ``reason``, and ``metadata`` such as the
broken ``rule``) and, for bad input, a ``google.rpc.BadRequest`` (the fields at
fault). A unary call carries it in the status's trailing details; a refused
action on a ``Play`` call carries the same fields in ``ActionResult.error``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2

from ._gen.spades.v1 import lobby_pb2 as lpb
from ._gen.spades.v1 import spades_pb2 as pb

__all__ = [
    "ConnectionLost",
    "FieldViolation",
    "SessionClosed",
    "SpadesError",
    "TableClosed",
    "TicketCancelled",
]

_STATUS_DETAILS_KEY = "grpc-status-details-bin"
_CODES = {c.value[0]: c for c in grpc.StatusCode}


@dataclass(frozen=True, slots=True)
class FieldViolation:
    """One entry of a ``google.rpc.BadRequest``: the field path and what is wrong."""

    field: str
    description: str


class SpadesError(Exception):
    """A call or an action the server refused, or a session that could not go on.

    Switch on ``code`` and ``reason``, never on ``message`` (for people).

    - ``code``: the gRPC status code (``grpc.StatusCode.FAILED_PRECONDITION``, ...);
    - ``reason``: ``ErrorInfo.reason`` (``"MUST_FOLLOW_SUIT"``), ``""`` if none came
      (a transport failure);
    - ``rule``: ``ErrorInfo.metadata["rule"]``, the broken rule in a sentence,
      for rule refusals (else None);
    - ``metadata``: all of ``ErrorInfo.metadata`` (``current_seq`` for
      ``STALE_SEQUENCE``, ...);
    - ``field_violations``: the ``BadRequest`` entries (``action``, ``seats[2].name``);
    - ``domain``: ``ErrorInfo.domain`` (``"spades.v1"``).
    """

    def __init__(
        self,
        code: grpc.StatusCode,
        message: str,
        *,
        reason: str = "",
        metadata: Mapping[str, str] | None = None,
        field_violations: Iterable[FieldViolation] = (),
        domain: str = "",
    ) -> None:
        super().__init__(f"{code.name}{f' {reason}' if reason else ''}: {message}")
        self.code = code
        self.message = message
        self.reason = reason
        self.metadata: dict[str, str] = dict(metadata or {})
        self.field_violations: tuple[FieldViolation, ...] = tuple(field_violations)
        self.domain = domain

    @property
    def rule(self) -> str | None:
        return self.metadata.get("rule")

    @property
    def fields(self) -> tuple[str, ...]:
        """The field paths of ``field_violations``."""
        return tuple(v.field for v in self.field_violations)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code.name}, {self.reason!r}, {self.message!r})"

    # -- building ----------------------------------------------------------------
    @classmethod
    def from_status(cls, code: int, message: str, details: Iterable[any_pb2.Any]) -> SpadesError:
        """From the fields of a ``google.rpc.Status`` (a numeric code)."""
        status_code = _CODES.get(code, grpc.StatusCode.UNKNOWN)
        reason, domain = "", ""
        metadata: dict[str, str] = {}
        violations: list[FieldViolation] = []
        for detail in details:
            if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info: Any = error_details_pb2.ErrorInfo()
                detail.Unpack(info)
                reason, domain = str(info.reason), str(info.domain)
                metadata = {str(k): str(v) for k, v in info.metadata.items()}
            elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                bad: Any = error_details_pb2.BadRequest()
                detail.Unpack(bad)
                violations += [
                    FieldViolation(str(v.field), str(v.description)) for v in bad.field_violations
                ]
        return cls(
            status_code,
            message,
            reason=reason,
            metadata=metadata,
            field_violations=violations,
            domain=domain,
        )

    @classmethod
    def from_action_error(cls, error: pb.ActionError) -> SpadesError:
        """From the ``error`` of a ``Play`` call's ``ActionResult``."""
        return cls.from_status(error.code, error.message, error.details)

    @classmethod
    def from_rpc_error(cls, error: grpc.RpcError) -> SpadesError:
        """From a failed call (``grpc.aio.AioRpcError``, or a synchronous call's error)."""
        # Both kinds have code(), details() and trailing_metadata(); grpc.RpcError
        # itself declares none of them.
        call: Any = error
        code: grpc.StatusCode = call.code() if hasattr(call, "code") else grpc.StatusCode.UNKNOWN
        message = str(call.details() or "") if hasattr(call, "details") else str(error)
        trailing = call.trailing_metadata() if hasattr(call, "trailing_metadata") else None
        for key, value in trailing or ():
            if key == _STATUS_DETAILS_KEY and isinstance(value, bytes):
                status: Any = status_pb2.Status.FromString(value)
                if status.code == code.value[0]:
                    return cls.from_status(int(status.code), str(status.message), status.details)
        return cls(code, message)


class SessionClosed(SpadesError):
    """The session was closed (by this client) before the action's result came."""

    def __init__(self, message: str = "the session is closed") -> None:
        super().__init__(grpc.StatusCode.CANCELLED, message)


class ConnectionLost(SpadesError):
    """The session gave up reconnecting: ``cause`` is the last failure."""

    def __init__(self, attempts: int, cause: SpadesError) -> None:
        super().__init__(
            cause.code,
            f"gave up after {attempts} attempts to reconnect: {cause.message}",
            reason=cause.reason,
            metadata=cause.metadata,
            field_violations=cause.field_violations,
            domain=cause.domain,
        )
        self.attempts = attempts
        self.cause = cause


class TicketCancelled(SpadesError):
    """A quick play ticket that was waited on ended without a seat: withdrawn
    (``CancelTicket``, by either player of a party) or the partner never came.
    ``reason`` is ``TICKET_CANCELLED``; ``metadata["cancel_reason"]`` the
    ticket's (``cancelled``, ``partner_did_not_join``); ``ticket`` the ticket."""

    def __init__(self, ticket: lpb.Ticket) -> None:
        why = ticket.cancel_reason or "cancelled"
        super().__init__(
            grpc.StatusCode.FAILED_PRECONDITION,
            f"ticket {ticket.ticket_id} was cancelled ({why})",
            reason="TICKET_CANCELLED",
            metadata={"ticket_id": ticket.ticket_id, "cancel_reason": ticket.cancel_reason},
        )
        self.ticket = ticket


class TableClosed(SpadesError):
    """A table (or a rematch) that was waited on closed without a match.
    ``reason`` is ``TABLE_CLOSED``, as the server's own refusal to join a
    closed table; ``metadata["close_reason"]`` the table's (``unattended``,
    ``empty``, ``declined``, ``expired``); ``table`` the table."""

    def __init__(self, table: lpb.Table) -> None:
        super().__init__(
            grpc.StatusCode.FAILED_PRECONDITION,
            f"table {table.table_id} is closed ({table.close_reason or 'closed'})",
            reason="TABLE_CLOSED",
            metadata={"table_id": table.table_id, "close_reason": table.close_reason},
        )
        self.table = table

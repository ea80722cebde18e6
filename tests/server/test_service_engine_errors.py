"""A refusal of the engine that has no status of its own (a bad deal, action
text or card) reaches a client as INVALID_ARGUMENT with a stable reason, never
as INTERNAL."""

from __future__ import annotations

import grpc
import pytest
from spades_server.service import service_error

from spades_engine import (
    CardError,
    Match,
    SpadesError,
    parse_action,
    preset,
)


def _raised(call: object) -> SpadesError:
    with pytest.raises(SpadesError) as info:
        call()  # type: ignore[operator]
    return info.value


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (_raised(lambda: Match(preset("classic"), seed=None)), "INVALID_DEAL"),  # type: ignore[arg-type]
        (_raised(lambda: Match(preset("classic"), dealer=9)), "INVALID_DEAL"),
        (_raised(lambda: parse_action("jump")), "INVALID_ACTION"),
        (CardError("99 is not a card index"), "INVALID_CARD"),
        (SpadesError("some other refusal"), "INVALID_ARGUMENT"),
    ],
)
def test_engine_refusals_are_invalid_argument(exc: SpadesError, reason: str) -> None:
    err = service_error(exc)
    assert (err.code, err.reason) == (grpc.StatusCode.INVALID_ARGUMENT, reason)
    assert err.message == str(exc)


def test_a_bug_is_still_internal() -> None:
    assert service_error(TypeError("boom")).code is grpc.StatusCode.INTERNAL

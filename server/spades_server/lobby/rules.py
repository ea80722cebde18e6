"""A lobby request's rules: checked by the engine, resolved, and keyed.

Two requests that resolve to the same rules (the ``german`` preset, or the
classic one with every option German) share a queue and a lobby filter: the
key is a hash of the resolved ruleset, not of how the request spelled it.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from functools import lru_cache

from spades_engine import Ruleset, RulesetError

from .. import convert
from ..gen.spades.v1 import spades_pb2 as pb

MAX_PRESET = 32


@dataclass(frozen=True, slots=True)
class Rules:
    engine: Ruleset
    request: pb.Ruleset  # as asked (shown back in Table.ruleset)
    stored: str  # ``request`` serialized, base64 (the documents' form)
    key: str
    resolved: pb.ResolvedRuleset


def from_request(msg: pb.Ruleset) -> Rules:
    """The rules of a request; the engine's ``RulesetError`` (naming the
    options) when they cannot be played."""
    if len(msg.preset) > MAX_PRESET:
        raise RulesetError(f"preset names are at most {MAX_PRESET} characters", ("preset",))
    return stored(base64.b64encode(msg.SerializeToString(deterministic=True)).decode())


@lru_cache(maxsize=1024)
def stored(data: str) -> Rules:
    """The rules of a document's ``ruleset`` (cached: every table shown in the
    lobby resolves its rules)."""
    request = pb.Ruleset.FromString(base64.b64decode(data))
    engine = convert.ruleset_from_pb(request)
    resolved = convert.resolved_ruleset_pb(engine)
    return Rules(engine, request, data, key_of(resolved), resolved)


def key_of(resolved: pb.ResolvedRuleset) -> str:
    digest = hashlib.sha256(resolved.SerializeToString(deterministic=True)).hexdigest()
    return digest[:24]


def of_engine(rules: Ruleset) -> Rules:
    """Rules known only as the engine's (a match's, for its rematch)."""
    return from_request(convert.ruleset_to_pb(rules))

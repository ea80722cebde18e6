"""Player credentials: "bring your own identity".

Players belong to the game, not to this service. A player proves who they
are with a JWT the game's identity provider signed (the ``authorization``
metadata, ``Bearer <jwt>``; ``auth.bearer`` reads it). ``PlayerAuth`` checks
it and answers a ``Player``, or refuses it with ``UNAUTHENTICATED`` and one
ErrorInfo reason (proto/spades/v1/lobby.proto):

- ``CREDENTIAL_REQUIRED``: no credential;
- ``MALFORMED_CREDENTIAL``: not a signed JWT (three base64url parts of JSON),
  longer than 8 KiB, a claim of the wrong type, an unusable player id;
- ``ALGORITHM_NOT_ALLOWED``: ``alg`` is ``none`` or not one of the key's
  algorithms (the allowed set comes from the configured key, never from the
  token: an HS256 token "signed" with an RSA public key's PEM is refused);
- ``UNKNOWN_KEY``: a key set (JWKS) without the token's ``kid``;
- ``BAD_SIGNATURE``;
- ``MISSING_CLAIM``: ``exp``, ``iss``, ``aud`` and the id claim are required
  (ErrorInfo metadata ``claim`` names the first one missing);
- ``CREDENTIAL_EXPIRED``, ``CREDENTIAL_NOT_YET_VALID`` (``nbf`` or ``iat`` in
  the future), both with the configured leeway;
- ``WRONG_ISSUER``, ``WRONG_AUDIENCE``.

Exactly one key source: a PEM public key (or certificate) file, a JWKS file
(read again when it changes, so keys rotate by rewriting it), or an HMAC
secret (development). Without one, player credentials are off and
``verify`` answers ``FAILED_PRECONDITION`` ``PLAYER_CREDENTIALS_OFF``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import threading
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import grpc
import jwt
import structlog
from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from jwt.algorithms import AllowedPublicKeys, ECAlgorithm, OKPAlgorithm, RSAAlgorithm

from .errors import ServiceError, precondition

log = structlog.get_logger("spades.players")

MAX_CREDENTIAL: Final = 8192  # characters of a credential (8 KiB)
MAX_PLAYER_ID: Final = 128
MAX_NAME: Final = 64
MAX_KEY_FILE: Final = 1024 * 1024
MIN_HMAC_SECRET: Final = 32  # bytes
MIN_RSA_BITS: Final = 2048
DEFAULT_LEEWAY_S: Final = 30.0
JWKS_CHECK_S: Final = 3.0  # how often, at most, the JWKS file's mtime is looked at

# The guest credentials `make run` hands out (spades_server.webapp, /api/guest).
GUEST_ISSUER: Final = "spades-guest"
GUEST_AUDIENCE: Final = "spades"

RSA_ALGORITHMS: Final = frozenset(("RS256", "RS384", "RS512", "PS256", "PS384", "PS512"))
EC_ALGORITHMS: Final = {"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}
EDDSA: Final = frozenset(("EdDSA",))
# An HMAC key at least as long as the hash's output (RFC 7518, 3.2).
HMAC_ALGORITHMS: Final = {"HS256": 32, "HS384": 48, "HS512": 64}
_EC_CURVES: Final = {"secp256r1": "P-256", "secp384r1": "P-384", "secp521r1": "P-521"}
# Zero-width (non-)joiners stay in names: emoji sequences are made with them.
_JOINERS: Final = frozenset("\u200c\u200d")

OFF_MESSAGE: Final = (
    "player credentials are off on this server: start it with one key source "
    "(--player-public-key, --player-jwks or --player-hs256-secret) and with "
    "--player-issuer and --player-audience"
)


@dataclass(frozen=True)
class Player:
    """A player as their credential names them: ``id`` is stable, ``name`` is shown."""

    id: str
    name: str


class PlayerAuthConfigError(ValueError):
    """A player credential setting that cannot work; the message says why."""


def _refuse(reason: str, message: str, **metadata: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.UNAUTHENTICATED, reason, message, metadata=metadata)


def _malformed(what: str) -> ServiceError:
    return _refuse("MALFORMED_CREDENTIAL", f"malformed player credential: {what}")


def _shown(value: object, limit: int = 40) -> str:
    """A value of an unverified token, safe to quote in a message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- keys ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class VerifyingKey:
    """One key and the algorithms it may verify (from the key, never the token)."""

    key: AllowedPublicKeys | bytes
    algorithms: frozenset[str]
    kid: str | None = None


def algorithms_of(key: object) -> frozenset[str]:
    """The JWS algorithms a public key may verify; PlayerAuthConfigError if none."""
    if isinstance(key, rsa.RSAPublicKey):
        if key.key_size < MIN_RSA_BITS:
            raise PlayerAuthConfigError(
                f"an RSA key of {key.key_size} bits; at least {MIN_RSA_BITS} are needed"
            )
        return RSA_ALGORITHMS
    if isinstance(key, ec.EllipticCurvePublicKey):
        crv = _EC_CURVES.get(key.curve.name)
        if crv is None:
            raise PlayerAuthConfigError(
                f"an EC key on {key.curve.name}; P-256, P-384 or P-521 are accepted"
            )
        return frozenset((EC_ALGORITHMS[crv],))
    if isinstance(key, (ed25519.Ed25519PublicKey, ed448.Ed448PublicKey)):
        return EDDSA
    raise PlayerAuthConfigError(
        f"a {type(key).__name__}; RSA, EC (P-256, P-384, P-521), Ed25519 or Ed448 "
        "public keys are accepted"
    )


def _read(path: str | os.PathLike[str]) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_KEY_FILE + 1)
    except OSError as e:
        raise PlayerAuthConfigError(f"cannot read {os.fspath(path)}: {e.strerror or e}") from None
    if len(data) > MAX_KEY_FILE:
        raise PlayerAuthConfigError(f"{os.fspath(path)} is larger than {MAX_KEY_FILE} bytes")
    return data


def load_public_key(data: bytes) -> VerifyingKey:
    """A PEM public key (``BEGIN PUBLIC KEY``, ``BEGIN RSA PUBLIC KEY``) or
    certificate (its key); never a private key, which the server must not hold."""
    if b"PRIVATE KEY" in data:
        raise PlayerAuthConfigError("this is a private key; give the server the public key only")
    key: Any
    try:
        if b"BEGIN CERTIFICATE" in data:
            key = x509.load_pem_x509_certificate(data).public_key()
        else:
            key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError, UnsupportedAlgorithm) as e:
        raise PlayerAuthConfigError(f"not a PEM public key or certificate ({e})") from None
    return VerifyingKey(key, algorithms_of(key))


def _jwk_key(jwk: Mapping[str, Any]) -> Any:
    kty = jwk.get("kty")
    if kty == "RSA":
        return RSAAlgorithm.from_jwk(dict(jwk))
    if kty == "EC":
        return ECAlgorithm.from_jwk(dict(jwk))
    return OKPAlgorithm.from_jwk(dict(jwk))


def parse_jwks(data: bytes) -> tuple[list[VerifyingKey], list[str]]:
    """The verifying keys of a JWKS document, and why any key was skipped.

    Keys for encryption (``use: enc``) and of types that cannot verify a
    player's JWT here (``oct``: a secret does not belong in a key set; other
    curves) are skipped; a document that is not a JWKS, a key that is
    malformed, or a set with no usable key is a PlayerAuthConfigError.
    """
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise PlayerAuthConfigError(f"not JSON ({e})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("keys"), list):
        raise PlayerAuthConfigError('not a JWKS: expected {"keys": [...]}')
    keys: list[VerifyingKey] = []
    skipped: list[str] = []
    for i, jwk in enumerate(doc["keys"]):
        if not isinstance(jwk, dict):
            raise PlayerAuthConfigError(f"keys[{i}] is not a JSON object")
        kid = jwk.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise PlayerAuthConfigError(f"keys[{i}]: kid must be a string")
        name = f"keys[{i}]" + (f" (kid {kid!r})" if kid is not None else "")
        kty, crv, alg = jwk.get("kty"), jwk.get("crv"), jwk.get("alg")
        ops = jwk.get("key_ops")
        if jwk.get("use", "sig") != "sig" or (isinstance(ops, list) and "verify" not in ops):
            skipped.append(f"{name}: not a signature key")
            continue
        if kty not in ("RSA", "EC", "OKP") or (kty == "OKP" and crv not in ("Ed25519", "Ed448")):
            skipped.append(f"{name}: kty {kty!r} crv {crv!r} is not accepted")
            continue
        if kty == "EC" and crv not in EC_ALGORITHMS:
            skipped.append(f"{name}: EC curve {crv!r} is not accepted")
            continue
        try:
            key = _jwk_key(jwk)
        except (jwt.PyJWTError, ValueError, TypeError, KeyError) as e:
            raise PlayerAuthConfigError(f"{name}: not a valid {kty} key ({e})") from None
        if hasattr(key, "public_key"):  # a JWK with its private part: keep the public one
            key = key.public_key()
        try:
            allowed = algorithms_of(key)
        except PlayerAuthConfigError as e:
            skipped.append(f"{name}: {e}")
            continue
        if alg is not None:
            if alg not in allowed:
                skipped.append(f"{name}: alg {alg!r} does not go with kty {kty!r}")
                continue
            allowed = frozenset((alg,))
        keys.append(VerifyingKey(key, allowed, kid))
    if not keys:
        why = f" ({'; '.join(skipped)})" if skipped else ""
        raise PlayerAuthConfigError(f"no key this server can verify with{why}")
    return keys, skipped


def load_jwks(path: str | os.PathLike[str]) -> list[VerifyingKey]:
    keys, skipped = parse_jwks(_read(path))
    for why in skipped:
        log.warning("player key skipped", jwks=os.fspath(path), why=why)
    return keys


def hmac_key(secret: str | bytes) -> VerifyingKey:
    raw = secret.encode() if isinstance(secret, str) else secret
    if len(raw) < MIN_HMAC_SECRET:
        raise PlayerAuthConfigError(
            f"the HMAC secret has {len(raw)} bytes; at least {MIN_HMAC_SECRET} are needed"
        )
    if raw.lstrip().startswith((b"-----BEGIN", b"ssh-", b"ecdsa-")):
        raise PlayerAuthConfigError("the HMAC secret looks like a public key; it must be a secret")
    # Only the algorithms whose hash is no longer than the secret.
    allowed = frozenset(a for a, size in HMAC_ALGORITHMS.items() if len(raw) >= size)
    return VerifyingKey(raw, allowed)


# -- names -----------------------------------------------------------------------------------


def _is_control(c: str) -> bool:
    return c not in _JOINERS and unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Zl", "Zp")


def clean_name(value: str) -> str:
    """A display name: control and format characters removed (the zero-width
    joiners of emoji aside), white space (tabs and line breaks too) made single
    spaces and trimmed, at most MAX_NAME characters."""
    kept = "".join(" " if c.isspace() else c for c in value if c.isspace() or not _is_control(c))
    return " ".join(kept.split())[:MAX_NAME].strip()


# -- the verifier ----------------------------------------------------------------------------


class PlayerAuth:
    """Verifies player credentials (JWTs) against one configured key source.

    ``PlayerAuth()`` with no key source is off: ``verify`` raises
    ``FAILED_PRECONDITION`` ``PLAYER_CREDENTIALS_OFF``. A key source needs
    both ``issuer`` and ``audience``. Raises PlayerAuthConfigError for a
    configuration that cannot work (files are read here, at once).
    """

    def __init__(
        self,
        *,
        issuer: str = "",
        audience: str = "",
        public_key_file: str | os.PathLike[str] | None = None,
        jwks_file: str | os.PathLike[str] | None = None,
        hmac_secret: str | bytes | None = None,
        id_claim: str = "sub",
        name_claim: str = "name",
        leeway_seconds: float = DEFAULT_LEEWAY_S,
        cache_size: int = 1024,
        jwks_check_seconds: float = JWKS_CHECK_S,
    ) -> None:
        sources = [
            name
            for name, value in (
                ("public_key_file", public_key_file),
                ("jwks_file", jwks_file),
                ("hmac_secret", hmac_secret),
            )
            if value
        ]
        if len(sources) > 1:
            raise PlayerAuthConfigError(f"one key source, not {' and '.join(sources)}")
        if sources and not (issuer and audience):
            raise PlayerAuthConfigError("a key source needs both an issuer and an audience")
        if not id_claim or not name_claim:
            raise PlayerAuthConfigError("the id and name claims must be named")
        if not leeway_seconds >= 0:  # NaN too
            raise PlayerAuthConfigError("the leeway must be 0 seconds or more")
        self.issuer = issuer
        self.audience = audience
        self.id_claim = id_claim
        self.name_claim = name_claim
        self.leeway_s = float(leeway_seconds)
        self.required = ("exp", "iss", "aud", id_claim)
        self._keys: list[VerifyingKey] = []
        self._jwks_file = Path(jwks_file) if jwks_file else None
        self._jwks_check_s = jwks_check_seconds
        self._jwks_stamp: tuple[int, int, int] | None = None
        self._jwks_checked = time.monotonic()
        self._lock = threading.Lock()
        self._cache: OrderedDict[bytes, tuple[Player, float]] = OrderedDict()
        self._cache_size = max(0, cache_size)
        self._generation = 0  # of the keys: a credential checked with old keys is not cached
        if public_key_file:
            self._keys = [load_public_key(_read(public_key_file))]
        elif self._jwks_file is not None:
            try:
                self._jwks_stamp = self._stamp(self._jwks_file)
            except OSError as e:
                raise PlayerAuthConfigError(
                    f"cannot read {self._jwks_file}: {e.strerror or e}"
                ) from None
            self._keys = load_jwks(self._jwks_file)
        elif hmac_secret:
            self._keys = [hmac_key(hmac_secret)]

    @property
    def enabled(self) -> bool:
        """Whether a key source is configured (else every credential is refused)."""
        return bool(self._keys)

    def verify(self, credential: str | None) -> Player:
        """The player ``credential`` (a compact JWT, without ``Bearer``) names,
        or a ServiceError: UNAUTHENTICATED with the reason, or
        FAILED_PRECONDITION PLAYER_CREDENTIALS_OFF when no key is configured."""
        if not self._keys:
            raise precondition("PLAYER_CREDENTIALS_OFF", OFF_MESSAGE)
        if not credential:
            raise _refuse(
                "CREDENTIAL_REQUIRED",
                "this call needs a player credential: authorization: Bearer <JWT from the "
                "game's sign-in>",
            )
        if len(credential) > MAX_CREDENTIAL:
            raise _malformed(f"longer than {MAX_CREDENTIAL} characters")
        keys, generation = self._current_keys()
        digest = hashlib.sha256(credential.encode("utf-8", "surrogatepass")).digest()
        cached = self._cached(digest)
        if cached is not None:
            return cached
        player, exp = self._verify(credential, keys)
        self._remember(digest, player, exp, generation)
        return player

    # the cache: a credential verified, until its exp (never past it) ------------------------
    def _cached(self, digest: bytes) -> Player | None:
        if not self._cache_size:
            return None
        with self._lock:
            hit = self._cache.get(digest)
            if hit is None:
                return None
            player, exp = hit
            if time.time() >= exp:
                del self._cache[digest]
                return None
            self._cache.move_to_end(digest)
            return player

    def _remember(self, digest: bytes, player: Player, exp: float, generation: int) -> None:
        if not self._cache_size:
            return
        with self._lock:
            if generation != self._generation:
                return
            self._cache[digest] = (player, exp)
            self._cache.move_to_end(digest)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    # JWKS rotation ----------------------------------------------------------------------------
    @staticmethod
    def _stamp(path: Path) -> tuple[int, int, int]:
        st = path.stat()
        return st.st_mtime_ns, st.st_size, st.st_ino

    def _current_keys(self) -> tuple[list[VerifyingKey], int]:
        """The keys; a JWKS file is looked at again at most every few seconds,
        and read again when it has changed. A change that cannot be read keeps
        the previous keys (and is logged once)."""
        with self._lock:
            if self._jwks_file is not None:
                self._reload_jwks(self._jwks_file)
            return self._keys, self._generation

    def _reload_jwks(self, path: Path) -> None:
        now = time.monotonic()
        if now - self._jwks_checked < self._jwks_check_s:
            return
        self._jwks_checked = now
        try:
            stamp = self._stamp(path)
        except OSError as e:
            stamp = (-1, -1, -1)
            if stamp != self._jwks_stamp:
                log.warning(
                    "player JWKS unreadable; keeping its keys", jwks=str(path), error=str(e)
                )
            self._jwks_stamp = stamp
            return
        if stamp == self._jwks_stamp:
            return
        self._jwks_stamp = stamp
        try:
            keys = load_jwks(path)
        except PlayerAuthConfigError as e:
            log.warning(
                "player JWKS changed but cannot be used; keeping its previous keys",
                jwks=str(path),
                error=str(e),
            )
            return
        self._keys = keys
        self._generation += 1
        self._cache.clear()  # a key removed takes its credentials with it
        log.info("player JWKS reloaded", jwks=str(path), keys=len(keys))

    # verification -----------------------------------------------------------------------------
    def _verify(self, credential: str, keys: Sequence[VerifyingKey]) -> tuple[Player, float]:
        if credential.count(".") != 2:
            raise _malformed("a signed JWT has three parts separated by dots")
        try:
            header = jwt.get_unverified_header(credential)
        except jwt.PyJWTError as e:
            raise _malformed(f"its header cannot be read ({e})") from None
        alg = header.get("alg")
        if not isinstance(alg, str) or not alg:
            raise _malformed("its header names no algorithm (alg)")
        if "crit" in header:
            raise _malformed("critical header extensions (crit) are not accepted")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise _malformed("its key id (kid) is not a string")
        candidates = self._keys_for(keys, kid)
        usable = [k for k in candidates if alg in k.algorithms]
        if not usable:
            allowed = sorted({a for k in candidates for a in k.algorithms})
            raise _refuse(
                "ALGORITHM_NOT_ALLOWED",
                f"the player credential's algorithm {_shown(alg, 24)} is not allowed for "
                f"its key (allowed: {', '.join(allowed)})",
            )
        payload: dict[str, Any] | None = None
        for key in usable:
            try:
                payload = self._decode(credential, key, alg)
                break
            except jwt.InvalidSignatureError:
                continue
        if payload is None:
            raise _refuse("BAD_SIGNATURE", "the player credential's signature does not verify")
        return self._player(payload)

    def _keys_for(self, keys: Sequence[VerifyingKey], kid: str | None) -> list[VerifyingKey]:
        if self._jwks_file is None:
            return list(keys)  # one key: a kid does not choose it
        if kid is not None:
            found = [k for k in keys if k.kid == kid]
            if not found:
                raise _refuse(
                    "UNKNOWN_KEY",
                    f"no key with the player credential's key id (kid) {_shown(kid)} in "
                    "the server's key set",
                )
            return found
        if len(keys) != 1:
            raise _refuse(
                "UNKNOWN_KEY",
                f"the player credential names no key id (kid) and the server's key set "
                f"holds {len(keys)} keys",
            )
        return list(keys)

    def _decode(self, credential: str, key: VerifyingKey, alg: str) -> dict[str, Any]:
        try:
            payload: dict[str, Any] = jwt.decode(
                credential,
                key=key.key,
                algorithms=[alg],
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway_s,
                options={"require": list(self.required), "enforce_minimum_key_length": True},
            )
        except jwt.InvalidSignatureError:
            raise
        except jwt.ExpiredSignatureError:
            raise _refuse(
                "CREDENTIAL_EXPIRED",
                "the player credential has expired (exp); sign in again for a new one",
            ) from None
        except jwt.ImmatureSignatureError:
            raise _refuse(
                "CREDENTIAL_NOT_YET_VALID",
                "the player credential is not valid yet (its nbf or iat is in the future); "
                "check the clocks of the identity provider and of this server",
            ) from None
        except jwt.MissingRequiredClaimError as e:
            raise _refuse(
                "MISSING_CLAIM",
                f"the player credential has no {e.claim!r} claim",
                claim=e.claim,
            ) from None
        except jwt.InvalidAudienceError:
            raise _refuse(
                "WRONG_AUDIENCE",
                f"the player credential is not for this server: its audience (aud) must "
                f"include {self.audience!r}",
            ) from None
        except jwt.InvalidIssuerError:
            raise _refuse(
                "WRONG_ISSUER",
                f"the player credential was not issued by {self.issuer!r} (iss)",
            ) from None
        except (jwt.InvalidAlgorithmError, jwt.InvalidKeyError):
            raise _refuse(
                "ALGORITHM_NOT_ALLOWED",
                f"the player credential's algorithm {_shown(alg, 24)} is not allowed for its key",
            ) from None
        except jwt.PyJWTError as e:
            raise _malformed(str(e)) from None
        return payload

    def _player(self, payload: Mapping[str, Any]) -> tuple[Player, float]:
        for claim in ("exp", "nbf", "iat"):
            value: object = payload.get(claim)
            if claim in payload and not (
                isinstance(value, (int, float))
                and not isinstance(value, bool)
                and math.isfinite(value)
            ):
                raise _malformed(f"{claim} must be a number of seconds")
        ident = payload[self.id_claim]
        if (
            not isinstance(ident, str)
            or not 1 <= len(ident) <= MAX_PLAYER_ID
            or ident != ident.strip()
            or any(_is_control(c) for c in ident)
        ):
            raise _malformed(
                f"the player id ({self.id_claim}) must be 1 to {MAX_PLAYER_ID} characters, "
                "without control characters or surrounding spaces"
            )
        raw_name = payload.get(self.name_claim)
        if raw_name is not None and not isinstance(raw_name, str):
            raise _malformed(f"the name claim ({self.name_claim}) must be a string")
        name = clean_name(raw_name) if raw_name else ""
        return Player(ident, name or ident[:MAX_NAME]), float(payload["exp"])


# -- from the server's flags -----------------------------------------------------------------


def player_auth(args: argparse.Namespace) -> PlayerAuth:
    """The PlayerAuth of spades-server's flags (``--player-*``); raises
    PlayerAuthConfigError, its message naming the flag, for settings that
    cannot work. Off (no key source) when none of the key flags is set."""
    sources = {
        "--player-public-key": args.player_public_key,
        "--player-jwks": args.player_jwks,
        "--player-hs256-secret": args.player_hs256_secret,
    }
    given = [flag for flag, value in sources.items() if value]
    if len(given) > 1:
        raise PlayerAuthConfigError(
            f"{' and '.join(given)}: give one player key source, not {len(given)}"
        )
    if given and not (args.player_issuer and args.player_audience):
        raise PlayerAuthConfigError(
            f"{given[0]} needs --player-issuer and --player-audience (the iss and aud "
            "every player credential must carry)"
        )
    if not args.player_id_claim or not args.player_name_claim:
        raise PlayerAuthConfigError("--player-id-claim and --player-name-claim must name a claim")
    if not args.player_leeway_seconds >= 0:
        raise PlayerAuthConfigError("--player-leeway-seconds must be 0 or more")
    try:
        return PlayerAuth(
            issuer=args.player_issuer,
            audience=args.player_audience,
            public_key_file=args.player_public_key or None,
            jwks_file=args.player_jwks or None,
            hmac_secret=args.player_hs256_secret or None,
            id_claim=args.player_id_claim,
            name_claim=args.player_name_claim,
            leeway_seconds=args.player_leeway_seconds,
        )
    except PlayerAuthConfigError as e:
        flag = given[0] if given else "player credentials"
        value = "" if flag == "--player-hs256-secret" else f" {sources.get(flag, '')}"
        raise PlayerAuthConfigError(f"{flag}{value}: {e}") from None

"""Player credentials (spades_server.players): real JWTs signed with real keys
(RSA, EC, Ed25519, HMAC) made here, every refusal reason, JWKS rotation by
rewriting the file, the cache, the server's flags refused at start
(main.parse_args), and the guest credentials of the web table's server
(``python -m spades_server.webapp``, POST /api/guest) that ``make run`` uses."""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm
from server_harness import RPC_TIMEOUT, Deadline
from spades_server import main, stack, webapp
from spades_server.errors import ServiceError
from spades_server.players import (
    GUEST_AUDIENCE,
    GUEST_ISSUER,
    MAX_CREDENTIAL,
    Player,
    PlayerAuth,
    PlayerAuthConfigError,
    player_auth,
)

ISS = "https://id.example"
AUD = "spades-test"
SECRET = "s" * 32

# Keys are slow to make (RSA): one of each for the module.
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER_RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())
ED_KEY = ed25519.Ed25519PrivateKey.generate()
ED448_KEY = ed448.Ed448PrivateKey.generate()


def pem(key: Any) -> bytes:
    public = key.public_key() if hasattr(key, "public_key") else key
    data: bytes = public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return data


def claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    base: dict[str, Any] = {
        "iss": ISS,
        "aud": AUD,
        "sub": "player-1",
        "name": "Ada",
        "iat": now,
        "exp": now + 600,
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def sign(
    key: Any = RSA_KEY, alg: str = "RS256", headers: dict[str, Any] | None = None, **kw: Any
) -> str:
    return jwt.encode(claims(**kw), key, algorithm=alg, headers=headers)


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def raw_token(header: object, payload: object, signature: bytes = b"") -> str:
    """A JWT put together by hand, as an attacker would."""
    h = b64(json.dumps(header).encode())
    p = b64(json.dumps(payload).encode())
    return f"{h}.{p}.{b64(signature)}"


@pytest.fixture
def rsa_pem(tmp_path: Path) -> Path:
    path = tmp_path / "rsa.pem"
    path.write_bytes(pem(RSA_KEY))
    return path


@pytest.fixture
def auth(rsa_pem: Path) -> PlayerAuth:
    return PlayerAuth(issuer=ISS, audience=AUD, public_key_file=rsa_pem)


def refused(auth: PlayerAuth, credential: str | None, reason: str) -> ServiceError:
    with pytest.raises(ServiceError) as info:
        auth.verify(credential)
    e = info.value
    assert (e.code, e.reason) == (grpc.StatusCode.UNAUTHENTICATED, reason), e.message
    assert e.message and "Traceback" not in e.message
    return e


def key_file(tmp_path: Path, key: Any, name: str) -> Path:
    path = tmp_path / name
    path.write_bytes(pem(key))
    return path


def jwk(key: Any, kid: str | None = None, **extra: Any) -> dict[str, Any]:
    public = key.public_key()
    if isinstance(public, rsa.RSAPublicKey):
        d = RSAAlgorithm.to_jwk(public, as_dict=True)
    elif isinstance(public, ec.EllipticCurvePublicKey):
        d = ECAlgorithm.to_jwk(public, as_dict=True)
    else:
        d = OKPAlgorithm.to_jwk(public, as_dict=True)
    if kid is not None:
        d["kid"] = kid
    d.update(extra)
    return d


def write_jwks(path: Path, *keys: dict[str, Any]) -> Path:
    # Written to a new file and renamed over the old one, as a rotation job would.
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"keys": list(keys)}))
    os.replace(tmp, path)
    return path


# -- accepted ---------------------------------------------------------------------------------


def test_rs256_and_ps256_credentials_are_accepted(auth: PlayerAuth) -> None:
    assert auth.verify(sign()) == Player("player-1", "Ada")
    assert auth.verify(sign(alg="PS256", sub="p2")) == Player("p2", "Ada")
    assert auth.verify(sign(alg="RS512", sub="p3", aud=["other", AUD])).id == "p3"


def test_es256_credentials_are_accepted(tmp_path: Path) -> None:
    auth = PlayerAuth(issuer=ISS, audience=AUD, public_key_file=key_file(tmp_path, EC_KEY, "ec"))
    assert auth.verify(sign(EC_KEY, "ES256")) == Player("player-1", "Ada")
    # The curve decides: P-256 is ES256 only.
    refused(auth, raw_token({"alg": "ES384"}, claims(), b"x" * 96), "ALGORITHM_NOT_ALLOWED")


def test_eddsa_credentials_are_accepted(tmp_path: Path) -> None:
    for key in (ED_KEY, ED448_KEY):
        path = key_file(tmp_path, key, "ed.pem")
        auth = PlayerAuth(issuer=ISS, audience=AUD, public_key_file=path)
        assert auth.verify(sign(key, "EdDSA", sub="ed")) == Player("ed", "Ada")


def test_an_hmac_secret_verifies_hs256_only_up_to_its_length() -> None:
    auth = PlayerAuth(issuer=ISS, audience=AUD, hmac_secret=SECRET)
    assert auth.verify(sign(SECRET, "HS256")).id == "player-1"
    e = refused(auth, sign("t" * 64, "HS512"), "ALGORITHM_NOT_ALLOWED")
    assert "HS256" in e.message
    refused(auth, sign("t" * 32, "HS256"), "BAD_SIGNATURE")
    refused(auth, sign(), "ALGORITHM_NOT_ALLOWED")
    long = PlayerAuth(issuer=ISS, audience=AUD, hmac_secret="k" * 64)
    assert long.verify(sign("k" * 64, "HS512")).id == "player-1"


def test_the_leeway_forgives_small_clock_skew(rsa_pem: Path) -> None:
    auth = PlayerAuth(issuer=ISS, audience=AUD, public_key_file=rsa_pem, leeway_seconds=30)
    now = int(time.time())
    assert auth.verify(sign(exp=now - 10, sub="late")).id == "late"
    assert auth.verify(sign(nbf=now + 10, iat=now + 10, sub="early")).id == "early"


# -- every refusal ----------------------------------------------------------------------------


def test_no_credential_is_credential_required(auth: PlayerAuth) -> None:
    refused(auth, None, "CREDENTIAL_REQUIRED")
    refused(auth, "", "CREDENTIAL_REQUIRED")


def test_an_expired_credential_is_refused(auth: PlayerAuth) -> None:
    e = refused(auth, sign(exp=int(time.time()) - 31), "CREDENTIAL_EXPIRED")
    assert "expired" in e.message


def test_a_credential_whose_nbf_is_in_the_future_is_not_yet_valid(auth: PlayerAuth) -> None:
    refused(auth, sign(nbf=int(time.time()) + 120), "CREDENTIAL_NOT_YET_VALID")


def test_a_credential_issued_in_the_future_is_not_yet_valid(auth: PlayerAuth) -> None:
    refused(auth, sign(iat=int(time.time()) + 120), "CREDENTIAL_NOT_YET_VALID")


def test_a_credential_signed_by_another_key_has_a_bad_signature(auth: PlayerAuth) -> None:
    refused(auth, sign(OTHER_RSA_KEY), "BAD_SIGNATURE")


def test_a_tampered_credential_has_a_bad_signature(auth: PlayerAuth) -> None:
    header, _, signature = sign(sub="player-1").split(".")
    forged = b64(json.dumps(claims(sub="the-admin")).encode())
    refused(auth, f"{header}.{forged}.{signature}", "BAD_SIGNATURE")


def test_a_credential_for_another_audience_is_refused(auth: PlayerAuth) -> None:
    e = refused(auth, sign(aud="another-game"), "WRONG_AUDIENCE")
    assert AUD in e.message
    refused(auth, sign(aud=["a", "b"]), "WRONG_AUDIENCE")


def test_a_credential_of_another_issuer_is_refused(auth: PlayerAuth) -> None:
    e = refused(auth, sign(iss="https://evil.example"), "WRONG_ISSUER")
    assert ISS in e.message


def test_alg_none_is_refused(auth: PlayerAuth) -> None:
    for alg in ("none", "None", "NONE"):
        token = raw_token({"alg": alg, "typ": "JWT"}, claims())
        refused(auth, token, "ALGORITHM_NOT_ALLOWED")


def test_hs256_signed_with_the_rsa_public_key_is_refused(auth: PlayerAuth, rsa_pem: Path) -> None:
    """Algorithm confusion: the public key's PEM, which anyone has, used as an
    HMAC secret. The algorithms allowed come from the key (RSA), not the token."""
    header = {"alg": "HS256", "typ": "JWT"}
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims()).encode())}"
    for secret in (rsa_pem.read_bytes(), rsa_pem.read_bytes().strip()):
        mac = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
        e = refused(auth, f"{signing_input}.{b64(mac)}", "ALGORITHM_NOT_ALLOWED")
        assert "HS256" in e.message and "RS256" in e.message


def test_an_algorithm_of_another_key_type_is_refused(auth: PlayerAuth) -> None:
    refused(auth, sign(EC_KEY, "ES256"), "ALGORITHM_NOT_ALLOWED")
    refused(auth, sign(ED_KEY, "EdDSA"), "ALGORITHM_NOT_ALLOWED")


def test_an_unknown_kid_is_refused(tmp_path: Path) -> None:
    path = write_jwks(tmp_path / "jwks.json", jwk(RSA_KEY, "k1"), jwk(EC_KEY, "k2"))
    auth = PlayerAuth(issuer=ISS, audience=AUD, jwks_file=path)
    assert auth.verify(sign(headers={"kid": "k1"})).id == "player-1"
    assert auth.verify(sign(EC_KEY, "ES256", headers={"kid": "k2"})).id == "player-1"
    e = refused(auth, sign(headers={"kid": "k9"}), "UNKNOWN_KEY")
    assert "'k9'" in e.message
    # Two keys and no kid: none is chosen.
    refused(auth, sign(), "UNKNOWN_KEY")
    # The kid chooses the key, and the key the algorithms.
    refused(auth, sign(headers={"kid": "k2"}), "ALGORITHM_NOT_ALLOWED")


@pytest.mark.parametrize("claim", ["sub", "exp", "aud", "iss"])
def test_a_missing_claim_is_refused(auth: PlayerAuth, claim: str) -> None:
    e = refused(auth, sign(**{claim: None}), "MISSING_CLAIM")
    assert e.metadata == {"claim": claim} and repr(claim) in e.message


def test_a_missing_id_claim_is_refused_whatever_it_is_called(rsa_pem: Path) -> None:
    auth = PlayerAuth(issuer=ISS, audience=AUD, public_key_file=rsa_pem, id_claim="uid")
    e = refused(auth, sign(), "MISSING_CLAIM")
    assert e.metadata == {"claim": "uid"}


def _header_of(token: str) -> dict[str, Any]:
    h = token.split(".", maxsplit=1)[0]
    parsed: dict[str, Any] = json.loads(base64.urlsafe_b64decode(h + "=" * (-len(h) % 4)))
    return parsed


@pytest.mark.parametrize(
    "credential",
    [
        pytest.param("not-a-jwt", id="no-dots"),
        pytest.param("a.b", id="two-parts"),
        pytest.param("a.b.c.d.e", id="jwe"),
        pytest.param("!!!.@@@.###", id="not-base64"),
        pytest.param(b64(b"{not json") + "." + b64(b"{}") + ".", id="header-not-json"),
        pytest.param(b64(b"[1]") + "." + b64(b"{}") + ".", id="header-not-an-object"),
        pytest.param("x" * (MAX_CREDENTIAL + 1), id="too-long"),
        pytest.param(raw_token({"typ": "JWT"}, {}), id="no-alg"),
        pytest.param(raw_token({"alg": "RS256", "kid": 7}, {}), id="kid-not-a-string"),
        pytest.param(raw_token({"alg": "RS256", "crit": ["exp"]}, {}), id="crit"),
    ],
)
def test_a_malformed_credential_is_refused(auth: PlayerAuth, credential: str) -> None:
    e = refused(auth, credential, "MALFORMED_CREDENTIAL")
    assert e.message.startswith("malformed player credential: ")


def test_a_payload_that_is_not_json_is_malformed(auth: PlayerAuth) -> None:
    # Signed properly, so only the payload is wrong.
    payload = b"{not json"
    signing_input = f"{b64(json.dumps({'alg': 'RS256'}).encode())}.{b64(payload)}"
    sig = RSAAlgorithm(RSAAlgorithm.SHA256).sign(signing_input.encode(), RSA_KEY)
    refused(auth, f"{signing_input}.{b64(sig)}", "MALFORMED_CREDENTIAL")


@pytest.mark.parametrize(
    "overrides",
    [
        pytest.param({"sub": ""}, id="empty-id"),
        pytest.param({"sub": "x" * 129}, id="id-too-long"),
        pytest.param({"sub": 12}, id="id-not-a-string"),
        pytest.param({"sub": "a\nb"}, id="id-with-a-control-character"),
        # Far ahead: the parameters are made when the suite is collected, and a
        # long run (16 minutes on a loaded machine) must not turn it into "expired".
        pytest.param({"exp": str(int(time.time()) + 10 * 365 * 86400)}, id="exp-a-string"),
        pytest.param({"exp": float("inf")}, id="exp-infinite"),
        pytest.param({"iat": "yesterday"}, id="iat-not-a-number"),
        pytest.param({"name": ["Ada"]}, id="name-not-a-string"),
    ],
)
def test_a_claim_of_the_wrong_kind_is_malformed(
    auth: PlayerAuth, overrides: dict[str, Any]
) -> None:
    refused(auth, sign(**overrides), "MALFORMED_CREDENTIAL")


def test_without_a_key_source_player_credentials_are_off() -> None:
    auth = PlayerAuth()
    assert not auth.enabled
    with pytest.raises(ServiceError) as info:
        auth.verify(sign())
    e = info.value
    assert (e.code, e.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "PLAYER_CREDENTIALS_OFF")
    for flag in ("--player-public-key", "--player-jwks", "--player-hs256-secret"):
        assert flag in e.message


# -- names ------------------------------------------------------------------------------------


def test_the_id_and_name_claims_are_configurable_and_names_are_cleaned(rsa_pem: Path) -> None:
    auth = PlayerAuth(
        issuer=ISS, audience=AUD, public_key_file=rsa_pem, id_claim="uid", name_claim="nick"
    )
    assert auth.verify(sign(uid="u-7", nick="Bo", name="ignored")) == Player("u-7", "Bo")
    # Absent: the id.
    assert auth.verify(sign(uid="u-8")) == Player("u-8", "u-8")
    # Control and bidi characters out, white space made one space, 64 characters at most.
    got = auth.verify(sign(uid="u-9", nick="  Ev\x00e\u202e\tthe\n\u2028great  "))
    assert got.name == "Eve the great"
    assert len(auth.verify(sign(uid="u-10", nick="é" * 100)).name) == 64
    # Nothing left to show: the id.
    assert auth.verify(sign(uid="u-11", nick="\x01\x02")).name == "u-11"
    # The default claims.
    default = PlayerAuth(issuer=ISS, audience=AUD, public_key_file=rsa_pem)
    assert default.verify(sign(sub="s1", name=None)) == Player("s1", "s1")


# -- JWKS -------------------------------------------------------------------------------------


def test_jwks_keys_rotate_by_rewriting_the_file(tmp_path: Path) -> None:
    path = write_jwks(tmp_path / "jwks.json", jwk(RSA_KEY, "old"))
    auth = PlayerAuth(issuer=ISS, audience=AUD, jwks_file=path, jwks_check_seconds=0)
    old = sign(headers={"kid": "old"})
    new = sign(ED_KEY, "EdDSA", headers={"kid": "new"}, sub="p2")
    assert auth.verify(old).id == "player-1"
    refused(auth, new, "UNKNOWN_KEY")
    # Both during the rotation, then the new one alone.
    write_jwks(path, jwk(RSA_KEY, "old"), jwk(ED_KEY, "new"))
    assert auth.verify(new).id == "p2" and auth.verify(old).id == "player-1"
    write_jwks(path, jwk(ED_KEY, "new"))
    assert auth.verify(new).id == "p2"
    refused(auth, old, "UNKNOWN_KEY")  # verified (and cached) before: refused all the same


def test_a_jwks_that_cannot_be_read_after_a_change_keeps_the_previous_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_jwks(tmp_path / "jwks.json", jwk(RSA_KEY, "k1"))
    auth = PlayerAuth(issuer=ISS, audience=AUD, jwks_file=path, jwks_check_seconds=0)
    token = sign(headers={"kid": "k1"})
    for broken in ('{"keys": [', '{"keys": []}', '{"keys": [{"kty": "RSA", "n": "x"}]}'):
        path.write_text(broken)
        assert auth.verify(token).id == "player-1"
    path.unlink()
    assert auth.verify(token).id == "player-1"
    assert "cannot be used; keeping its previous keys" in capsys.readouterr().out
    write_jwks(path, jwk(ED_KEY, "k2"))
    refused(auth, token, "UNKNOWN_KEY")


def test_the_jwks_file_is_looked_at_only_every_few_seconds(tmp_path: Path) -> None:
    path = write_jwks(tmp_path / "jwks.json", jwk(RSA_KEY, "k1"))
    auth = PlayerAuth(issuer=ISS, audience=AUD, jwks_file=path, jwks_check_seconds=0.5)
    write_jwks(path, jwk(ED_KEY, "k2"))
    token = sign(ED_KEY, "EdDSA", headers={"kid": "k2"})
    refused(auth, token, "UNKNOWN_KEY")  # not looked at yet
    time.sleep(0.6)
    assert auth.verify(token).id == "player-1"


def test_jwks_algorithms_come_from_each_key(tmp_path: Path) -> None:
    # The only key, no kid: that key.
    path = write_jwks(tmp_path / "one.json", jwk(EC_KEY))
    auth = PlayerAuth(issuer=ISS, audience=AUD, jwks_file=path)
    assert auth.verify(sign(EC_KEY, "ES256")).id == "player-1"
    refused(auth, raw_token({"alg": "ES512"}, claims(), b"x" * 132), "ALGORITHM_NOT_ALLOWED")
    # A key's alg narrows it to that algorithm.
    path = write_jwks(tmp_path / "alg.json", jwk(RSA_KEY, "r", alg="PS256"))
    auth = PlayerAuth(issuer=ISS, audience=AUD, jwks_file=path)
    assert auth.verify(sign(alg="PS256", headers={"kid": "r"})).id == "player-1"
    refused(auth, sign(headers={"kid": "r"}), "ALGORITHM_NOT_ALLOWED")
    # Secrets and encryption keys are not used to verify.
    oct_key = {"kty": "oct", "kid": "s", "k": b64(SECRET.encode())}
    enc = jwk(OTHER_RSA_KEY, "e", use="enc")
    path = write_jwks(tmp_path / "mixed.json", oct_key, enc, jwk(RSA_KEY, "r"))
    auth = PlayerAuth(issuer=ISS, audience=AUD, jwks_file=path)
    refused(auth, sign(SECRET, "HS256", headers={"kid": "s"}), "UNKNOWN_KEY")
    refused(auth, sign(OTHER_RSA_KEY, headers={"kid": "e"}), "UNKNOWN_KEY")
    assert auth.verify(sign(headers={"kid": "r"})).id == "player-1"


# -- the cache --------------------------------------------------------------------------------


def test_the_cache_never_serves_a_credential_past_its_exp(rsa_pem: Path) -> None:
    auth = PlayerAuth(issuer=ISS, audience=AUD, public_key_file=rsa_pem, leeway_seconds=0)
    exp = int(time.time()) + 2
    token = sign(exp=exp)
    assert auth.verify(token).id == "player-1"
    assert auth.verify(token).id == "player-1"  # from the cache
    while time.time() < exp + 0.05:
        time.sleep(0.05)
    refused(auth, token, "CREDENTIAL_EXPIRED")


def test_the_cache_is_bounded(rsa_pem: Path) -> None:
    auth = PlayerAuth(issuer=ISS, audience=AUD, public_key_file=rsa_pem, cache_size=3)
    tokens = [sign(sub=f"p{i}") for i in range(10)]
    for _ in range(2):
        assert [auth.verify(t).id for t in tokens] == [f"p{i}" for i in range(10)]
    assert len(auth._cache) == 3


# -- configuration ----------------------------------------------------------------------------


def test_the_constructor_refuses_settings_that_cannot_work(rsa_pem: Path) -> None:
    with pytest.raises(PlayerAuthConfigError, match="one key source"):
        PlayerAuth(issuer=ISS, audience=AUD, public_key_file=rsa_pem, hmac_secret=SECRET)
    with pytest.raises(PlayerAuthConfigError, match="issuer and an audience"):
        PlayerAuth(issuer=ISS, public_key_file=rsa_pem)
    with pytest.raises(PlayerAuthConfigError, match="at least 32"):
        PlayerAuth(issuer=ISS, audience=AUD, hmac_secret="short")
    with pytest.raises(PlayerAuthConfigError, match="looks like a public key"):
        PlayerAuth(issuer=ISS, audience=AUD, hmac_secret=rsa_pem.read_text())


def _refused_at_start(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as info:
        main.parse_args(list(argv))
    assert info.value.code == 2
    return capsys.readouterr().err


def test_parse_args_refuses_two_key_sources(
    rsa_pem: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jwks = write_jwks(tmp_path / "jwks.json", jwk(RSA_KEY, "k"))
    err = _refused_at_start(
        capsys, "--player-issuer", ISS, "--player-audience", AUD,
        "--player-public-key", str(rsa_pem), "--player-jwks", str(jwks),
    )  # fmt: skip
    assert "--player-public-key and --player-jwks" in err and "one player key source" in err


def test_parse_args_refuses_a_key_source_without_issuer_and_audience(
    rsa_pem: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for extra in ([], ["--player-issuer", ISS], ["--player-audience", AUD]):
        err = _refused_at_start(capsys, "--player-public-key", str(rsa_pem), *extra)
        assert "needs --player-issuer and --player-audience" in err


def test_parse_args_refuses_key_files_it_cannot_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["--player-issuer", ISS, "--player-audience", AUD]
    err = _refused_at_start(capsys, *common, "--player-public-key", str(tmp_path / "nope.pem"))
    assert "--player-public-key" in err and "cannot read" in err
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("-----BEGIN PUBLIC KEY-----\nnot base64\n-----END PUBLIC KEY-----\n")
    err = _refused_at_start(capsys, *common, "--player-public-key", str(garbage))
    assert "not a PEM public key" in err
    private = tmp_path / "private.pem"
    private.write_bytes(
        ED_KEY.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    err = _refused_at_start(capsys, *common, "--player-public-key", str(private))
    assert "public key only" in err
    small = tmp_path / "small.pem"
    small.write_bytes(pem(rsa.generate_private_key(public_exponent=65537, key_size=1024)))
    err = _refused_at_start(capsys, *common, "--player-public-key", str(small))
    assert "1024 bits" in err
    bad_jwks = tmp_path / "jwks.json"
    bad_jwks.write_text("{not json")
    err = _refused_at_start(capsys, *common, "--player-jwks", str(bad_jwks))
    assert "--player-jwks" in err and "not JSON" in err
    bad_jwks.write_text('{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}')
    err = _refused_at_start(capsys, *common, "--player-jwks", str(bad_jwks))
    assert "no key this server can verify with" in err
    err = _refused_at_start(capsys, *common, "--player-jwks", str(tmp_path / "missing.json"))
    assert "cannot read" in err


def test_parse_args_refuses_a_short_secret_also_from_the_environment(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    common = ["--player-issuer", ISS, "--player-audience", AUD]
    err = _refused_at_start(capsys, *common, "--player-hs256-secret", "x" * 31)
    assert "--player-hs256-secret" in err and "31 bytes" in err and "x" * 31 not in err
    monkeypatch.setenv("SPADES_PLAYER_HS256_SECRET", "short")
    err = _refused_at_start(capsys, *common)
    assert "at least 32" in err


def test_parse_args_refuses_a_negative_leeway(
    rsa_pem: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _refused_at_start(capsys, "--player-leeway-seconds", "-1")
    assert "--player-leeway-seconds must be 0 or more" in err


def test_the_flags_and_variables_build_the_player_auth(
    rsa_pem: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    off = player_auth(main.parse_args([]))
    assert not off.enabled
    monkeypatch.setenv("SPADES_PLAYER_PUBLIC_KEY", str(rsa_pem))
    monkeypatch.setenv("SPADES_PLAYER_ISSUER", ISS)
    monkeypatch.setenv("SPADES_PLAYER_AUDIENCE", AUD)
    args = main.parse_args(["--player-name-claim", "nick", "--player-leeway-seconds", "5"])
    auth = player_auth(args)
    assert auth.enabled and auth.leeway_s == 5.0
    assert auth.verify(sign(nick="Cy")) == Player("player-1", "Cy")


# -- guest credentials (spades_server.webapp, POST /api/guest) --------------------------------


def _write_guest_key(tmp_path: Path) -> tuple[Path, Path]:
    return stack.write_guest_keys(tmp_path)


def _post(
    port: int, path: str, body: bytes, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=RPC_TIMEOUT)
    try:
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        conn.request("POST", path, body=body, headers=h)
        res = conn.getresponse()
        return res.status, json.loads(res.read())
    finally:
        conn.close()


class WebAppProcess:
    """``python -m spades_server.webapp`` as the launcher starts it."""

    def __init__(self, dist: Path, env: dict[str, str]) -> None:
        argv = [sys.executable, "-m", "spades_server.webapp", "--dir", str(dist)]
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        m = stack.STATIC_READY.search(line)
        assert m, line
        self.port = int(m["port"])

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=RPC_TIMEOUT)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=RPC_TIMEOUT)


@pytest.fixture
def webapp_process(tmp_path: Path) -> Iterator[type[WebAppProcess]]:
    started: list[WebAppProcess] = []

    class Started(WebAppProcess):
        def __init__(self, env: dict[str, str]) -> None:
            base = {k: v for k, v in os.environ.items() if not k.startswith("SPADES_")}
            super().__init__(tmp_path, {**base, **env})
            started.append(self)

    yield Started
    for p in started:
        p.kill()


def test_a_guest_credential_from_the_web_server_is_accepted_with_its_public_key(
    tmp_path: Path, webapp_process: type[WebAppProcess]
) -> None:
    private, public = _write_guest_key(tmp_path)
    assert private.stat().st_mode & 0o777 == 0o600
    web = webapp_process({"SPADES_GUEST_KEY": str(private)})
    before = time.time()
    status, res = _post(web.port, "/api/guest", json.dumps({"name": " Ada\u202e "}).encode())
    assert status == 200, res
    assert set(res) == {"credential", "playerId", "name", "expiresAtMs"}
    assert res["playerId"].startswith("guest-") and len(res["playerId"]) == len("guest-") + 16
    assert res["name"] == "Ada"
    assert 29 * 60 <= res["expiresAtMs"] / 1000 - before <= 30 * 60 + 1
    auth = PlayerAuth(issuer=GUEST_ISSUER, audience=GUEST_AUDIENCE, public_key_file=public)
    assert auth.verify(res["credential"]) == Player(res["playerId"], "Ada")
    assert _header_of(res["credential"])["alg"] == "EdDSA"
    payload = jwt.decode(res["credential"], options={"verify_signature": False})
    assert set(payload) == {"iss", "aud", "sub", "name", "iat", "nbf", "exp"}
    assert payload["exp"] - payload["iat"] == 30 * 60
    # No name: one is made up; every guest is a new player.
    status, other = _post(web.port, "/api/guest", b"{}")
    assert status == 200 and other["playerId"] != res["playerId"]
    assert auth.verify(other["credential"]).name == other["name"]
    # Another launcher's key does not verify it.
    (tmp_path / "other").mkdir()
    _, stranger = _write_guest_key(tmp_path / "other")
    strange = PlayerAuth(issuer=GUEST_ISSUER, audience=GUEST_AUDIENCE, public_key_file=stranger)
    refused(strange, res["credential"], "BAD_SIGNATURE")
    assert web.stop() == 0


def test_a_guest_renews_as_the_same_player_and_no_one_else_can(tmp_path: Path) -> None:
    private, public = _write_guest_key(tmp_path)
    guests = webapp.GuestIssuer.from_file(private)
    first = guests.issue({"name": "Ada"})
    # The page renews before expiry, or after (within the grace): the same player, maybe renamed.
    again = guests.issue({"name": "Ada L", "renew": first["credential"]})
    assert again["playerId"] == first["playerId"] and again["name"] == "Ada L"
    auth = PlayerAuth(issuer=GUEST_ISSUER, audience=GUEST_AUDIENCE, public_key_file=public)
    assert auth.verify(again["credential"]) == Player(first["playerId"], "Ada L")
    expired = webapp.GuestIssuer.from_file(private, lifetime_s=-3600).issue({"name": "Old"})
    assert guests.issue({"renew": expired["credential"]})["playerId"] == expired["playerId"]
    too_old = webapp.GuestIssuer.from_file(private, lifetime_s=-webapp.RENEW_GRACE_S - 60).issue(
        {"name": "Gone"}
    )
    # Refused, and nothing made: another server's guest, an expired-too-long one, a made-up one.
    (tmp_path / "other").mkdir()
    other_private, _ = _write_guest_key(tmp_path / "other")
    stranger = webapp.GuestIssuer.from_file(other_private).issue({"name": "Eve"})
    forged = jwt.encode(
        {"iss": GUEST_ISSUER, "aud": GUEST_AUDIENCE, "sub": first["playerId"], "exp": 2**40},
        "x" * 32,
        algorithm="HS256",
    )
    for credential in (stranger["credential"], too_old["credential"], forged, "nope", 5):
        with pytest.raises(webapp.ApiError) as e:
            guests.issue({"renew": credential})
        assert e.value.status == 400 and e.value.body["error"]["message"].startswith("renew:")


def test_without_a_guest_key_the_web_server_answers_501(
    webapp_process: type[WebAppProcess],
) -> None:
    web = webapp_process({})
    status, res = _post(web.port, "/api/guest", b"{}")
    assert status == 501
    assert (
        res["error"]["title"] == "Not available" and "SPADES_GUEST_KEY" in res["error"]["message"]
    )
    assert web.stop() == 0


def test_a_guest_key_that_cannot_be_used_stops_the_web_server(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pem"
    bad.write_bytes(pem(ED_KEY))  # a public key: it cannot sign
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPADES_")}
    got = subprocess.run(
        [sys.executable, "-m", "spades_server.webapp", "--dir", str(tmp_path)],
        env={**env, "SPADES_GUEST_KEY": str(bad)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert got.returncode == 2 and "SPADES_GUEST_KEY" in got.stderr


@pytest.fixture
def guest_web(tmp_path: Path) -> Iterator[int]:
    private, _ = _write_guest_key(tmp_path)
    guests = webapp.GuestIssuer.from_file(private, per_minute=1, burst=3)
    httpd = webapp.serve("127.0.0.1", 0, tmp_path, None, guests)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd.server_port
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def test_guest_requests_follow_the_post_rules_and_are_rate_limited(guest_web: int) -> None:
    port = guest_web
    for body, field in (
        (b"[]", "body"),
        (b'{"name": ""}', "name"),
        (json.dumps({"name": "x" * 33}).encode(), "name"),
        (b'{"name": 5}', "name"),
        (b'{"name": "\\u0001"}', "name"),
        (b'{"id": "guest-admin"}', "id"),
        (b"{nope", "body"),
    ):
        status, res = _post(port, "/api/guest", body)
        assert status == 400 and res["error"]["message"].startswith(field + ":"), res
    status, res = _post(port, "/api/guest", b"{}", {"Origin": "http://evil.test"})
    assert status == 403 and "guest" in res["error"]["message"]
    status, _ = _post(port, "/api/guest", b"{}", {"Content-Type": "text/plain"})
    assert status == 415
    same_origin = {"Origin": f"http://127.0.0.1:{port}"}
    d = Deadline(RPC_TIMEOUT)
    statuses = []
    while len(statuses) < 4:
        d.check("four answers")
        statuses.append(_post(port, "/api/guest", b'{"name": "Bo"}', same_origin)[0])
    assert statuses == [200, 200, 200, 429]
    status, res = _post(port, "/api/guest", b"{}")
    assert status == 429 and res["error"]["reason"] == "RATE_LIMITED"


def test_the_stack_gives_guest_keys_only_when_no_player_key_source_is_configured() -> None:
    assert not stack.player_keys_configured(["--port", "0"], {"SPADES_PLAYER_JWKS": ""})
    for args, env in (
        (["--player-jwks", "k.json"], {}),
        (["--player-public-key=k.pem"], {}),
        ([], {"SPADES_PLAYER_HS256_SECRET": SECRET}),
        ([], {"SPADES_PLAYER_PUBLIC_KEY": "k.pem"}),
    ):
        assert stack.player_keys_configured(args, env)

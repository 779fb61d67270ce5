"""Signed secretions: each organ signs what it emits with its own Ed25519 nkey.

The last step an organ appends to the chain carries a signature over that
organ's *claim*: the origin, the input digest, every earlier step (with its
signature), the new step itself, the tier, the trace id and session, and the
evidence as it leaves the organ — goal, anchors, frames and the segments'
report, plus the yield's meta from absorption on.
Those fields pass through later hops unchanged, so the border can verify every
signature of the chain on the envelope it receives, and an envelope altered
anywhere, by anyone without the organ's seed, fails verification.

Seeds are read from a file (``ICHOR_SIGNING_SEED_FILE``) or the environment
(``ICHOR_SIGNING_SEED``) and never logged; the organs' public keys are
configuration (``ICHOR_TRUSTED_KEYS_FILE``, a JSON object organ → public key).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import nacl.exceptions
import nacl.signing
import nkeys

from envelopes.types import Digested, Envelope, Yield
from organs.errors import ConfigError, SigningError
from organs.settings import Settings, variable_of

__all__ = [
    "Signer",
    "SigningError",
    "load_signer",
    "load_trusted_keys",
    "new_seed",
    "public_key_of",
    "sign_last_step",
    "verify_chain",
]

_claim_encoder = msgspec.msgpack.Encoder()


def new_seed() -> str:
    return str(nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER).decode())


def public_key_of(seed: str) -> str:
    return str(nkeys.from_seed(bytearray(seed.encode())).public_key.decode())


def _verify_key(public_key: str) -> nacl.signing.VerifyKey:
    try:
        raw = base64.b32decode(public_key + "=" * (-len(public_key) % 8))
    except (binascii.Error, ValueError) as error:
        raise SigningError(f"not an nkey public key: {public_key[:8]}…") from error
    prefix, key, checksum = raw[:1], raw[1:-2], raw[-2:]
    if prefix[0] != nkeys.PREFIX_BYTE_USER or len(key) != 32:
        raise SigningError("not a user nkey public key")
    if nkeys.crc16_checksum(raw[:-2]) != checksum:
        raise SigningError("nkey public key checksum mismatch")
    return nacl.signing.VerifyKey(key)


@dataclass(frozen=True)
class Signer:
    """An organ's signing key. ``repr`` never shows the seed."""

    organ: str
    _key: Any

    @classmethod
    def from_seed(cls, organ: str, seed: str) -> Signer:
        try:
            return cls(organ, nkeys.from_seed(bytearray(seed.strip().encode())))
        except Exception as error:
            raise SigningError(f"the signing seed for {organ} is not a valid nkey seed") from error

    @property
    def public_key(self) -> str:
        return str(self._key.public_key.decode())

    def sign(self, claim: bytes) -> str:
        return base64.urlsafe_b64encode(self._key.sign(claim)).decode().rstrip("=")

    def __repr__(self) -> str:
        return f"Signer(organ={self.organ!r}, public_key={self.public_key!r})"


_STOMACH_STAGES = ("ingested", "classified", "digested")


def _evidence(stage: str, payload: Any) -> Any:
    # What an organ vouches for is what leaves it; later hops carry it unchanged.
    if stage in _STOMACH_STAGES or stage == "yielded":
        if not isinstance(payload, (Digested, Yield)):
            raise SigningError(f"a {stage!r} step can only be checked on a digested or yield envelope")
        meta = payload.meta if isinstance(payload, Yield) and stage == "yielded" else None
        return (payload.goal, payload.anchors, payload.frames, payload.report, meta)
    return payload


def _claim(envelope: Envelope, index: int) -> bytes:
    # The trace id and the session travel unchanged from the paste, so each signer vouches for them too:
    # an envelope moved to another trace or conversation fails every signature.
    chain = envelope.chain
    step = chain.steps[index]
    unsigned = msgspec.structs.replace(step, signature=None)
    evidence = _evidence(step.stage, envelope.payload)
    return _claim_encoder.encode(
        (
            chain.origin,
            chain.input_digest,
            chain.steps[:index],
            unsigned,
            envelope.tier,
            envelope.trace_id,
            envelope.session,
            evidence,
        )
    )


def sign_last_step(envelope: Envelope, signer: Signer) -> Envelope:
    """The envelope with its last step signed by ``signer``."""
    steps = envelope.chain.steps
    claim = _claim(envelope, len(steps) - 1)
    signed = msgspec.structs.replace(steps[-1], signature=signer.sign(claim))
    chain = msgspec.structs.replace(envelope.chain, steps=(*steps[:-1], signed))
    return msgspec.structs.replace(envelope, chain=chain)


def verify_chain(envelope: Envelope, trusted_keys: Mapping[str, str], required: tuple[str, ...]) -> list[str]:
    """Problems with the chain's signatures; empty when every ``required`` stage is signed and valid.

    ``required`` names the stages whose step must carry a valid signature of
    the organ that appended it (``digested`` for the stomach, ``yielded`` for
    absorption). Any other signature present is verified too.
    """
    problems: list[str] = []
    chain = envelope.chain
    for index, step in enumerate(chain.steps):
        if step.signature is None:
            if step.stage in required:
                problems.append(f"step {index} ({step.stage} by {step.organ}) is not signed")
            continue
        public_key = trusted_keys.get(step.organ)
        if public_key is None:
            problems.append(f"no trusted key for organ {step.organ!r}")
            continue
        try:
            signature = base64.urlsafe_b64decode(step.signature + "=" * (-len(step.signature) % 4))
            _verify_key(public_key).verify(_claim(envelope, index), signature)
        except (SigningError, binascii.Error, ValueError, nacl.exceptions.BadSignatureError):
            problems.append(f"step {index} ({step.stage} by {step.organ}) has an invalid signature")
    return problems


def load_signer(organ: str, settings: Settings) -> Signer | None:
    """This organ's signer from the ``signing_seed_file`` or ``signing_seed`` setting; None when unset.

    Raises ``ConfigError`` naming the variable when the seed cannot be read or used.
    """
    if settings.signing_seed_file:
        variable, value = variable_of("signing_seed_file"), settings.signing_seed_file
        try:
            return Signer.from_seed(organ, Path(settings.signing_seed_file).read_text())
        except (OSError, UnicodeDecodeError, SigningError) as error:
            raise ConfigError(f"{variable}={value!r} is not allowed: {_reason(error)}") from None
    if settings.signing_seed:
        try:
            return Signer.from_seed(organ, settings.signing_seed)
        except SigningError as error:
            # The seed is a secret: the message never shows it.
            raise ConfigError(f"{variable_of('signing_seed')} is not allowed: {error}") from None
    return None


def load_trusted_keys(settings: Settings) -> dict[str, str] | None:
    """Organ → public key from the ``trusted_keys_file`` setting (JSON); None when unset.

    Every key is checked now, at start, not on the first envelope; a file that cannot
    be used raises ``ConfigError`` naming the variable.
    """
    path = settings.trusted_keys_file
    if not path:
        return None
    try:
        keys = json.loads(Path(path).read_text())
        if not isinstance(keys, dict):
            raise SigningError("not a JSON object of organ names to public keys")
        for public_key in keys.values():
            _verify_key(str(public_key))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ConfigError(f"{variable_of('trusted_keys_file')}={path!r} is not allowed: {_reason(error)}") from None
    return {str(organ): str(public_key) for organ, public_key in keys.items()}


def _reason(error: Exception) -> str:
    if isinstance(error, OSError):
        return error.strerror or type(error).__name__
    return str(error).splitlines()[0] if str(error) else type(error).__name__

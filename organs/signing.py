"""Signed secretions: each organ signs what it emits with its own Ed25519 nkey.

The last step an organ appends to the chain carries a signature over that
organ's *claim*: the origin, the input digest, every earlier step (with its
signature), the new step itself, the tier, the trace id and session, and the
evidence as it leaves the organ — goal (or the reference of a goal stored
apart, ``envelopes.types.StoredText``), anchors, frames and the segments'
report, plus the yield's meta from absorption on.
Those fields pass through later hops unchanged, so the border can verify every
signature of the chain on the envelope it receives, and an envelope altered
anywhere, by anyone without the organ's seed, fails verification.

Every signature names its key (``key_id``, the nkey public key), and the
verifier picks the key by that id among the trusted ones: a key nobody trusts is
``signature.unknown_key``, a trusted key of another signer ``signature.wrong_signer``.

A sender seals the paste it hands in (``seal_paste``) with the same nkey it
connects with: the seal names who really sent it, whatever actor the paste claims,
and covers the whole paste envelope, so it holds on that paste alone.
One seed serves both: NATS has the client sign the server's nonce, text that is
valid UTF-8, while every claim here is a msgpack array whose first byte (0x90-0x9f)
never begins valid UTF-8, so a signature made for one can never pass for the other.

Seeds are read from a file (``ICHOR_SIGNING_SEED_FILE``) or the environment
(``ICHOR_SIGNING_SEED``) and never logged; the trusted public keys are
configuration (``ICHOR_TRUSTED_KEYS_FILE``, a JSON object name → public key, or
→ a list of keys while one is rotated out).
"""

from __future__ import annotations

import base64
import binascii
import functools
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

from envelopes.ids import digest_text
from envelopes.types import Digested, Envelope, Paste, PasteFields, Seal, Yield
from organs.errors import ConfigError, SigningError
from organs.settings import Settings, variable_of

__all__ = [
    "SignatureProblem",
    "Signer",
    "SigningError",
    "TrustedKeys",
    "load_signer",
    "load_trusted_keys",
    "new_seed",
    "paste_fields",
    "public_key_of",
    "seal_paste",
    "sealed_by",
    "sign_last_step",
    "verify_chain",
    "verify_seal",
]

TrustedKeys = Mapping[str, str | list[str]]
"""Signer name (an organ's wire name, a sender's user name) → its public key, or its keys during a rotation."""

_claim_encoder = msgspec.msgpack.Encoder()


def new_seed() -> str:
    return str(nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER).decode())


def public_key_of(seed: str) -> str:
    return str(nkeys.from_seed(bytearray(seed.encode())).public_key.decode())


# A tract trusts a handful of keys and checks every envelope against them: decoding a key once per check was
# 0.03 ms of each paste's border pass (bench/law_floor_bench.py).
@functools.lru_cache(maxsize=256)
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
    def from_file(cls, organ: str, path: str | Path) -> Signer:
        return cls.from_seed(organ, Path(path).read_text())

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
        # A goal or a frame's content by reference is vouched for by its reference (its blake3 among it), fetched
        # or not.
        goal = payload.goal if payload.goal_ref is None else payload.goal_ref
        frames = tuple(frame.travelling for frame in payload.frames)
        return (goal, payload.anchors, frames, payload.report, meta)
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
            # The sender's seal and the paste fields the stomach received travel unchanged too.
            chain.seal,
            chain.received,
            evidence,
        )
    )


def sign_last_step(envelope: Envelope, signer: Signer) -> Envelope:
    """The envelope with its last step signed by ``signer`` (the step names the key: ``key_id``)."""
    steps = envelope.chain.steps
    keyed = msgspec.structs.replace(steps[-1], key_id=signer.public_key)
    chain = msgspec.structs.replace(envelope.chain, steps=(*steps[:-1], keyed))
    claim = _claim(msgspec.structs.replace(envelope, chain=chain), len(steps) - 1)
    signed = msgspec.structs.replace(keyed, signature=signer.sign(claim))
    chain = msgspec.structs.replace(chain, steps=(*steps[:-1], signed))
    return msgspec.structs.replace(envelope, chain=chain)


def paste_fields(paste: Envelope) -> PasteFields:
    """The paste envelope's fields a seal covers that the chain does not carry (its id, time, intent, budget)."""
    if not isinstance(paste.payload, Paste):
        raise SigningError(f"only a paste is sealed, not a {paste.kind!r} envelope")
    intent = paste.payload.intent
    return PasteFields(
        paste_id=paste.id,
        created_at=paste.created_at,
        intent_digest=None if intent is None else digest_text(intent),
        budget_tokens=paste.payload.budget_tokens,
    )


def _seal_claim(envelope: Envelope, key_id: str, covers: PasteFields) -> bytes:
    # The whole paste envelope: who it is from, its bytes, its trace and conversation (carried by every hop),
    # and its id, time, intent and budget (``covers``), so a seal lifted onto another paste does not hold.
    chain = envelope.chain
    claim = ("seal", key_id, chain.origin, chain.input_digest, envelope.trace_id, envelope.session, covers)
    return _claim_encoder.encode(claim)


def seal_paste(paste: Envelope, sender: Signer) -> Envelope:
    """The paste with its sender's seal: the proof, carried to the border, of who handed it in."""
    covers = paste_fields(paste)
    signature = sender.sign(_seal_claim(paste, sender.public_key, covers))
    seal = Seal(key_id=sender.public_key, signature=signature, covers=covers)
    return msgspec.structs.replace(paste, chain=msgspec.structs.replace(paste.chain, seal=seal))


@dataclass(frozen=True)
class SignatureProblem:
    """Why a signature does not hold: ``code`` is the border's reason code, ``message`` says which and why."""

    code: str
    message: str


def _owners(trusted_keys: TrustedKeys) -> dict[str, str]:
    """Key id → the name it is trusted for."""
    owners: dict[str, str] = {}
    for name, keys in trusted_keys.items():
        for key in [keys] if isinstance(keys, str) else keys:
            owners[key] = name
    return owners


def _check_signature(public_key: str, claim: bytes, signature: str) -> bool:
    try:
        raw = base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4))
        _verify_key(public_key).verify(claim, raw)
    except (SigningError, binascii.Error, ValueError, nacl.exceptions.BadSignatureError):
        return False
    return True


def _short(key_id: str) -> str:
    return f"{key_id[:10]}…"


def verify_chain(envelope: Envelope, trusted_keys: TrustedKeys, required: tuple[str, ...]) -> list[SignatureProblem]:
    """Problems with the chain's signatures; empty when every ``required`` stage is signed and valid.

    ``required`` names the stages whose step must carry a valid signature of
    the organ that appended it (``digested`` for the stomach, ``yielded`` for
    absorption). Any other signature present is verified too, each with the
    trusted key its ``key_id`` names, which must belong to the step's organ.
    """
    problems: list[SignatureProblem] = []
    owners = _owners(trusted_keys)
    for index, step in enumerate(envelope.chain.steps):
        which = f"step {index} ({step.stage} by {step.organ})"
        if step.signature is None:
            if step.stage in required:
                problems.append(SignatureProblem("signature.missing", f"{which} is not signed"))
            continue
        owner = owners.get(step.key_id or "")
        if owner is None:
            named = "no key id" if step.key_id is None else f"key {_short(step.key_id)}, which no one trusts"
            problems.append(SignatureProblem("signature.unknown_key", f"{which} is signed with {named}"))
        elif owner != step.organ:
            problems.append(
                SignatureProblem("signature.wrong_signer", f"{which} is signed with {owner!r}'s key, not its own")
            )
        elif not _check_signature(str(step.key_id), _claim(envelope, index), step.signature):
            problems.append(SignatureProblem("signature.invalid", f"{which} has an invalid signature"))
    return problems


def _differing(sealed: PasteFields, received: PasteFields | None) -> list[str]:
    if received is None:
        return ["paste envelope (the stomach recorded none)"]
    names = {"paste_id": "id", "created_at": "time", "intent_digest": "intent", "budget_tokens": "budget"}
    return [shown for field, shown in names.items() if getattr(sealed, field) != getattr(received, field)]


def verify_seal(envelope: Envelope, trusted_keys: TrustedKeys) -> tuple[str | None, SignatureProblem | None]:
    """(the sender a valid seal names, None) or (None, why the paste has no sender anyone can vouch for).

    A genuine seal made for another paste envelope (an id, time, intent or budget other than the ones
    the stomach received) is ``seal.mismatch``: it names no sender, so its rightful owner is charged nothing.
    """
    seal = envelope.chain.seal
    if seal is None:
        return None, SignatureProblem("sender.unsealed", "the paste carries no sender's seal")
    sender = _owners(trusted_keys).get(seal.key_id)
    if sender is None:
        return None, SignatureProblem(
            "sender.unknown_key", f"the paste is sealed with key {_short(seal.key_id)}, which no one trusts"
        )
    if seal.covers is None or not _check_signature(
        seal.key_id, _seal_claim(envelope, seal.key_id, seal.covers), seal.signature
    ):
        return None, SignatureProblem("sender.invalid", f"{sender!r}'s seal does not match the paste it came with")
    differing = _differing(seal.covers, envelope.chain.received)
    if differing:
        return None, SignatureProblem(
            "seal.mismatch", f"{sender!r}'s seal was made for another paste: its {', '.join(differing)} differ"
        )
    return sender, None


def sealed_by(envelope: Envelope, trusted_keys: TrustedKeys | None) -> str | None:
    """The sender whose valid seal an envelope bears, at any hop; None without trusted keys or a valid seal.

    The one rule for whom an envelope's outcome is copied to (the border's decision, a dead letter's rejection)
    and whose frames a digest holds. A paste as it was handed in is checked against its own fields (the stomach
    records them as received on its first step)."""
    if trusted_keys is None or envelope.chain.seal is None:
        return None
    if isinstance(envelope.payload, Paste) and envelope.chain.received is None:
        chain = msgspec.structs.replace(envelope.chain, received=paste_fields(envelope))
        envelope = msgspec.structs.replace(envelope, chain=chain)
    return verify_seal(envelope, trusted_keys)[0]


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


def load_trusted_keys(settings: Settings) -> dict[str, str | list[str]] | None:
    """Name → public key (or keys) from the ``trusted_keys_file`` setting (JSON); None when unset.

    Every key is checked now, at start, not on the first envelope; a file that cannot
    be used raises ``ConfigError`` naming the variable.
    """
    path = settings.trusted_keys_file
    if not path:
        return None
    try:
        keys = json.loads(Path(path).read_text())
        if not isinstance(keys, dict):
            raise SigningError("not a JSON object of names to public keys")
        trusted: dict[str, str | list[str]] = {}
        for name, value in keys.items():
            listed = value if isinstance(value, list) else [value]
            for public_key in listed:
                _verify_key(str(public_key))
            trusted[str(name)] = [str(key) for key in value] if isinstance(value, list) else str(value)
        owners = _owners(trusted)
        if len(owners) < sum(1 if isinstance(value, str) else len(value) for value in trusted.values()):
            raise SigningError("one public key is trusted under two names")
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ConfigError(f"{variable_of('trusted_keys_file')}={path!r} is not allowed: {_reason(error)}") from None
    return trusted


def _reason(error: Exception) -> str:
    if isinstance(error, OSError):
        return error.strerror or type(error).__name__
    return str(error).splitlines()[0] if str(error) else type(error).__name__

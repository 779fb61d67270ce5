"""One hop of the law-floor bench (``bench/law_floor_bench.py`` spawns three): only what the laws require.

    python -m bench.law_floor_hop --hop stomach --nats URL --table FILE

The hop binds a durable pull consumer on its subject, and for each fetched batch: decodes every input,
checks the signatures its organ must check, signs and encodes the output the table holds for that input
(the pass-through core), writes its organ's state (the stomach's frame records, the border's ledger claims
and batched rate bucket), publishes the outputs with their ``Nats-Msg-Id``, waits for every publish ack,
then acks the inputs. The table's flags add, to price them, what the tract does beyond the laws.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from bench.common import HOP_KEY_HEADER, stop_on_signals
from envelopes.types import FrameRecord, Paste
from organs.signing import Signer

STREAM = "LAW_FLOOR"
SUBJECTS = ("floor.stomach", "floor.absorption", "floor.border", "floor.brain")
HOPS = ("stomach", "absorption", "border")
FRAME_INDEX = "floor-frame-index"
RATES = "floor-rates"
ADMITTED = "floor-admitted"
SETTLE_EVERY = 16
# What a configuration may leave out of the laws, and (with a +) what of the tract's own it may add.
PARTS = frozenset({"signing", "frames", "ledger", "whole-claims", "+paste", "+ack-sync", "+tasks"})


class HopTable(msgspec.Struct):
    """What one hop needs: its seed, the trusted keys, and per input id the output it emits (last step unsigned)
    with, for the stomach, the frame records of the paste."""

    seed: str | None
    trusted: dict[str, str] | None
    outputs: dict[str, bytes]
    records: dict[str, list[FrameRecord]] = {}
    ledger: bool = True
    digest_claims: bool = False
    # What the tract does beyond the laws, to price it in the same harness: the stomach's copy of the paste in
    # the frame index (the stream holds it already), and confirmed acks instead of plain ones.
    store_paste: bool = False
    confirmed_ack: bool = False
    # And the shape of the tract's worker loop: every input handled by an asyncio task of its own.
    task_per_input: bool = False


# --- the hops ------------------------------------------------------------------------------------------


@dataclass
class HopWork:
    """What one hop does to one input besides publishing it: checks, signing, its state writes."""

    name: str
    table: HopTable
    signer: Any
    unsettled: int = 0
    bucket_revision: int = 0
    settling: bool = False

    def check(self, envelope: Any) -> None:
        """The input's signatures as this hop must check them; a bench input that fails them is a bench bug."""
        from organs.signing import sealed_by, verify_chain, verify_seal

        trusted = self.table.trusted
        if trusted is None:
            return
        if self.table.digest_claims:
            problems: list[object] = [*_digest_problems(self.name, envelope, trusted)]
            if problems:
                raise SystemExit(f"{self.name}: input {envelope.id} fails its checks: {problems}")
            return
        if self.name == "stomach":
            # The stomach needs the sender: a tenant is served only the frames of pastes it sealed.
            problems = [] if sealed_by(envelope, trusted) else ["seal"]
        elif self.name == "absorption":
            # The border checks every signature of the chain itself, so absorption checks none.
            return
        else:
            _, problem = verify_seal(envelope, trusted)
            problems = [*verify_chain(envelope, trusted, ("digested", "yielded")), *filter(None, [problem])]
        if problems:
            raise SystemExit(f"{self.name}: input {envelope.id} fails its checks: {problems}")

    def __post_init__(self) -> None:
        from envelopes.codec import decode

        # Decoded once at start: looking an output up is the pass-through core, and costs nothing per input.
        self.outputs = {input_id: decode(data) for input_id, data in self.table.outputs.items()}

    def sign(self, envelope: Any) -> Any:
        from organs.signing import sign_last_step

        out = self.outputs[envelope.id]
        return out if self.signer is None else sign_last_step(out, self.signer)


def signer_for(hop: str, table: HopTable) -> Any:
    if table.seed is None:
        return None
    return (DigestSigner if table.digest_claims else Signer).from_seed(wire_name(hop), table.seed)


class DigestSigner(Signer):
    """Signs the blake3 digest of a claim rather than the claim (``--without whole-claims``): Ed25519 hashes what
    it signs with SHA-512, twice to sign and once to verify, so an 8 KB claim costs it 42 µs to sign and 53 to
    verify on this machine against 15 and 39 for 32 bytes. What a ``signing.py`` that hashed first would cost."""

    def sign(self, claim: bytes) -> str:
        import blake3

        return str(super().sign(blake3.blake3(claim).digest()))


_VERIFY_KEYS: dict[str, Any] = {}


def _holds(key_id: str, claim: bytes, signature: str) -> bool:
    """A digest signature's check, with each verify key decoded once (``signing`` decodes it on every check)."""
    import base64

    import blake3
    import nacl.exceptions

    from organs.signing import _verify_key

    key = _VERIFY_KEYS.get(key_id)
    if key is None:
        key = _VERIFY_KEYS[key_id] = _verify_key(key_id)
    try:
        key.verify(blake3.blake3(claim).digest(), base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4)))
    except (ValueError, nacl.exceptions.BadSignatureError):
        return False
    return True


def _digest_problems(hop: str, envelope: Any, trusted: dict[str, str]) -> Iterator[str]:
    """The checks ``HopWork.check`` makes, on digest signatures: the seal at the stomach and the border, every
    signature of the chain at the border, by the same claims as ``organs.signing``'s."""
    from organs.signing import _claim, _seal_claim, paste_fields

    if hop == "absorption":
        return
    owners = {key: name for name, key in trusted.items()}
    chain = envelope.chain
    if isinstance(envelope.payload, Paste) and chain.received is None:
        chain = msgspec.structs.replace(chain, received=paste_fields(envelope))
        envelope = msgspec.structs.replace(envelope, chain=chain)
    seal = chain.seal
    sealed = seal is not None and seal.covers is not None and seal.key_id in owners and seal.covers == chain.received
    if not sealed or not _holds(seal.key_id, _seal_claim(envelope, seal.key_id, seal.covers), seal.signature):
        yield "seal"
    if hop == "stomach":
        return
    for index, step in enumerate(chain.steps):
        if step.signature is None:
            if step.stage in ("digested", "yielded"):
                yield f"step {index} unsigned"
        elif owners.get(step.key_id or "") != step.organ:
            yield f"step {index} by another key"
        elif not _holds(str(step.key_id), _claim(envelope, index), step.signature):
            yield f"step {index} invalid"


async def _settle_bucket(js: Any, work: HopWork, kv: Any) -> None:
    """One compare-and-set write of the shared bucket for the tokens taken since the last (one actor here)."""
    value = msgspec.msgpack.encode((1e9 - work.unsettled, time.time()))
    work.unsettled = 0
    if work.bucket_revision == 0:
        work.bucket_revision = await kv.create("bench", value)
    else:
        work.bucket_revision = await kv.update("bench", value, last=work.bucket_revision)


async def _handle_fetched(js: Any, work: HopWork, kv: Any, messages: list[Any], outbound: str) -> None:
    if not work.table.task_per_input:
        await _handle_batch(js, work, kv, messages, outbound)
        return
    tasks = [asyncio.create_task(_handle_batch(js, work, kv, [msg], outbound)) for msg in messages]
    await asyncio.gather(*tasks)


async def _handle_batch(js: Any, work: HopWork, kv: Any, messages: list[Any], outbound: str) -> None:
    from envelopes.codec import decode, encode

    confirmations = []
    publishes: list[tuple[str, bytes, dict[str, str]]] = []
    for msg in messages:
        envelope = decode(msg.data)
        work.check(envelope)
        data = encode(work.sign(envelope))
        headers = {"Nats-Msg-Id": f"{envelope.id}/{work.name}", HOP_KEY_HEADER: (msg.headers or {})[HOP_KEY_HEADER]}
        publishes.append((outbound, data, headers))
        if work.name == "stomach":
            if work.table.store_paste and isinstance(envelope.payload, Paste):
                text = (envelope.payload.text or "").encode("utf-8", "surrogatepass")
                hex_ref = envelope.chain.input_digest.removeprefix("blake3:")
                confirmations.append(await js.publish_async(f"$KV.{FRAME_INDEX}.paste.{hex_ref}", text))
            for record in work.table.records.get(envelope.id, []):
                key = record.compact.id.removeprefix("blake3:")
                confirmations.append(await js.publish_async(f"$KV.{FRAME_INDEX}.{key}", encode(record)))
        elif work.name == "border" and work.table.ledger:
            # A create: the server refuses it if the key exists, so two replicas never both admit an id.
            claim = {"Nats-Expected-Last-Subject-Sequence": "0"}
            mark = str(msg.metadata.sequence.stream).encode()
            confirmations.append(await js.publish_async(f"$KV.{ADMITTED}.{envelope.id}", mark, headers=claim))
        if work.name == "border":
            work.unsettled += 1
    if work.name == "border":
        # The claims are confirmed before any prompt they cover is published.
        await asyncio.gather(*confirmations)
        confirmations = []
        if work.unsettled >= SETTLE_EVERY and not work.settling:
            # One settling write at a time: with a task per input, two could otherwise race on one revision.
            work.settling = True
            try:
                await _settle_bucket(js, work, kv)
            finally:
                work.settling = False
    for subject, data, headers in publishes:
        confirmations.append(await js.publish_async(subject, data, headers=headers))
    await asyncio.gather(*confirmations)
    if work.table.confirmed_ack:
        # All at once, as the tract's worker confirms them (one task per input).
        await asyncio.gather(*(msg.ack_sync() for msg in messages))
        return
    for msg in messages:
        await msg.ack()


async def run_hop(args: argparse.Namespace) -> None:
    import nats
    import nats.errors
    from nats.js import api

    table = msgspec.msgpack.decode(Path(args.table).read_bytes(), type=HopTable)
    work = HopWork(args.hop, table, signer_for(args.hop, table))
    index = HOPS.index(args.hop)
    nc = await nats.connect(args.nats, name=f"floor-{args.hop}")
    js = nc.jetstream(timeout=10)
    kv = await js.key_value(RATES) if args.hop == "border" else None
    config = api.ConsumerConfig(ack_wait=60, max_ack_pending=1000)
    subscription = await js.pull_subscribe(SUBJECTS[index], durable=args.hop, stream=STREAM, config=config)
    stop = stop_on_signals()
    busy = True
    while not stop.is_set():
        try:
            # Batched while messages flow; one long poll when idle, so a lone message is not held back.
            messages = await subscription.fetch(32 if busy else 1, timeout=0.02 if busy else 1.0)
        except (TimeoutError, nats.errors.TimeoutError):
            busy = False
            continue
        busy = True
        await _handle_fetched(js, work, kv, messages, SUBJECTS[index + 1])
    await subscription.unsubscribe()
    await nc.drain()


def wire_name(hop: str) -> str:
    from organs.anatomy import ABSORPTION, BORDER, STOMACH

    return {"stomach": STOMACH, "absorption": ABSORPTION, "border": BORDER}[hop].wire_name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="one hop of the law-floor bench")
    parser.add_argument("--hop", choices=HOPS, required=True)
    parser.add_argument("--nats", required=True)
    parser.add_argument("--table", required=True)
    asyncio.run(run_hop(parser.parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

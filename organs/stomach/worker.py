"""The stomach worker: ``<prefix>.stomach.in`` → ``<prefix>.absorption.in``.

It decodes a paste, runs ``ingest_paste`` (on a thread for a large paste, see
``call_core``), stores the paste and the frame index, then publishes the
digest. A paste whose evidence held secrets is stored twice: redacted (all that
``<prefix>.frames.get`` serves) and as received, in the raw store that only the
operator's ``<prefix>.frames.raw`` reads back. The backlog on its consumer
(pending messages, read from each delivery) is handed to the core, which steps
down to shallow or deferred.
A deferred paste also queues a notice on ``<prefix>.stomach.deferred``; a
second, low-priority consumer digests it in full once the main subject is
idle and publishes a follow-up digest with the same origin. The worker also
answers ``<prefix>.frames.get`` and ``<prefix>.frames.raw``; a compact frame whose content is stored apart
is served whole when it fits a reply, else by its reference (``Frame.content_ref``).

A paste over ``ICHOR_MAX_PASTE_BYTES`` is dead-lettered with a ``paste.too_large`` reason; one over
``ICHOR_LARGE_PASTE_BYTES`` is moved, unchanged, from the main consumer to ``<prefix>.stomach.large``,
whose own consumer digests one at a time in a child process (``organs.stomach.large``), as the
deferred consumer does for a large paste's follow-up: the main consumer spends milliseconds on it.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

import msgspec

from envelopes.codec import DecodeError, decode_frame_request, encode
from envelopes.ids import utc_now
from envelopes.types import DeferredNotice, DegradationTier, Digested, Envelope, Frame, FrameReply, Paste
from organs.anatomy import ABSORPTION, STOMACH
from organs.errors import ConfigError, FrameTampered
from organs.frame_check import verify_frame, whole_frame
from organs.redaction import parse_personal
from organs.runtime import (
    BusSettings,
    Delivery,
    OrganBuilder,
    Output,
    PoisonError,
    SealedBy,
    Tract,
    WorkerSpec,
    call_core,
    envelope_fields,
    get_logger,
)
from organs.runtime.bus import inline_room
from organs.runtime.stored_text import digest_by_reference, with_frame_text
from organs.secretion import secrete
from organs.settings import Settings
from organs.signing import Signer, TrustedKeys, sealed_by
from organs.stomach.core.ingest import IngestBundle, IngestConfig
from organs.stomach.core.parts import DigestParts, digest_parts, digested_payload
from organs.stomach.frames_store import FRAME_ID, SHORT_FRAME_ID, FrameNotFound, FrameStore
from organs.stomach.large import ApartDigester, PasteLimits
from organs.stomach.raw import answer_raw_request

__all__ = ["StomachOrgan", "build_stomach", "digest_paste", "ingest_config"]

_INGEST_FIELDS = (
    "budget_tokens",
    "shallow_chars",
    "deferred_chars",
    "shallow_backlog",
    "deferred_backlog",
    "max_blocks",
    "encoding",
)


def ingest_config(settings: Settings) -> IngestConfig:
    """The core's knobs from the settings (``ICHOR_BUDGET_TOKENS``, ``ICHOR_SHALLOW_CHARS`` and friends);
    what is not set keeps the core's default. An ``ICHOR_REDACT`` naming no known category is a ``ConfigError``."""
    overrides: dict[str, Any] = {
        name: getattr(settings, name) for name in _INGEST_FIELDS if getattr(settings, name) is not None
    }
    try:
        overrides["redact_personal"] = parse_personal(settings.redact)
    except ValueError as error:
        raise ConfigError(str(error).replace(":", " is not allowed:", 1)) from None
    return dataclasses.replace(IngestConfig(), **overrides)


def digest_paste(
    parent: Envelope,
    bundle: IngestBundle,
    *,
    instance: str,
    follow_up_of: str | None = None,
    now: str,
    signer: Signer | None = None,
) -> Envelope:
    """The digested envelope for a paste's bundle: pure, the origin untouched."""
    return _secrete_digest(
        parent, digested_payload(bundle, follow_up_of), bundle.tier, instance=instance, now=now, signer=signer
    )


def _secrete_digest(
    parent: Envelope, payload: Digested, tier: DegradationTier, *, instance: str, now: str, signer: Signer | None
) -> Envelope:
    return secrete(
        parent,
        organ=STOMACH.wire_name,
        instance=instance,
        dest=ABSORPTION.wire_name,
        payload=payload,
        stages=("ingested", "classified", "digested"),
        tier=tier,
        now=now,
        signer=signer,
    )


class StomachOrgan:
    """The stomach on one tract: its handlers are methods, its state (the stores, the large-paste digester, the
    main consumer's last backlog) attributes, so each handler can be called with an envelope of one's own."""

    def __init__(
        self,
        tract: Tract,
        settings: BusSettings,
        config: IngestConfig | None = None,
        *,
        signer: Signer | None = None,
        limits: PasteLimits | None = None,
        trusted_keys: TrustedKeys | None = None,
    ) -> None:
        self.tract = tract
        # Whose frames a digest holds, and whose own outcome subject gets a copy of a dead letter's rejection.
        self.sealed_by: SealedBy = functools.partial(sealed_by, trusted_keys=trusted_keys)
        self.settings = settings
        self.config = config or IngestConfig()
        self.signer = signer
        self.limits = limits or PasteLimits()
        self.store = FrameStore(tract)
        self.apart = ApartDigester(tract.settings, keep_bytes=self.limits.max_bytes)
        # Pending messages on the main consumer at its last delivery: the deferred consumer waits while any are.
        self.main_pending = 0
        self.log = get_logger(STOMACH.name)

    async def start(self) -> Sequence[WorkerSpec]:
        """Answer frame requests and return the three consumers: main, deferred follow-ups, large pastes."""
        await self.tract.nc.subscribe(self.tract.subjects.frames_get, queue=STOMACH.name, cb=self.serve_frame)
        subjects = self.tract.subjects
        await self.tract.nc.subscribe(subjects.frames_get_tenants, queue=STOMACH.name, cb=self.serve_tenant_frame)
        # Only the operator user may publish here (see organs.operations.security); no organ can.
        await self.tract.nc.subscribe(self.tract.subjects.frames_raw, queue=STOMACH.name, cb=self.serve_raw)
        main, deferred, large = STOMACH.consumers
        return [
            WorkerSpec(
                organ=STOMACH.name,
                durable=main.durable,
                subject=main.address(subjects),
                handle=self.handle_paste,
                sealed_by=self.sealed_by,
            ),
            WorkerSpec(
                organ=STOMACH.name,
                durable=deferred.durable,
                subject=deferred.address(subjects),
                handle=self.handle_deferred,
                batch=1,
                gate=self.main_is_idle,
                sealed_by=self.sealed_by,
            ),
            # One large paste at a time, each in a child process of its own.
            WorkerSpec(
                organ=STOMACH.name,
                durable=large.durable,
                subject=large.address(subjects),
                handle=self.handle_paste,
                batch=1,
                sealed_by=self.sealed_by,
            ),
        ]

    def main_is_idle(self) -> bool:
        return self.main_pending == 0

    async def digest(
        self, paste: Paste | DeferredNotice, size: int, ingest_config: IngestConfig, expected: str
    ) -> DigestParts:
        """The paste digested and stored: a large one by a child process, through a file; a small one here. A digest
        too large for a message has its largest texts (goal, frames' contents) stored too, and names them
        (``organs.runtime.stored_text``)."""
        ref = paste.text_ref if isinstance(paste, Paste) else paste.paste_ref
        inline = paste.text if isinstance(paste, Paste) and paste.text_ref is None else None
        if self.limits.is_large(size):
            return await self.apart.digest(
                ref=ref, text=inline, config=ingest_config, intent=paste.intent, expected=expected
            )
        text = inline if inline is not None else await _stored_text(self.store, ref or "")
        parts, redacted = await call_core(len(text), digest_parts, text, ingest_config, paste.intent, expected)
        if redacted is not None:
            await self.store.store_raw(text, parts.source_digest)
            await self.store.store(redacted, parts.served_ref, list(parts.records))
        else:
            await self.store.store(text, parts.source_digest, list(parts.records))
        return msgspec.structs.replace(parts, payload=await digest_by_reference(self.tract, parts.payload))

    async def paste_size(self, paste: Paste, delivery: Delivery) -> int:
        if paste.text_ref is None:
            return delivery.size
        try:
            return await self.store.paste_size(paste.text_ref)
        except FrameNotFound as error:
            raise PoisonError(f"paste reference {paste.text_ref} is not in the frames store") from error

    async def handle_paste(self, envelope: Envelope, delivery: Delivery) -> Sequence[Output]:
        paste = envelope.payload
        if not isinstance(paste, Paste):
            raise PoisonError(f"the stomach takes a 'paste' envelope, got {envelope.kind!r}")
        on_main = delivery.subject == self.tract.subjects.stomach_in
        if on_main:
            self.main_pending = delivery.num_pending
        if paste.encoding is not None and paste.encoding != self.config.encoding:
            # Loading an encoding a sender names could mean a download; only the configured one is used.
            raise PoisonError(
                f"encoding {paste.encoding!r} is not accepted; this stomach counts in {self.config.encoding!r}"
            )
        size = await self.paste_size(paste, delivery)
        refusal = self.limits.refusal(size)
        if refusal is not None:
            raise PoisonError(refusal)
        if on_main and self.limits.is_large(size):
            # Moved unchanged (origin, chain and id kept) to the large pastes' own consumer, under an id of its
            # own there: the paste's id is in the duplicate window already.
            self.log.info("stomach.moved_apart", **envelope_fields(envelope), bytes=size)
            return [Output(self.tract.subjects.stomach_large, envelope, msg_id=f"{envelope.id}-large")]
        ingest_config = dataclasses.replace(
            self.config,
            backlog=delivery.num_pending,
            budget_tokens=self.config.budget_tokens if paste.budget_tokens is None else paste.budget_tokens,
        )
        parts = await self.digest(paste, size, ingest_config, envelope.chain.input_digest)
        digested = _secrete_digest(
            envelope, parts.payload, parts.tier, instance=self.settings.instance, signer=self.signer, now=utc_now()
        )
        await self.own_frames(digested, parts.payload)
        outputs = [Output(self.tract.subjects.absorption_in, digested)]
        if parts.tier == "deferred":
            outputs.append(self._deferred_notice(envelope, paste, parts, ingest_config.encoding, digested.id))
        self.log.info(
            "stomach.digested",
            **envelope_fields(digested),
            input_id=envelope.id,
            tier_reason=parts.payload.tier_reason,
            redacted=parts.redacted,
        )
        return outputs

    def _deferred_notice(
        self, envelope: Envelope, paste: Paste, parts: DigestParts, encoding: str, digested_id: str
    ) -> Output:
        """The notice that queues a deferred paste for its digest in full once the main subject is idle."""
        notice = DeferredNotice(
            paste_ref=parts.source_digest,
            intent=paste.intent,
            encoding=encoding,
            budget_tokens=paste.budget_tokens,
            deferred_envelope_id=digested_id,
        )
        return Output(
            self.tract.subjects.stomach_deferred,
            secrete(
                envelope,
                organ=STOMACH.wire_name,
                instance=self.settings.instance,
                dest=STOMACH.wire_name,
                payload=notice,
                stages=(),
                tier="deferred",
                role="deferred",
                now=utc_now(),
            ),
        )

    async def handle_deferred(self, envelope: Envelope, _: Delivery) -> Sequence[Output]:
        notice = envelope.payload
        if not isinstance(notice, DeferredNotice):
            raise PoisonError(f"the deferred subject takes a 'deferred_notice', got {envelope.kind!r}")
        try:
            size = await self.store.paste_size(notice.paste_ref)
        except FrameNotFound as error:
            raise PoisonError(str(error)) from error
        # Later, in full: no size or backlog step-down; a zero budget falls back to the default.
        base = self.config
        ingest_config = dataclasses.replace(
            base,
            backlog=0,
            shallow_chars=max(base.deferred_chars, size + 1),
            deferred_chars=max(base.deferred_chars, size + 1),
            budget_tokens=notice.budget_tokens or base.budget_tokens,
            encoding=notice.encoding or base.encoding,
        )
        parts = await self.digest(notice, size, ingest_config, notice.paste_ref)
        follow_up = _secrete_digest(
            envelope,
            msgspec.structs.replace(parts.payload, follow_up_of=notice.deferred_envelope_id),
            parts.tier,
            instance=self.settings.instance,
            signer=self.signer,
            now=utc_now(),
        )
        await self.own_frames(follow_up, parts.payload)
        return [Output(self.tract.subjects.absorption_in, follow_up)]

    async def own_frames(self, digested: Envelope, payload: Digested) -> None:
        """The frames of a sealed paste recorded as its sender's, before the outcome can name them: a tenant
        learns its frame ids from its own outcome only. The seal is checked on the digested envelope, which
        carries the paste fields the stomach received."""
        sender = self.sealed_by(digested)
        if sender is not None:
            frames = dict.fromkeys(r.frame_id for r in payload.report if r.frame_id is not None)
            await self.store.own(sender, frames)

    async def serve_frame(self, msg: Any) -> None:
        limit = inline_room(self.tract)
        await msg.respond(encode(await _answer_frame_request(self.store, msg.data, limit)))

    async def serve_tenant_frame(self, msg: Any) -> None:
        # Only the tenant named by the subject may publish there (organs.operations.security): it is served the
        # frames of pastes it handed in, and of any other the same answer as for no frame at all.
        tenant = msg.subject.rsplit(".", 1)[-1]
        limit = inline_room(self.tract)
        await msg.respond(encode(await _answer_frame_request(self.store, msg.data, limit, tenant=tenant)))

    async def serve_raw(self, msg: Any) -> None:
        limit = inline_room(self.tract)
        await msg.respond(encode(await answer_raw_request(self.store, msg.data, limit)))


def build_stomach(
    settings: BusSettings,
    config: IngestConfig | None = None,
    *,
    signer: Signer | None = None,
    limits: PasteLimits | None = None,
    trusted_keys: TrustedKeys | None = None,
) -> OrganBuilder:
    """The stomach's builder for ``serve_organ``: a ``StomachOrgan`` on the tract it is given. ``trusted_keys``
    (a secure tract's) name who sealed each paste: its frames are served to that sender alone."""

    async def build(tract: Tract) -> Sequence[WorkerSpec]:
        organ = StomachOrgan(tract, settings, config, signer=signer, limits=limits, trusted_keys=trusted_keys)
        return await organ.start()

    return build


async def _stored_text(store: FrameStore, ref: str) -> str:
    try:
        return await store.get_paste(ref)
    except FrameNotFound as error:
        raise PoisonError(f"paste reference {ref} is not in the frames store") from error


async def _compact_served(store: FrameStore, compact: Frame) -> Frame:
    """A record's compact frame as a reply carries it: its content by reference fetched in when the reply still
    fits a message, else the reference itself (``content_ref``: the frames object store holds the text)."""
    max_payload = int(store.tract.nc.max_payload)
    if compact.content_ref is None or compact.content_ref.size > max_payload:
        return compact
    try:
        fetched = await with_frame_text(store.tract, compact)
    except PoisonError as error:
        raise FrameTampered(str(error)) from error
    # A reply is the frame alone, with no envelope around it: what the server takes is what is left.
    return fetched if len(encode(FrameReply(frame=fetched))) <= max_payload else compact


def _compact_reply(store: FrameStore, compact: Frame) -> FrameReply:
    """The reply for a compact frame: the frame, and when its content stays by reference, where the text is."""
    ref = compact.content_ref
    if ref is None or compact.content:
        return FrameReply(frame=compact)
    return FrameReply(
        frame=compact,
        error=(
            f"the compact frame's content is {ref.size:,} bytes, more than one reply carries; it is object "
            f"{ref.name} in the {store.tract.subjects.frames_bucket} object store (blake3 {ref.digest})"
        ),
    )


async def _answer_frame_request(store: FrameStore, data: bytes, limit: int, tenant: str | None = None) -> FrameReply:
    """The reply to one request; a full frame larger than ``limit`` bytes says where its bytes are instead.
    For a ``tenant``, a frame it did not hand in is answered as a frame that does not exist."""
    try:
        request = decode_frame_request(data)
    except DecodeError as error:
        return FrameReply(error=f"malformed frame request: {error}")
    shortened = SHORT_FRAME_ID.fullmatch(request.id)
    if shortened is not None:
        # The short id a prompt's table shows, resolved here for every asker: a tenant may not list the frame
        # index, and is resolved among the frames it handed in only.
        try:
            request = msgspec.structs.replace(request, id=await store.resolve(shortened.group(1), owner=tenant))
        except FrameNotFound as error:
            return FrameReply(error=str(error))
    if FRAME_ID.fullmatch(request.id) is None:
        return FrameReply(error=f"frame id must be 'blake3:<64 hex>', got {request.id!r}")
    if tenant is not None and not await store.owned_by(tenant, request.id):
        return FrameReply(error=f"no frame {request.id}")
    try:
        record = await store.record(request.id)
        if request.representation == "compact":
            return _compact_reply(store, verify_frame(await _compact_served(store, record.compact), request.id))
        paste = await store.get_paste(record.paste_ref)
    except (FrameNotFound, FrameTampered) as error:
        return FrameReply(error=str(error))
    full_text = paste[record.span[0] : record.span[1]]
    compact = record.compact
    if compact.full_bytes > limit:
        return FrameReply(
            error=(
                f"the full frame is {compact.full_bytes:,} bytes, more than one message carries; its bytes are "
                f"[{record.span[0]}, {record.span[1]}) of object {record.paste_ref.removeprefix('blake3:')} "
                f"in the {store.tract.subjects.frames_bucket} object store"
            )
        )
    try:
        return FrameReply(frame=whole_frame(compact, full_text))
    except FrameTampered as error:
        return FrameReply(error=str(error))

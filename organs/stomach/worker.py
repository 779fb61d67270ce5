"""The stomach worker: ``<prefix>.stomach.in`` → ``<prefix>.absorption.in``.

It decodes a paste, runs ``ingest_paste`` (on a thread for a large paste, see
``call_core``), stores the paste and the frame index, then publishes the
digest. The backlog on its consumer (pending messages, read from each
delivery) is handed to the core, which steps down to shallow or deferred.
A deferred paste also queues a notice on ``<prefix>.stomach.deferred``; a
second, low-priority consumer digests it in full once the main subject is
idle and publishes a follow-up digest with the same origin. The worker also
answers ``<prefix>.frames.get``.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Sequence
from typing import Any

import msgspec

from envelopes.codec import DecodeError, decode_frame_request, encode
from envelopes.types import DeferredNotice, Digested, Envelope, FrameRecord, FrameReply, Paste
from organs.client import INLINE_HEADROOM
from organs.counting import encoding_from_env
from organs.runtime import (
    BusSettings,
    Delivery,
    OrganBuilder,
    Output,
    PoisonError,
    Tract,
    WorkerSpec,
    call_core,
    get_logger,
)
from organs.secretion import secrete
from organs.signing import Signer, load_signer
from organs.stomach.frames_store import FrameNotFound, FrameStore
from organs.stomach.ingest import IngestBundle, IngestConfig, ingest_paste

__all__ = ["build_stomach", "digest_paste", "ingest_config_from_env"]

_FRAME_ID = re.compile(r"blake3:[0-9a-f]{64}")


def ingest_config_from_env() -> IngestConfig:
    """The core's knobs from ``ICHOR_BUDGET_TOKENS``, ``ICHOR_SHALLOW_CHARS`` and friends."""
    defaults = IngestConfig()
    overrides: dict[str, Any] = {}
    for field, variable in (
        ("budget_tokens", "ICHOR_BUDGET_TOKENS"),
        ("shallow_chars", "ICHOR_SHALLOW_CHARS"),
        ("deferred_chars", "ICHOR_DEFERRED_CHARS"),
        ("shallow_backlog", "ICHOR_SHALLOW_BACKLOG"),
        ("deferred_backlog", "ICHOR_DEFERRED_BACKLOG"),
        ("max_blocks", "ICHOR_MAX_BLOCKS"),
    ):
        if os.environ.get(variable):
            overrides[field] = int(os.environ[variable])
    overrides["encoding"] = encoding_from_env()
    return dataclasses.replace(defaults, **overrides)


def digest_paste(
    parent: Envelope,
    bundle: IngestBundle,
    *,
    instance: str,
    follow_up_of: str | None = None,
    now: str | None = None,
    signer: Signer | None = None,
) -> Envelope:
    """The digested envelope for a paste's bundle: pure, the origin untouched."""
    return secrete(
        parent,
        organ="stomach",
        instance=instance,
        dest="absorption",
        payload=Digested(
            goal=bundle.query.goal,
            anchors=bundle.query.anchors,
            frames=bundle.provider.frames,
            report=bundle.report,
            budget_tokens=bundle.query.budget_tokens,
            encoding=bundle.encoding,
            source_ref=bundle.source_digest,
            tier_reason=bundle.tier_reason,
            follow_up_of=follow_up_of,
        ),
        stages=("ingested", "classified", "digested"),
        tier=bundle.tier,
        now=now,
        signer=signer,
    )


def _frame_records(bundle: IngestBundle) -> list[FrameRecord]:
    # A deferred paste is indexed with its references: rendering them now is the work deferral
    # puts off. The follow-up digest indexes the same frame ids again with their renderings.
    return [
        FrameRecord(
            paste_ref=bundle.source_digest,
            span=bundle.provider.span(frame.id),
            compact=frame if bundle.tier == "deferred" else bundle.provider.serve(frame.id, "compact"),
        )
        for frame in bundle.provider.frames
    ]


def build_stomach(settings: BusSettings, config: IngestConfig | None = None) -> OrganBuilder:
    base_config = config or ingest_config_from_env()
    signer = load_signer("stomach")
    log = get_logger("stomach")

    async def build(tract: Tract) -> Sequence[WorkerSpec]:
        store = FrameStore(tract)
        main_backlog = {"pending": 0}

        async def digest(text: str, ingest_config: IngestConfig, intent: str | None, expected: str) -> IngestBundle:
            bundle = await call_core(len(text), ingest_paste, text, ingest_config, intent=intent)
            # The core digests the whole paste anyway; its digest is the check, before anything is stored.
            if bundle.source_digest != expected:
                raise PoisonError(f"the paste's bytes digest to {bundle.source_digest}, not {expected}")
            await store.store(text, bundle.source_digest, _frame_records(bundle))
            return bundle

        async def handle_paste(envelope: Envelope, delivery: Delivery) -> Sequence[Output]:
            paste = envelope.payload
            if not isinstance(paste, Paste):
                raise PoisonError(f"the stomach takes a 'paste' envelope, got {envelope.kind!r}")
            main_backlog["pending"] = delivery.num_pending
            if paste.encoding is not None and paste.encoding != base_config.encoding:
                # Loading an encoding a sender names could mean a download; only the configured one is used.
                raise PoisonError(
                    f"encoding {paste.encoding!r} is not accepted; this stomach counts in {base_config.encoding!r}"
                )
            text = await _paste_text(store, paste)
            ingest_config = dataclasses.replace(
                base_config,
                backlog=delivery.num_pending,
                budget_tokens=base_config.budget_tokens if paste.budget_tokens is None else paste.budget_tokens,
            )
            bundle = await digest(text, ingest_config, paste.intent, envelope.chain.input_digest)
            digested = digest_paste(envelope, bundle, instance=settings.instance, signer=signer)
            outputs = [Output(tract.subjects.absorption_in, digested)]
            if bundle.tier == "deferred":
                notice = DeferredNotice(
                    paste_ref=bundle.source_digest,
                    intent=paste.intent,
                    encoding=ingest_config.encoding,
                    budget_tokens=paste.budget_tokens,
                    deferred_envelope_id=digested.id,
                )
                outputs.append(
                    Output(
                        tract.subjects.stomach_deferred,
                        secrete(
                            envelope,
                            organ="stomach",
                            instance=settings.instance,
                            dest="stomach",
                            payload=notice,
                            stages=(),
                            tier="deferred",
                            role="deferred",
                        ),
                    )
                )
            log.info("stomach.digested", envelope_id=digested.id, tier=bundle.tier, tier_reason=bundle.tier_reason)
            return outputs

        async def handle_deferred(envelope: Envelope, _: Delivery) -> Sequence[Output]:
            notice = envelope.payload
            if not isinstance(notice, DeferredNotice):
                raise PoisonError(f"the deferred subject takes a 'deferred_notice', got {envelope.kind!r}")
            text = await store.get_paste(notice.paste_ref)
            # Later, in full: no size or backlog step-down; a zero budget falls back to the default.
            ingest_config = dataclasses.replace(
                base_config,
                backlog=0,
                shallow_chars=max(base_config.deferred_chars, len(text) + 1),
                deferred_chars=max(base_config.deferred_chars, len(text) + 1),
                budget_tokens=notice.budget_tokens or base_config.budget_tokens,
                encoding=notice.encoding or base_config.encoding,
            )
            bundle = await digest(text, ingest_config, notice.intent, notice.paste_ref)
            follow_up = digest_paste(
                envelope, bundle, instance=settings.instance, follow_up_of=notice.deferred_envelope_id, signer=signer
            )
            return [Output(tract.subjects.absorption_in, follow_up)]

        async def serve_frame(msg: Any) -> None:
            limit = tract.nc.max_payload - INLINE_HEADROOM
            await msg.respond(encode(await _answer_frame_request(store, msg.data, limit)))

        await tract.nc.subscribe(tract.subjects.frames_get, queue="stomach", cb=serve_frame)
        return [
            WorkerSpec(organ="stomach", durable="stomach", subject=tract.subjects.stomach_in, handle=handle_paste),
            WorkerSpec(
                organ="stomach",
                durable="stomach-deferred",
                subject=tract.subjects.stomach_deferred,
                handle=handle_deferred,
                batch=1,
                gate=lambda: main_backlog["pending"] == 0,
            ),
        ]

    return build


async def _paste_text(store: FrameStore, paste: Paste) -> str:
    if paste.text_ref is None:
        return paste.text
    try:
        return await store.get_paste(paste.text_ref)
    except FrameNotFound as error:
        raise PoisonError(f"paste reference {paste.text_ref} is not in the frames store") from error


async def _answer_frame_request(store: FrameStore, data: bytes, limit: int) -> FrameReply:
    """The reply to one request; a full frame larger than ``limit`` bytes says where its bytes are instead."""
    try:
        request = decode_frame_request(data)
    except DecodeError as error:
        return FrameReply(error=f"malformed frame request: {error}")
    if _FRAME_ID.fullmatch(request.id) is None:
        return FrameReply(error=f"frame id must be 'blake3:<64 hex>', got {request.id!r}")
    try:
        record = await store.record(request.id)
        if request.representation == "compact":
            return FrameReply(frame=record.compact)
        paste = await store.get_paste(record.paste_ref)
    except FrameNotFound as error:
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
    return FrameReply(
        frame=msgspec.structs.replace(
            compact,
            representation="full",
            content=full_text,
            content_digest=compact.id,
            token_cost=compact.full_tokens,
        )
    )

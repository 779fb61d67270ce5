"""Bad input, fed to every organ's decoder, core and worker.

Three layers, each with its own promise:

1. The decoder (``envelopes.codec.decode``) on hostile bytes returns an
   ``Envelope`` or raises one of ``DecodeError``: nothing else, and never slowly.
2. Each pure core (stomach ``ingest_paste`` and its classifier rungs, absorption
   ``yield_context``, border ``border_decide``/``screen``/``compile``) finishes
   within a generous time bound on hostile but valid envelopes and raises only
   what its contract names. Bounds are loose on purpose: they exist to catch
   super-linear blowups (catastrophic regex backtracking, quadratic loops), not
   to benchmark. Timings are printed; ``pytest -s`` shows them.
3. The workers on a real nats-server: every undecodable or unprocessable
   envelope lands in ``ICHOR_DLQ`` with its exact bytes and an
   ``Ichor-Dlq-Reason``; every good paste reaches the brain; the workers keep
   consuming afterwards.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envelopes.codec import DecodeError, decode, decode_frame_request, encode
from envelopes.ids import digest_text
from envelopes.types import (
    Admitted,
    CompiledPrompt,
    Envelope,
    Frame,
    Paste,
    Rejected,
    Yield,
)
from organs.absorption import build_absorption
from organs.absorption.core import yield_context
from organs.anatomy import ORGANS, organ_named
from organs.border import BorderConfig, CompileError, GuardState, border_decide, compile, screen
from organs.border.guard import Admission, Rejection
from organs.border.prompt import builtin_modules, paste_modules
from organs.border.worker import build_border
from organs.errors import PoisonError
from organs.runtime.bus import BusSettings, Tract
from organs.stomach import classify as ladder
from organs.stomach.ingest import IngestBundle, IngestConfig, ingest_paste
from organs.stomach.worker import build_stomach
from tests.bus.helpers import consumer_settled, read_envelopes, read_subject, subject_count, wait_for_count
from tests.conftest import running_organ
from tests.fault.bad_inputs import (
    HUGE_LENGTH_CLAIMS,
    INVALID_UTF8,
    PAYLOAD_TAGS,
    PROVENANCE_TAGS,
    PathologicalLine,
    deferred_notice_envelope,
    msgpack_str,
    msgpack_values,
    nested_arrays,
    nested_maps,
    paste,
    pathological_lines,
    paths,
    raw_map,
    repeat_to,
    replaced,
    splice,
    timed,
    valid_envelopes,
)
from tests.support.envelopes import AT, digested_envelope, note_frame
from tests.support.honesty import assert_bundle_honest
from tests.support.servers import small_tract

# A decode of a message-sized input takes microseconds; a full second means it hung or went quadratic.
DECODE_BOUND_S = 1.0
# The classifier examines at most 400 lines of 400 characters per block, so one block is cheap
# whatever it holds: linear rungs take milliseconds here, a catastrophic backtrack takes minutes.
CLASSIFY_BOUND_S = 2.0
# A whole ingest: generous, about 10 s per MB (tokenizing alone runs near 4 MB/s), never under 2 s.
INGEST_BOUND_S_PER_MB = 10.0
# Big pastes (50 MB, a million lines, a 10 MB line): the bound for "finishes at all".
HUGE_PASTE_BOUND_S = 60.0
CORE_BOUND_S = 30.0
ASK = "Why is this slow?"

DECODER_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
VALID = valid_envelopes()
VALID_BYTES = [encode(envelope) for envelope in VALID]
VALID_MAPS = [raw_map(envelope) for envelope in VALID]


def ingest_bound(text: str) -> float:
    return max(2.0, INGEST_BOUND_S_PER_MB * len(text) / 1_000_000)


def decode_outcome(data: bytes) -> Envelope | None:
    """Decode ``data``; an allowed failure is ``None``, anything else propagates and fails the test."""
    started = time.perf_counter()
    try:
        envelope = decode(data)
    except DecodeError:
        envelope = None
    elapsed = time.perf_counter() - started
    assert elapsed < DECODE_BOUND_S, f"decoding {len(data)} bytes took {elapsed:.2f} s"
    if envelope is not None:
        # Whatever decodes must survive the round trip: a worker re-encodes what it forwards.
        assert decode(encode(envelope)) == envelope
    return envelope


# --- 1. the decoder -----------------------------------------------------------------


@DECODER_SETTINGS
@given(st.binary(max_size=4096))
def test_arbitrary_bytes_decode_or_raise_decode_error(data: bytes) -> None:
    decode_outcome(data)


@pytest.mark.parametrize("index", range(len(VALID_BYTES)), ids=[envelope.kind for envelope in VALID])
def test_every_truncation_of_a_valid_envelope_is_a_decode_error(index: int) -> None:
    whole = VALID_BYTES[index]
    assert decode(whole) == VALID[index]
    # Every proper prefix, not a sample: a prefix of one msgpack map is never a whole value.
    for length in range(len(whole)):
        with pytest.raises(DecodeError):
            decode(whole[:length])


@DECODER_SETTINGS
@given(st.sampled_from(VALID_BYTES), st.data())
def test_truncated_and_extended_envelopes_decode_or_raise(whole: bytes, data: st.DataObject) -> None:
    cut = data.draw(st.integers(min_value=0, max_value=len(whole)))
    tail = data.draw(st.binary(max_size=64))
    decode_outcome(whole[:cut] + tail)


@DECODER_SETTINGS
@given(st.sampled_from(VALID_BYTES), st.data())
def test_corrupted_bytes_decode_or_raise(whole: bytes, data: st.DataObject) -> None:
    corrupted = bytearray(whole)
    for _ in range(data.draw(st.integers(min_value=1, max_value=8))):
        position = data.draw(st.integers(min_value=0, max_value=len(corrupted) - 1))
        corrupted[position] = data.draw(st.integers(min_value=0, max_value=255))
    decode_outcome(bytes(corrupted))


@DECODER_SETTINGS
@given(st.sampled_from(VALID_MAPS), st.data())
def test_any_field_with_any_wrong_value_decodes_or_raises(base: dict[str, Any], data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(list(paths(base))))
    value = data.draw(msgpack_values)
    decode_outcome(msgspec.msgpack.encode(replaced(base, path, value)))


@DECODER_SETTINGS
@given(st.sampled_from(VALID_MAPS), st.data())
def test_dropped_fields_decode_or_raise(base: dict[str, Any], data: st.DataObject) -> None:
    containers = [path for path in paths(base) if isinstance(_at(base, path), dict) and _at(base, path)]
    path = data.draw(st.sampled_from(containers))
    copy = msgspec.msgpack.decode(msgspec.msgpack.encode(base))
    holder = _at(copy, path)
    del holder[data.draw(st.sampled_from(sorted(holder)))]
    decode_outcome(msgspec.msgpack.encode(copy))


def _at(data: Any, path: tuple[str | int, ...]) -> Any:
    for key in path:
        data = data[key]
    return data


@pytest.mark.parametrize(
    ("path", "tag"),
    [
        *((("payload", "kind"), tag) for tag in ("", "Paste", "paste ", "unknown", "\x00", "yield\x00")),
        *((("chain", "origin", "kind"), tag) for tag in ("", "admin", "User_Input", *PAYLOAD_TAGS)),
        *((("provenance", "kind"), tag) for tag in ("root", *PAYLOAD_TAGS)),
        *((("kind",), tag) for tag in ("nope", "digested", "deferred_notice")),
    ],
)
def test_wrong_tags_are_decode_errors(path: tuple[str, ...], tag: str) -> None:
    # The paste map: none of these tags names the union member whose fields it carries.
    with pytest.raises(DecodeError):
        decode(msgspec.msgpack.encode(replaced(VALID_MAPS[0], path, tag)))


@pytest.mark.parametrize("tag", [tag for tag in PAYLOAD_TAGS if tag != "paste"])
def test_a_paste_body_under_another_payload_tag_is_a_decode_error(tag: str) -> None:
    data = replaced(replaced(VALID_MAPS[0], ("payload", "kind"), tag), ("kind",), tag)
    with pytest.raises(DecodeError):
        decode(msgspec.msgpack.encode(data))


@pytest.mark.parametrize("tag", PROVENANCE_TAGS)
def test_provenance_tags_without_their_fields_are_decode_errors(tag: str) -> None:
    with pytest.raises(DecodeError):
        decode(msgspec.msgpack.encode(replaced(VALID_MAPS[0], ("chain", "origin"), {"kind": tag})))


TYPED_PATHS: list[tuple[str | int, ...]] = [
    ("source",),
    ("v",),
    ("payload",),
    ("payload", "text"),
    ("payload", "intent"),
    ("provenance",),
    ("chain",),
    ("chain", "steps"),
    ("chain", "origin", "actor"),
]


def _nesting_params() -> list[Any]:
    params = []
    for name, nesting in (("arrays", nested_arrays), ("maps", nested_maps)):
        for path in TYPED_PATHS:
            params.append(pytest.param(path, nesting, id=f"{name}-{'.'.join(map(str, path))}"))
    return params


@pytest.mark.parametrize(("path", "nesting"), _nesting_params())
def test_ten_thousand_levels_in_a_typed_field_are_a_decode_error(
    path: tuple[str | int, ...], nesting: Callable[[int], bytes]
) -> None:
    data = splice(VALID_MAPS[0], path, nesting(10_000))
    outcome, elapsed = timed(f"decode 10,000 nested levels at {'.'.join(map(str, path))}", lambda: decode_outcome(data))
    assert outcome is None
    assert elapsed < DECODE_BOUND_S


UNKNOWN_PATHS: list[tuple[str | int, ...]] = [("x_extra",), ("payload", "x_extra"), ("chain", "origin", "x_extra")]


@pytest.mark.parametrize("path", UNKNOWN_PATHS, ids=[".".join(map(str, path)) for path in UNKNOWN_PATHS])
def test_deep_nesting_in_an_unknown_field_is_a_decode_error(path: tuple[str | int, ...]) -> None:
    # Unknown fields are allowed (schema evolution), so the decoder skips them: it must skip safely.
    assert decode_outcome(splice(VALID_MAPS[0], path, nested_arrays(10_000))) is None


def test_deep_nesting_in_a_frame_request_is_a_decode_error() -> None:
    request = splice({"id": "blake3:" + "0" * 64, "x_extra": 0}, ("x_extra",), nested_arrays(10_000))
    with pytest.raises(DecodeError):
        decode_frame_request(request)


STRING_PATHS: list[tuple[str | int, ...]] = [
    ("source",),
    ("id",),
    ("payload", "text"),
    ("payload", "kind"),
    ("chain", "origin", "actor"),
    ("chain", "input_digest"),
]


@pytest.mark.parametrize("path", STRING_PATHS, ids=[".".join(map(str, path)) for path in STRING_PATHS])
@pytest.mark.parametrize("bad", INVALID_UTF8, ids=[bad.hex() for bad in INVALID_UTF8])
def test_invalid_utf8_in_any_string_is_a_decode_error(path: tuple[str | int, ...], bad: bytes) -> None:
    data = splice(VALID_MAPS[0], path, msgpack_str(b"text " + bad + b" text"))
    with pytest.raises(DecodeError):
        decode(data)


@pytest.mark.parametrize("bad", INVALID_UTF8, ids=[bad.hex() for bad in INVALID_UTF8])
def test_invalid_utf8_in_an_unknown_field_never_travels_on(bad: bytes) -> None:
    # msgspec skips an unknown field unread (schema evolution), so the envelope may decode; what
    # matters is that the bad bytes are gone from what a worker re-encodes and forwards.
    data = splice(VALID_MAPS[0], ("x_extra",), msgpack_str(b"text " + bad + b" text"))
    envelope = decode_outcome(data)
    assert envelope is None or bad not in encode(envelope)


def test_nul_bytes_in_free_text_survive_and_in_checked_fields_are_refused() -> None:
    text = "log line\x00with a NUL\n\n\x00Why?\x00"
    with_nuls = decode(msgspec.msgpack.encode(replaced(VALID_MAPS[0], ("payload", "text"), text)))
    assert isinstance(with_nuls.payload, Paste) and with_nuls.payload.text == text
    for path in (("id",), ("trace",), ("created_at",), ("chain", "input_digest")):
        value = _at(VALID_MAPS[0], path)
        with pytest.raises(DecodeError):
            decode(msgspec.msgpack.encode(replaced(VALID_MAPS[0], path, value[:-1] + "\x00")))


@pytest.mark.parametrize("claim", HUGE_LENGTH_CLAIMS, ids=[claim[:1].hex() for claim in HUGE_LENGTH_CLAIMS])
@pytest.mark.parametrize("where", ["whole", "payload.text"])
def test_huge_length_claims_fail_fast(claim: bytes, where: str) -> None:
    data = claim if where == "whole" else splice(VALID_MAPS[0], ("payload", "text"), claim)
    outcome, elapsed = timed(f"decode a 4 GiB length claim ({claim[:1].hex()}, {where})", lambda: decode_outcome(data))
    assert outcome is None
    assert elapsed < 0.1


# --- 2. the cores: stomach classifier ladder ------------------------------------------------

RUNGS: list[tuple[str, Callable[[list[str]], Any]]] = [(rung.__name__, rung) for rung in ladder.LADDER]


def _rung_params() -> list[Any]:
    return [pytest.param(shape, id=shape.name) for shape in pathological_lines()]


@pytest.mark.parametrize("shape", _rung_params())
def test_every_classifier_rung_is_fast_on_pathological_lines(shape: PathologicalLine) -> None:
    block = "\n".join([shape.line] * shape.lines)
    sample = ladder.sample_lines(block)
    for name, rung in RUNGS:

        def run(rung: Callable[[list[str]], Any] = rung) -> Any:
            return rung(sample)

        _, elapsed = timed(f"rung {name} on {shape.lines} × {shape.name!r}", run)
        assert elapsed < CLASSIFY_BOUND_S, f"rung {name} took {elapsed:.2f} s on {shape.name} ({shape.rung})"
    token = shape.line * 250  # a single 100k-character token or line: the path rung's input
    _, path_elapsed = timed(f"rung 2 path on a 100k-char {shape.name!r} token", lambda: ladder._path_rung(token))
    assert path_elapsed < CLASSIFY_BOUND_S
    _, elapsed = timed(f"classify {shape.name!r} block", lambda: ladder.classify(block, fenced=False))
    assert elapsed < CLASSIFY_BOUND_S


# --- 2. the cores: ingest_paste ---------------------------------------------------------


def check_bundle(text: str, bundle: IngestBundle, *, intent: str | None = None) -> None:
    """What every digest must honour, whatever the input: the honesty every stomach test checks, a stated tier."""
    assert_bundle_honest(text, bundle)
    assert bundle.tier in ("full", "shallow", "deferred") and bundle.tier_reason
    if intent is not None:
        assert bundle.query.goal == intent


def timed_ingest(label: str, text: str, **kwargs: Any) -> tuple[IngestBundle, float]:
    bundle, elapsed = timed(
        f"ingest_paste {label} ({len(text) / 1e6:.1f} M chars)", lambda: ingest_paste(text, **kwargs)
    )
    print(f"          tier={bundle.tier} segments={len(bundle.report)} frames={len(bundle.provider.frames)}")
    return bundle, elapsed


@pytest.mark.slow
@pytest.mark.parametrize(
    "shape", [pytest.param(shape, id=shape.name) for shape in pathological_lines() if shape.lines == 400]
)
def test_ingest_of_a_megabyte_of_each_pathological_line_is_bounded(shape: PathologicalLine) -> None:
    text = repeat_to(shape.line, 1_000_000) + "\n\n" + ASK
    # The intent is given: a run of backtick lines may leave a fence open that swallows the ask, as it should.
    bundle, elapsed = timed_ingest(shape.name, text, intent=ASK)
    assert elapsed < ingest_bound(text), f"{elapsed:.1f} s for {shape.name}"
    check_bundle(text, bundle, intent=ASK)


# Pieces that are hostile to the splitter, the classifier or the distillers, glued at random.
HOSTILE_PIECES = [
    "\x00",
    "\x00\x00\x00\n",
    "\r\n",
    "\r",
    "\n\n",
    "\u2028",
    "\u2029",
    "\ufeff",
    "\u200b",
    "\u202e",
    "e\u0301\u0301\u0301",
    "\U0001f4a5",
    "\x0b\x0c",
    "```",
    "```py\n",
    "   ```",
    "./src/a.py",
    "/",
    "C:\\x",
    "file://",
    "2024-01-02T03:04:05Z ERROR ",
    "12:00:00|",
    "Jul 20 18:00:01 ",
    "Traceback (most recent call last):\n",
    '  File "x.py", line 1\n',
    "\tat a.b(C.java:1)\n",
    "Caused by: ",
    "panic: ",
    "Error:",
    "| a | b |\n",
    "a,b,c\n",
    "a\tb\tc\n",
    "NAME   READY\n",
    "def f():\n",
    "x = 1;\n",
    "[INFO] ",
    "sshd[42]: error: ",
    "1234567890 x\n",
    '"',
    "'",
    "<*>",
    "Why?",
    "please ",
    "<|endoftext|>",
    " ",
    "\t",
    "a" * 300,
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.one_of(st.sampled_from(HOSTILE_PIECES), st.text(max_size=30)), max_size=120),
    st.one_of(st.none(), st.text(max_size=20), st.sampled_from(["\x00", "Why?", ""])),
    st.sampled_from([0, 1, 64, 4096]),
)
def test_ingest_of_hostile_text_keeps_its_promises(pieces: list[str], intent: str | None, budget: int) -> None:
    text = "".join(pieces)
    bundle = ingest_paste(text, IngestConfig(budget_tokens=budget), intent=intent)
    check_bundle(text, bundle, intent=intent)
    served = sum(frame.token_cost for frame in bundle.provider.frames)
    assert bundle.tier == "deferred" or served <= budget, "served frames overran the budget"
    for frame in bundle.provider.frames:
        # Every frame, even a reference, can be served in full, losslessly.
        full = bundle.provider.serve(frame.id, "full")
        assert full.content == text[frame.span[0] : frame.span[1]]


def test_a_megabyte_single_line_is_bounded() -> None:
    # Under shallow_chars, so the full tier renders it: head_tail must cut between characters.
    for line in ("a" * 1_000_000, "/" * 1_000_000, ("x\x00" * 500_000)):
        bundle, elapsed = timed_ingest(f"single 1 MB line of {line[:2]!r}", line)
        assert elapsed < ingest_bound(line)
        check_bundle(line, bundle)


def test_an_aligned_table_with_one_long_line_is_bounded() -> None:
    rows = ["NAME   READY   STATUS"] + [f"pod-{n}   1/1   Running" for n in range(20)]
    rows[5] += "   " + "x" * 400_000
    text = "\n".join(rows) + "\n\n" + ASK
    bundle, elapsed = timed_ingest("aligned table with a 400k-char line", text)
    assert bundle.report[0].kind == "table"
    check_bundle(text, bundle)
    assert elapsed < ingest_bound(text), f"{elapsed:.1f} s for {len(text):,} chars"


def test_many_tiny_blocks_are_bounded() -> None:
    # 20,000 blank-separated one-character blocks: max_blocks caps the segments, the last holds the rest.
    text = "x\n\n" * 10_000 + "y\n\n" * 10_000 + ASK
    bundle, elapsed = timed_ingest("20,000 tiny blocks", text)
    assert elapsed < max(ingest_bound(text), 10.0)
    check_bundle(text, bundle)
    assert len(bundle.report) == IngestConfig().max_blocks
    assert "max_blocks" in bundle.report[-1].reason


@pytest.mark.slow
def test_a_50_mb_paste_is_deferred_and_bounded() -> None:
    line = "2026-11-29T08:00:01Z INFO worker 17 finished job 4242 on node-7 in 35ms\n"
    text = line * (50_000_000 // len(line)) + "\n" + ASK
    bundle, elapsed = timed_ingest("50 MB log paste", text)
    assert elapsed < HUGE_PASTE_BOUND_S
    assert bundle.tier == "deferred"
    check_bundle(text, bundle)
    assert bundle.query.goal == ASK
    assert all(frame.representation == "reference" for frame in bundle.provider.frames)


@pytest.mark.slow
def test_a_million_tiny_lines_are_bounded() -> None:
    shapes = ("a", "1", "|", "-", "x=1", "at", "{", "é", "\x00", "ok")
    text = "\n".join(shapes[n % len(shapes)] for n in range(1_000_000)) + "\n\n" + ASK
    bundle, elapsed = timed_ingest("a million tiny lines", text)
    assert elapsed < HUGE_PASTE_BOUND_S
    check_bundle(text, bundle)
    assert bundle.query.goal == ASK


@pytest.mark.slow
def test_a_single_10_mb_line_is_bounded() -> None:
    text = "a" * 10_000_000
    bundle, elapsed = timed_ingest("a single 10 MB line", text)
    assert elapsed < HUGE_PASTE_BOUND_S
    assert bundle.tier == "deferred"
    check_bundle(text, bundle)


# --- 2. the cores: absorption and border ------------------------------------------------


def digested_with(goal: str, frames: tuple[Frame, ...], *, anchors: tuple[str, ...] = ()) -> Envelope:
    """A digested envelope carrying exactly ``frames``, built the way the stomach secretes one."""
    return digested_envelope(goal, frames=frames, anchors=anchors)


def many_frames(count: int) -> tuple[Frame, ...]:
    frames, start = [], 0
    for n in range(count):
        frames.append(note_frame(f"evidence {n}", start=start))
        start += len(f"evidence {n}") + 2
    return tuple(frames)


def dishonest(frame: Frame, **changes: Any) -> Frame:
    return msgspec.structs.replace(frame, **changes)


HOSTILE_DIGESTS: dict[str, Callable[[], Envelope]] = {
    "huge goal (2 MB)": lambda: digested_with("why? " * 400_000, (note_frame("a"),)),
    "base64 and trigger words (900 KB)": lambda: digested_with("Ab+/" * 200_000 + " execute" * 5_000, ()),
    "10,000 frames": lambda: digested_with(ASK, many_frames(10_000)),
    "NUL goal": lambda: digested_with("why\x00?", (note_frame("ok"),)),
    "NUL frame": lambda: digested_with(ASK, (note_frame("a\x00b"), note_frame("\x00"))),
    "empty goal, no frames, no anchors": lambda: digested_with("", ()),
    "odd unicode": lambda: digested_with("\u202ewhy\u2028?\ufeff", (note_frame("e\u0301\U0001f4a5\u2029"),)),
    "10,000 anchors": lambda: digested_with(ASK, (), anchors=tuple(f"./src/{n}.py" for n in range(10_000))),
    "dishonest cost": lambda: digested_with(ASK, (dishonest(note_frame("abc"), token_cost=0),)),
    "dishonest digest": lambda: digested_with(
        ASK, (dishonest(note_frame("abc"), content_digest=digest_text("something else")),)
    ),
    "foreign encoding": lambda: digested_with(ASK, (dishonest(note_frame("abc"), encoding="o200k_base"),)),
    "frame tier differs": lambda: digested_with(ASK, (note_frame("abc", tier="shallow"),)),
}
# What the border must conclude: these may never be admitted.
MUST_REJECT = {
    "huge goal (2 MB)",
    "base64 and trigger words (900 KB)",
    "NUL goal",
    "NUL frame",
    "dishonest cost",
    "dishonest digest",
    "foreign encoding",
    "frame tier differs",
}


@pytest.mark.parametrize("case", list(HOSTILE_DIGESTS))
def test_absorption_and_border_cores_answer_hostile_digests(case: str) -> None:
    digested = HOSTILE_DIGESTS[case]()
    yielded, elapsed = timed(f"yield_context on {case}", lambda: yield_context(digested, "absorption-fault", now=AT))
    assert elapsed < CORE_BOUND_S
    assert isinstance(yielded.payload, Yield) and yielded.tier == digested.tier
    assert decode(encode(yielded)) == yielded, "absorption emitted an envelope the next hop cannot decode"

    config = BorderConfig()
    verdict, elapsed = timed(f"screen on {case}", lambda: screen(yielded, config.policy, GuardState(), now=0.0))
    assert elapsed < CORE_BOUND_S
    assert isinstance(verdict, Admission | Rejection)
    if isinstance(verdict, Admission):
        # The compiler's contract is to refuse with a CompileError (border_decide turns it into a
        # rejection); any other exception, or a slow answer, is a fault.
        def compiled() -> CompiledPrompt | CompileError:
            try:
                modules = (
                    *builtin_modules(config.builtins),
                    *paste_modules(verdict.payload, digested.chain.origin, verdict.trust_of),
                )
                return compile(modules, config.budget)
            except CompileError as error:
                return error

        outcome, elapsed = timed(f"compile on {case}", compiled)
        print(f"          compile -> {type(outcome).__name__}")
        assert elapsed < CORE_BOUND_S

    decided, elapsed = timed(
        f"border_decide on {case}",
        lambda: border_decide(yielded, config, GuardState(), instance="border-fault", now=0.0, at=AT),
    )
    assert elapsed < CORE_BOUND_S
    assert isinstance(decided.payload, Admitted | Rejected)
    assert decode(encode(decided)) == decided
    if case in MUST_REJECT:
        assert isinstance(decided.payload, Rejected), f"{case} was admitted"
        assert decided.payload.reasons and all(reason.code for reason in decided.payload.reasons)
    else:
        assert isinstance(decided.payload, Admitted), decided.payload
        assert decided.payload.goal == digested.payload.goal  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "make", [paste, deferred_notice_envelope, lambda: yield_context(digested_envelope(), "a", now=AT)], ids=str
)
def test_absorption_refuses_what_is_not_a_digest_with_poison_only(make: Callable[[], Envelope]) -> None:
    with pytest.raises(PoisonError):
        yield_context(make(), "absorption-fault", now=AT)


@pytest.mark.parametrize("envelope", [*VALID, deferred_notice_envelope()], ids=lambda envelope: envelope.kind)
def test_the_border_rejects_every_kind_but_a_yield_without_raising(envelope: Envelope) -> None:
    decided = border_decide(envelope, BorderConfig(), GuardState(), instance="border-fault", now=0.0, at=AT)
    if envelope.kind == "yield":
        # The valid yield is honest: the border admits it (a rejection here would be the bug).
        assert isinstance(decided.payload, Admitted), decided.payload
    else:
        assert isinstance(decided.payload, Rejected)
        assert "schema.kind" in {reason.code for reason in decided.payload.reasons}


# --- 3. the workers on a real bus --------------------------------------------------------

# Each organ's main consumer: the one its input subject feeds.
ORGAN_DURABLES = {organ.name: organ.consumers[0].durable for organ in ORGANS}


@dataclasses.dataclass
class Bad:
    """One bad message: where it goes, its exact bytes, and where it must end up."""

    name: str
    organ: str  # the organ whose input subject receives it
    data: bytes
    outcome: str = "dlq"  # "dlq", or "rejected" for a decodable envelope the border must refuse


def bad_batch() -> list[Bad]:
    """Bad messages for every input subject; every one has distinct bytes."""
    paste_map = raw_map(paste())
    digested = digested_envelope(goal="Why is the bus test bad?")
    yielded = yield_context(digested_envelope(goal="Why is this yield bad?"), "absorption-fault", now=AT)
    digested_map = raw_map(digested)
    batch: list[Bad] = [Bad("stomach: msgpack nil", "stomach", b"\xc0")]
    for number, organ in enumerate(ORGAN_DURABLES):
        # ``number`` and ``organ`` go into each message so that no two share their bytes.
        batch += [
            Bad(f"{organ}: empty", organ, b"" if number == 0 else b" " * number),
            Bad(f"{organ}: garbage", organ, f"\x92\xa3not an envelope for {organ}".encode()),
            Bad(f"{organ}: json", organ, f'{{"v": 1, "organ": "{organ}"}}'.encode()),
            Bad(f"{organ}: truncated", organ, encode(paste(f"cut short for {organ}"))[:-7]),
            Bad(
                f"{organ}: invalid utf-8",
                organ,
                splice(paste_map, ("source",), msgpack_str(organ.encode() + b"\xed\xa0\x80")),
            ),
            Bad(
                f"{organ}: 10,000 nested arrays",
                organ,
                splice(paste_map, ("payload", "text"), nested_arrays(10_000 + number)),
            ),
            Bad(
                f"{organ}: schema from the future",
                organ,
                msgspec.msgpack.encode(replaced(paste_map, ("v",), 99 + number)),
            ),
            Bad(
                f"{organ}: payload tag unknown",
                organ,
                msgspec.msgpack.encode(replaced(paste_map, ("payload", "kind"), f"x-{organ}")),
            ),
        ]
    wrong_digest = paste("these bytes are not the digested ones", input_digest=digest_text("other bytes"))
    missing_ref = paste("", text_ref=digest_text("never stored"), input_digest=digest_text("never stored"))
    batch += [
        Bad("stomach: digest does not match text", "stomach", encode(wrong_digest)),
        Bad("stomach: text_ref not in the store", "stomach", encode(missing_ref)),
        Bad("stomach: a digested envelope", "stomach", encode(digested_envelope(goal="Why send me a digest?"))),
        Bad("stomach: a deferred notice on the main subject", "stomach", encode(deferred_notice_envelope())),
        Bad("stomach: a yield", "stomach", encode(yielded)),
        Bad("absorption: a paste", "absorption", encode(paste("a paste for absorption"))),
        Bad(
            "absorption: a yield",
            "absorption",
            encode(yield_context(digested_envelope(goal="Why twice?"), "a", now=AT)),
        ),
        Bad(
            "absorption: a digest without a tier",
            "absorption",
            msgspec.msgpack.encode(replaced(digested_map, ("tier",), None)),
        ),
        Bad(
            "absorption: a digest with an unknown tier",
            "absorption",
            msgspec.msgpack.encode(replaced(digested_map, ("tier",), "raw")),
        ),
        # Decodable envelopes are the border's to judge: it answers them with a rejection, not a dead letter.
        Bad("border: a paste", "border", encode(paste("a paste for the border")), "rejected"),
        Bad("border: a digest", "border", encode(digested_envelope(goal="Why skip absorption?")), "rejected"),
        Bad(
            "border: a dishonest yield",
            "border",
            encode(
                yield_context(
                    digested_with(ASK, (dishonest(note_frame("abc"), token_cost=99),)), "absorption-fault", now=AT
                )
            ),
            "rejected",
        ),
    ]
    assert len({bad.data for bad in batch}) == len(batch), "bad messages must be told apart by their bytes"
    return batch


def good_paste(n: int) -> Envelope:
    evidence = f"2026-11-29T08:00:0{n % 10}Z ERROR [api] request {n} failed: upstream timeout"
    return paste(f"{evidence}\n\n./services/api/handler_{n}.py\n\nWhy did request {n} fail?")


def input_subject(tract: Tract, organ: str) -> str:
    return organ_named(organ).consumers[0].address(tract.subjects)


async def publish_raw(tract: Tract, subject: str, data: bytes, case: str) -> None:
    # A fresh id per message: the stream dedupes Nats-Msg-Id across every subject it holds.
    await tract.js.publish(subject, data, headers={"Nats-Msg-Id": uuid.uuid4().hex, "X-Fault-Case": case})


async def publish_good(tract: Tract, envelope: Envelope) -> None:
    await tract.js.publish(tract.subjects.stomach_in, encode(envelope), headers={"Nats-Msg-Id": envelope.id})


@pytest.mark.bus
async def test_bad_envelopes_are_dead_lettered_and_good_pastes_pass(tract: Tract, bus_settings: BusSettings) -> None:
    batch = bad_batch()
    goods = [good_paste(n) for n in range(4)]
    async with (
        running_organ("stomach", bus_settings, build_stomach(bus_settings)) as stomach,
        running_organ("absorption", bus_settings, build_absorption(bus_settings)) as absorption,
        running_organ("border", bus_settings, build_border(bus_settings)) as border,
    ):
        # Interleave: a good paste after every few bad messages, so poison never blocks what follows it.
        for position, bad in enumerate(batch):
            if position % (len(batch) // len(goods) + 1) == 0:
                await publish_good(tract, goods[position // (len(batch) // len(goods) + 1)])
            await publish_raw(tract, input_subject(tract, bad.organ), bad.data, bad.name)
        expected_letters = sum(1 for bad in batch if bad.outcome == "dlq")
        expected_rejections = sum(1 for bad in batch if bad.outcome == "rejected")
        dlq = tract.subjects.dlq_stream
        assert await wait_for_count(tract, tract.subjects.brain_in, len(goods), timeout=60) == len(goods)
        for organ, durable in ORGAN_DURABLES.items():
            wanted = sum(1 for bad in batch if bad.organ == organ and bad.outcome == "dlq")
            assert await wait_for_count(tract, tract.subjects.dlq(organ), wanted, stream=dlq) == wanted
            info = await consumer_settled(tract, durable)
            assert info.num_pending == 0 and info.num_ack_pending == 0, f"{organ} left work behind"
        assert await wait_for_count(tract, tract.subjects.border_rejected, expected_rejections) == expected_rejections

        # Still consuming: one more good paste goes all the way through.
        await publish_good(tract, good_paste(99))
        assert await wait_for_count(tract, tract.subjects.brain_in, len(goods) + 1, timeout=60) == len(goods) + 1
        workers = [*stomach, *absorption, *border]
        assert all(worker.bound for worker in workers)
        assert sum(worker.stats.dead_lettered for worker in workers) == expected_letters

    letters: list[tuple[str, bytes, dict[str, str]]] = []
    for organ in ORGAN_DURABLES:
        for msg in await read_subject(tract, tract.subjects.dlq(organ), stream=tract.subjects.dlq_stream):
            letters.append((organ, msg.data, dict(msg.headers or {})))
    print(f"[bus] {len(batch)} bad messages: {len(letters)} dead letters, {expected_rejections} rejections")
    by_case = {headers.get("X-Fault-Case", "?"): (organ, data, headers) for organ, data, headers in letters}
    assert len(by_case) == len(letters) == expected_letters
    for bad in batch:
        if bad.outcome != "dlq":
            assert bad.name not in by_case, f"{bad.name} was dead-lettered; the border should judge it"
            continue
        assert bad.name in by_case, f"{bad.name} is missing from the DLQ"
        organ, data, headers = by_case[bad.name]
        assert organ == bad.organ
        assert data == bad.data, f"{bad.name}: the dead letter does not hold the original bytes"
        assert headers.get("Ichor-Dlq-Reason", "").strip(), f"{bad.name}: no reason"
        assert headers["Ichor-Dlq-Subject"] == input_subject(tract, bad.organ)
        print(f"[bus] {bad.name}: {headers['Ichor-Dlq-Reason'][:100]}")

    rejections = await read_envelopes(tract, tract.subjects.border_rejected)
    assert all(isinstance(envelope.payload, Rejected) and envelope.payload.reasons for envelope in rejections)
    admitted = [envelope.payload for envelope in await read_envelopes(tract, tract.subjects.brain_in)]
    asks = [f"Why did request {n} fail?" for n in (*range(len(goods)), 99)]
    assert sorted(payload.goal for payload in admitted if isinstance(payload, Admitted)) == sorted(asks)


@pytest.mark.bus
async def test_deep_nesting_in_an_unknown_field_is_dead_lettered_not_fatal(
    tract: Tract, bus_settings: BusSettings
) -> None:
    poison = splice(raw_map(digested_envelope()), ("x_extra",), nested_arrays(5_000))
    async with running_organ("absorption", bus_settings, build_absorption(bus_settings)):
        await publish_raw(tract, tract.subjects.absorption_in, poison, "deep unknown field")
        follower = digested_envelope(goal="Am I still served?")
        await tract.js.publish(tract.subjects.absorption_in, encode(follower), headers={"Nats-Msg-Id": follower.id})
        dlq = tract.subjects.dlq("absorption")
        assert await wait_for_count(tract, dlq, 1, timeout=8, stream=tract.subjects.dlq_stream) == 1
        assert await wait_for_count(tract, tract.subjects.border_in, 1, timeout=15) == 1
    [letter] = await read_subject(tract, dlq, stream=tract.subjects.dlq_stream)
    assert letter.data == poison and (letter.headers or {}).get("Ichor-Dlq-Reason")


@pytest.mark.bus
async def test_a_digest_too_large_for_a_message_is_dead_lettered_not_fatal(tmp_path: Path) -> None:
    async with small_tract(tmp_path / "small", max_payload=128 * 1024, instance="fault") as (small_settings, small):
        oversized = paste("x\n\n" * 10_000 + ASK)  # 30 KB in; even capped at max_blocks, ~0.5 MB of digest out
        assert len(encode(oversized)) < 64 * 1024
        async with running_organ("stomach", small_settings, build_stomach(small_settings)):
            await publish_good(small, oversized)
            await publish_good(small, good_paste(1))
            dlq = small.subjects.dlq("stomach")
            assert await wait_for_count(small, dlq, 1, timeout=15, stream=small.subjects.dlq_stream) == 1
            assert await wait_for_count(small, small.subjects.absorption_in, 1, timeout=20) == 1
        [letter] = await read_subject(small, dlq, stream=small.subjects.dlq_stream)
        assert letter.data == encode(oversized)
        assert await subject_count(small, small.subjects.stomach_in) == 2

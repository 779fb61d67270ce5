"""The stomach's core on hostile input: every classifier rung, then ``ingest_paste``, keep their promises.

Pathological lines built against each rung's patterns, random glue of pieces
hostile to the splitter and distillers, megabyte lines, tiny blocks by the
ten thousand, 50 MB pastes. Each digest is honest (``tests.support.honesty``)
and states its tier. How long each takes, against an ordinary log of the same
size, is ``bench/hostile_bench.py``'s to measure; one that never finishes fails
here on the suite's per-test timeout.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, get_args

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envelopes.types import SegmentKind
from organs.stomach.core.classify import ladder
from organs.stomach.core.classify.rungs import Classification
from organs.stomach.core.ingest import IngestBundle, IngestConfig, ingest_paste
from organs.stomach.core.tuning import ClassifyTuning
from tests.support.honesty import assert_bundle_honest
from tests.support.hostile import PathologicalLine, pathological_lines, repeat_to

ASK = "Why is this slow?"

RUNGS: list[tuple[str, Callable[[list[str]], Classification | None]]] = [
    (rung.__name__, rung) for _, rung in ladder.LADDER
]
SEGMENT_KINDS = get_args(SegmentKind)


def _rung_params() -> list[Any]:
    return [pytest.param(shape, id=shape.name) for shape in pathological_lines()]


@pytest.mark.parametrize("shape", _rung_params())
def test_every_classifier_rung_answers_pathological_lines(shape: PathologicalLine) -> None:
    block = "\n".join([shape.line] * shape.lines)
    tuning = ClassifyTuning()
    sample = ladder.sample_lines(block, tuning)
    for name, rung in RUNGS:
        found = rung(sample, tuning)
        assert found is None or found.kind in SEGMENT_KINDS, f"rung {name} on {shape.name}: {found}"
    token = shape.line * 250  # a single 100k-character token or line: the path rung's input
    found = ladder._path_rung(token, tuning)
    assert found is None or found.kind == "path_ref", found
    assert ladder.classify(block, fenced=False).kind in SEGMENT_KINDS


# --- ingest_paste ---------------------------------------------------------------------


def check_bundle(text: str, bundle: IngestBundle, *, intent: str | None = None) -> None:
    """What every digest must honour, whatever the input: the honesty every stomach test checks, a stated tier."""
    assert_bundle_honest(text, bundle)
    assert bundle.tier in ("full", "shallow", "deferred") and bundle.tier_reason
    if intent is not None:
        assert bundle.query.goal == intent


@pytest.mark.slow
@pytest.mark.parametrize(
    "shape", [pytest.param(shape, id=shape.name) for shape in pathological_lines() if shape.lines == 400]
)
def test_ingest_of_a_megabyte_of_each_pathological_line_keeps_its_promises(shape: PathologicalLine) -> None:
    text = repeat_to(shape.line, 1_000_000) + "\n\n" + ASK
    # The intent is given: a run of backtick lines may leave a fence open that swallows the ask, as it should.
    bundle = ingest_paste(text, intent=ASK)
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


def test_a_megabyte_single_line_keeps_its_promises() -> None:
    # Under shallow_chars, so the full tier renders it: head_tail must cut between characters.
    for line in ("a" * 1_000_000, "/" * 1_000_000, ("x\x00" * 500_000)):
        bundle = ingest_paste(line)
        check_bundle(line, bundle)


def test_an_aligned_table_with_one_long_line_keeps_its_promises() -> None:
    rows = ["NAME   READY   STATUS"] + [f"pod-{n}   1/1   Running" for n in range(20)]
    rows[5] += "   " + "x" * 400_000
    text = "\n".join(rows) + "\n\n" + ASK
    bundle = ingest_paste(text)
    assert bundle.report[0].kind == "table"
    check_bundle(text, bundle)


def test_many_tiny_blocks_keep_their_promises() -> None:
    # 20,000 blank-separated one-character blocks: max_blocks caps the segments, one holds the rest, and the
    # ask at the end is set apart from it.
    text = "x\n\n" * 10_000 + "y\n\n" * 10_000 + ASK
    bundle = ingest_paste(text)
    check_bundle(text, bundle)
    assert len(bundle.report) == IngestConfig().max_blocks + 1
    assert "max_blocks" in bundle.report[-2].reason
    assert bundle.query.goal == ASK


@pytest.mark.slow
def test_a_50_mb_paste_is_deferred_and_keeps_its_promises() -> None:
    line = "2026-11-29T08:00:01Z INFO worker 17 finished job 4242 on node-7 in 35ms\n"
    text = line * (50_000_000 // len(line)) + "\n" + ASK
    bundle = ingest_paste(text)
    assert bundle.tier == "deferred"
    check_bundle(text, bundle)
    assert bundle.query.goal == ASK
    assert all(frame.representation == "reference" for frame in bundle.provider.frames)


@pytest.mark.slow
def test_a_million_tiny_lines_keep_their_promises() -> None:
    shapes = ("a", "1", "|", "-", "x=1", "at", "{", "é", "\x00", "ok")
    text = "\n".join(shapes[n % len(shapes)] for n in range(1_000_000)) + "\n\n" + ASK
    bundle = ingest_paste(text)
    check_bundle(text, bundle)
    assert bundle.query.goal == ASK


@pytest.mark.slow
def test_a_single_10_mb_line_keeps_its_promises() -> None:
    text = "a" * 10_000_000
    bundle = ingest_paste(text)
    assert bundle.tier == "deferred"
    check_bundle(text, bundle)

"""Hostile input: how time grows with size, and its cost against ordinary input (``python -m bench.hostile_bench``).

The tests of bad input (``tests/test_envelopes_hostile.py``, ``tests/stomach/test_stomach_hostile.py``,
``tests/border/test_border_hostile.py``) check what each core answers; this bench measures how long it takes,
with the same generators (``tests.support.hostile``). Each row is a ratio, measured side by side:

* growth — every hostile family at 4× the size takes ≤ 8× the time (linear is 4, quadratic 16):
  the decoder skipping deep nesting in an unknown field, ``ingest_paste`` on a run of each pathological
  line, the border's screening patterns on near misses, ``border_decide`` on thousands of frames or
  anchors, the compiler truncating one large segment.
* against ordinary input — the classifier on a block of each pathological line against a block of
  prose that fills its sample the same way (both walk the whole ladder), and ingest of each pathological
  megabyte against a megabyte of an ordinary log.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import Row, best_time, emit_rows, log  # noqa: E402
from envelopes.codec import DecodeError, decode  # noqa: E402
from envelopes.types import Envelope  # noqa: E402
from organs.absorption.core import yield_context  # noqa: E402
from organs.border import BorderConfig, GuardState, PromptBudget, border_decide, compile  # noqa: E402
from organs.border.guard import BASE64_ALPHABET, RunPattern, WordPattern  # noqa: E402
from organs.border.segments import PromptModule, PromptSegment  # noqa: E402
from organs.stomach.core.classify import ladder  # noqa: E402
from organs.stomach.core.ingest import ingest_paste  # noqa: E402
from tests.support.envelopes import AT, HOST, digested_envelope, fresh_paste, note_frame  # noqa: E402
from tests.support.hostile import (  # noqa: E402
    nested_arrays,
    nested_maps,
    pathological_lines,
    raw_map,
    repeat_to,
    splice,
)

GROWTH_GOAL = 8.0
CLASSIFY_GOAL = 10.0
INGEST_GOAL = 10.0
ASK = "Why is this slow?"


def _growth(family: str, make: Callable[[int], Callable[[], object]], size: int, repeats: int) -> tuple[float, str]:
    """Time at ``4 * size`` over time at ``size``, each the best of ``repeats``, and a note of both."""
    small = best_time(make(size), repeats)
    large = best_time(make(4 * size), repeats)
    growth = large / max(small, 1e-6)
    log(f"{family}: {small * 1000:.1f} ms at {size:,}, {large * 1000:.1f} ms at {4 * size:,}: {growth:.1f}×")
    return growth, f"{family}: {small * 1000:.1f} → {large * 1000:.1f} ms"


def _decode_skipping(nesting: Callable[[int], bytes]) -> Callable[[int], Callable[[], object]]:
    base = raw_map(fresh_paste())

    def make(depth: int) -> Callable[[], object]:
        data = splice(base, ("x_extra",), nesting(depth))

        def run() -> object:
            # A skip takes microseconds: a hundred of them make a figure the clock can read.
            for _ in range(100):
                with contextlib.suppress(*DecodeError):
                    decode(data)
            return None

        return run

    return make


def _ingest_of(line: str) -> Callable[[int], Callable[[], object]]:
    return lambda size: lambda: ingest_paste(repeat_to(line, size) + "\n\n" + ASK, intent=ASK)


def _patterns_on_near_misses(repeats: int) -> Callable[[], object]:
    near_miss = ("A" * 199 + "!") * (repeats // 4) + "execut " * repeats
    patterns = (RunPattern("blob", BASE64_ALPHABET, 200), WordPattern("w", ("execute", "executes")))
    return lambda: [pattern.regex.search(near_miss) for pattern in patterns]


def _decide_on(make_digest: Callable[[int], Envelope]) -> Callable[[int], Callable[[], object]]:
    def make(count: int) -> Callable[[], object]:
        yielded = yield_context(make_digest(count), "absorption-bench", now=AT)
        config = BorderConfig()
        return lambda: border_decide(yielded, config, GuardState(), instance="border-bench", now=0.0, at=AT)

    return make


def _many_frames(count: int) -> Envelope:
    frames, start = [], 0
    for n in range(count):
        frames.append(note_frame(f"evidence {n}", start=start))
        start += len(f"evidence {n}") + 2
    return digested_envelope(ASK, frames=tuple(frames))


def _many_anchors(count: int) -> Envelope:
    return digested_envelope(ASK, frames=(), anchors=tuple(f"./src/{n}.py" for n in range(count)))


def _truncating(lines: int) -> Callable[[], object]:
    content = "log line with some numbers 12345 and words\n" * lines
    segment = PromptSegment("a", content, HOST, "untrusted", budget_behavior="truncate")
    module = PromptModule("m", "kernel", 0, (segment,))
    return lambda: compile([module], PromptBudget(max_tokens=2_000))


def _prose_block() -> str:
    """400 lines of 400 characters of words: the most the classifier's sample examines."""
    sentence = "the cache warms up slowly after a deploy while the queue drains and the workers catch up "
    line = (sentence * 5)[:400]
    return "\n".join([line] * 400)


def _ordinary_log(size: int) -> str:
    lines = (
        "2026-11-29T08:00:{s:02d}Z INFO worker {w} finished job {j} on node-{n} in {ms}ms",
        "2026-11-29T08:00:{s:02d}Z WARN cache miss for key user:{j} on node-{n}",
        "2026-11-29T08:00:{s:02d}Z ERROR request {j} failed: upstream timeout after {ms}ms",
    )
    rows, total, k = [], 0, 0
    while total < size:
        row = lines[k % 3].format(s=k % 60, w=k % 17, j=4242 + k, n=k % 9, ms=k % 900)
        rows.append(row)
        total += len(row) + 1
        k += 1
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a quarter of the sizes, for checking the bench")
    args = parser.parse_args(argv)
    scale = 4 if args.quick else 1
    repeats = 3

    growths: list[tuple[float, str]] = [
        _growth("decode, arrays nested in an unknown field", _decode_skipping(nested_arrays), 2_500, repeats),
        _growth("decode, maps nested in an unknown field", _decode_skipping(nested_maps), 2_500, repeats),
        _growth("screening patterns on near misses", _patterns_on_near_misses, 20_000 // scale, repeats),
        _growth("border_decide on many frames", _decide_on(_many_frames), 2_500 // scale, repeats),
        _growth("border_decide on many anchors", _decide_on(_many_anchors), 2_500 // scale, repeats),
        _growth("compile truncating one segment", _truncating, 6_000 // scale, repeats),
    ]
    ingest_size = 250_000 // (2 if args.quick else 1)
    shapes = [shape for shape in pathological_lines() if shape.lines == 400]
    for shape in shapes:
        growths.append(_growth(f"ingest of {shape.name!r} lines", _ingest_of(shape.line), ingest_size, 2))
    worst_growth, worst_note = max(growths)

    # Prose walks the whole ladder, as a pathological block does, and fills the sample the same way.
    prose = _prose_block()
    prose_classify = best_time(lambda: ladder.classify(prose, fenced=False), repeats)
    classify_ratios = []
    for shape in pathological_lines():
        block = "\n".join([shape.line] * shape.lines)
        seconds = best_time(lambda block=block: ladder.classify(block, fenced=False), repeats)  # type: ignore[misc]
        classify_ratios.append((seconds / prose_classify, shape.name))
    worst_classify, classify_shape = max(classify_ratios)
    log(f"classify: prose block {prose_classify * 1000:.2f} ms; worst {classify_shape} {worst_classify:.1f}×")

    megabyte = 1_000_000 // scale
    ordinary = _ordinary_log(megabyte) + "\n\n" + ASK
    ordinary_ingest = best_time(lambda: ingest_paste(ordinary, intent=ASK), 1)
    ingest_ratios = []
    for shape in shapes:
        text = repeat_to(shape.line, megabyte) + "\n\n" + ASK
        seconds = best_time(lambda text=text: ingest_paste(text, intent=ASK), 1)  # type: ignore[misc]
        ingest_ratios.append((seconds / ordinary_ingest, shape.name))
    worst_ingest, ingest_shape = max(ingest_ratios)
    log(f"ingest: ordinary {megabyte:,} chars {ordinary_ingest:.2f} s; worst {ingest_shape} {worst_ingest:.1f}×")

    emit_rows(
        [
            Row("hostile", "hostile input at 4× the size: time growth (worst family)", round(worst_growth, 2),
                goal=f"<= {GROWTH_GOAL:g}", met=worst_growth <= GROWTH_GOAL,
                note=f"{len(growths)} families; worst {worst_note}; linear is 4, quadratic 16"),
            Row("hostile", "classify a pathological block / a prose block", round(worst_classify, 2),
                goal=f"<= {CLASSIFY_GOAL:g}", met=worst_classify <= CLASSIFY_GOAL,
                note=f"worst {classify_shape}; prose {prose_classify * 1000:.2f} ms"),
            Row("hostile", "ingest a pathological paste / an ordinary log of the same size", round(worst_ingest, 2),
                goal=f"<= {INGEST_GOAL:g}", met=worst_ingest <= INGEST_GOAL,
                note=f"worst {ingest_shape}; {megabyte:,} chars, ordinary {ordinary_ingest:.2f} s"),
        ]
    )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

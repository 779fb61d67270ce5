"""The host-facing renderings: pills, the prompt map, savings."""

from __future__ import annotations

import io
from pathlib import Path

from envelopes.types import SegmentReport
from organs.pills import render_digest, savings_line
from organs.stomach import ingest_paste

EXAMPLE = (Path(__file__).resolve().parent.parent / "examples" / "paste.txt").read_text()


def _report(before: int, after: int) -> SegmentReport:
    return SegmentReport(
        index=0, kind="log", span=(0, 1), outcome="frame", reason="rung 4: x", tokens_before=before, tokens_after=after
    )


def test_savings_state_the_real_numbers() -> None:
    assert (
        savings_line([_report(300, 100), _report(50, 50)]) == "paste 350 tokens → 150 served (200 saved, 2.3× smaller)"
    )
    assert savings_line([_report(10, 0)]) == "paste 10 tokens → 0 served (10 saved, all by reference)"
    assert savings_line([]) == "nothing to save: the paste was empty"


def test_digest_rendering_shows_one_pill_per_segment_and_the_savings() -> None:
    bundle = ingest_paste(EXAMPLE)
    out = io.StringIO()
    render_digest(bundle, file=out)
    text = out.getvalue()
    first_line = text.splitlines()[0]
    for entry in bundle.report:
        assert f"{entry.kind} → {entry.outcome} · {entry.tokens_before}→{entry.tokens_after}" in first_line
    assert savings_line(bundle.report) in text
    assert "\x1b[" not in text, "no colour codes off a terminal"

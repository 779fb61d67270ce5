"""The real-paste bench's baselines: chunks of whole lines, budgets kept, paste order, rank fusion."""

from __future__ import annotations

from bench.baselines import chunk_lines, head_tail_served, reciprocal_rank_fusion, select_in_order


def words(text: str) -> int:
    """A stand-in count for the tests: one token per word, one per line end."""
    return len(text.split()) + text.count("\n")


def test_chunks_hold_whole_lines_and_close_near_the_target() -> None:
    text = "\n".join(f"line {number} a b c" for number in range(10))
    chunks = chunk_lines(text, words, target=20)
    assert "\n".join(chunk.text for chunk in chunks) == text
    assert all(chunk.tokens <= 20 for chunk in chunks)
    assert len(chunks) == 4


def test_head_and_tail_keep_both_ends_within_the_budget() -> None:
    text = "\n".join(f"row {number}" for number in range(100))
    served = head_tail_served(text, 30, words)
    lines = served.split("\n")
    assert lines[0] == "row 0" and lines[-1] == "row 99"
    assert words(served) <= 30
    assert "row 50" not in lines


def test_selection_takes_the_best_chunks_that_fit_in_paste_order() -> None:
    chunks = chunk_lines("alpha one\nbeta two three four five\ngamma six", words, target=1)
    served = select_in_order(chunks, [2, 1, 0], budget=6)
    # The second-ranked chunk is too large for what is left; the third still fits, and paste order is kept.
    assert served == "alpha one\ngamma six"


def test_fusion_favours_what_both_rankings_place_high() -> None:
    assert reciprocal_rank_fusion([[0, 1, 2], [1, 2, 0]])[0] == 1

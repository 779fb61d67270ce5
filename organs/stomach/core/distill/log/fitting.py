"""Fitting a log's rendering to a token target: estimate each piece, choose by priority, measure, rescale.

Counting each piece alone would cost a tokenizer call per template; instead one
exact count per kind of piece gives a rate, the choice is measured exactly, and
the allowance is rescaled by what was measured, a few rounds over.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from organs.accounting import count_tokens
from organs.fitting import fit_tokens
from organs.stomach.core.distill.log.mining import Template
from organs.stomach.core.distill.log.pieces import (
    SLOT_ALERTS,
    SLOT_ASKED,
    SLOT_CRASH,
    SLOT_EXAMPLE,
    SLOT_TAIL,
    SLOT_TEMPLATE,
    Piece,
    render,
)
from organs.stomach.core.tuning import LogConfig

__all__ = ["estimate_tokens", "fit"]


def estimate_tokens(
    pieces: list[Piece], encoding: str, spell: Callable[[Piece], str], sample_chars: int
) -> dict[int, float]:
    """Per-piece token estimates from one exact count per kind of piece, spread by length; the rates per slot.

    Counting each piece alone would cost a tokenizer call per template; the fit
    below measures its result exactly and corrects, so an estimate is enough here.
    Masked lines and real lines tokenize differently, so each slot gets its own rate,
    sampled from its highest-priority pieces (the ones most likely to be shown), about as many
    characters as the target could show.
    """
    rates: dict[int, float] = {}
    for slot in (SLOT_TEMPLATE, SLOT_EXAMPLE, SLOT_ASKED, SLOT_ALERTS, SLOT_TAIL, SLOT_CRASH):
        members = sorted((piece for piece in pieces if piece.slot == slot), key=lambda piece: piece.priority)
        if not members:
            continue
        sample: list[str] = []
        size = 0
        for piece in members:
            if size >= sample_chars:
                break
            sample.append(spell(piece))
            size += len(sample[-1]) + 1
        joined = "\n".join(sample)
        tokens_per_char = count_tokens(joined, encoding) / max(len(joined), 1)
        rates[slot] = tokens_per_char
        for piece in members:
            piece.tokens = int((piece.size + 1) * tokens_per_char) + 1
    return rates


@dataclass(frozen=True, slots=True)
class _Choice:
    rendering: str
    tokens: int
    # The estimated tokens of the pieces chosen, which may stop short of the allowance they were chosen within.
    spent: int


def fit(
    header: str,
    pieces: list[Piece],
    templates: list[Template],
    target: int,
    encoding: str,
    spell: Callable[[Piece], str],
    rates: dict[int, float],
    frame_tokens: int,
    config: LogConfig,
) -> tuple[str, int]:
    """The richest rendering that measures within ``target``: pieces chosen by priority within an allowance of
    estimated tokens, measured, and the allowance rescaled by what was measured (``organs.fitting``).
    ``frame_tokens`` is the count of the rendering with no piece (header, legend, omission notes)."""
    by_priority = sorted(pieces, key=lambda piece: piece.priority)
    # The frame around the pieces costs about this much whatever is chosen.
    frame = frame_tokens + config.fit_frame_slack
    smallest = min((piece.tokens for piece in pieces), default=0)
    # When not every template line fits, templates sharing a leading tag are grouped under it (see
    # ``_grouped_body``), so each line spends its tokens on what tells it apart.
    group = sum(piece.tokens for piece in pieces if piece.slot == SLOT_TEMPLATE) > target - frame

    def chosen_within(allowance: int) -> _Choice:
        chosen: list[Piece] = []
        spent = 0
        shown: set[int] = set()
        exemplified: set[int] = set()
        for piece in by_priority:
            if allowance - spent < smallest:
                break
            # An example is only worth its tokens next to its template's line, and alert lines (written against
            # the example) next to the example.
            missing = (piece.slot == SLOT_EXAMPLE and piece.template not in shown) or (
                piece.slot in (SLOT_ALERTS, SLOT_ASKED) and piece.template not in exemplified
            )
            if spent + piece.tokens > allowance or missing:
                continue
            if piece.text is None:
                spell(piece)
                piece.tokens = int((piece.size + 1) * rates.get(piece.slot, 0.5)) + 1
                if spent + piece.tokens > allowance:
                    continue
            chosen.append(piece)
            spent += piece.tokens
            if piece.slot == SLOT_TEMPLATE:
                shown.add(piece.template)
            elif piece.slot == SLOT_EXAMPLE:
                exemplified.add(piece.template)
        rendering = render(header, chosen, templates, config, group)
        return _Choice(rendering, count_tokens(rendering, encoding), spent)

    fitted = fit_tokens(
        chosen_within,
        lambda choice: choice.tokens,
        target,
        start=max(target - frame, 1),
        rounds=config.fit_rounds,
        slack=target // config.fit_close_share + config.fit_close_tokens,
        fixed=frame,
        # Estimates are off by a roughly constant factor: a little under the rescaled allowance keeps the next
        # rendering from overshooting by the estimates' own noise.
        used=lambda choice: int(choice.spent * config.fit_rescale_share) - config.fit_rescale_tokens,
    )
    if fitted is not None:
        return fitted.rendering.rendering, fitted.tokens
    # Nothing measured within the target: the header and the omission note alone.
    rendering = render(header, [], templates, config)
    return rendering, count_tokens(rendering, encoding)

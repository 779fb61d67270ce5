"""One budget-fitting loop: render at a target, count, rescale the target, render again.

Renderings are planned from estimates (characters per token, per-segment sums), so
what comes out can land over the limit, or well under it. ``fit_tokens`` renders at
a target, counts exactly, and while the count is over the limit renders again at a
target shrunk in proportion (always by at least one token, so it ends; when that cut left the count unchanged,
as renderings change in steps, by twice the cut and an eighth of the target at least); with
``slack`` given, a rendering more than ``slack`` tokens under the limit is tried
again at a proportionally larger target (and one that then overshoots, between the
two), and the largest rendering within the limit is kept. Used by the stomach's
renderings, the log distiller (its excerpts and its templates) and the prompt compiler.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["Fitted", "fit_tokens"]

_Rendering = TypeVar("_Rendering")
# A cut that left the count unchanged is followed by one of at least this part of the target (1/8).
_STALLED_SHARE = 8


@dataclass(frozen=True, slots=True)
class Fitted(Generic[_Rendering]):
    """A rendering within the limit, its exact count, the target it was rendered at and the renders it took."""

    rendering: _Rendering
    tokens: int
    target: int
    rounds: int


def _rescaled(used: int, tokens: int, limit: int, fixed: int) -> int:
    """What was used, scaled by ``limit / tokens`` beyond the ``fixed`` cost: counts run roughly proportional."""
    return used * (limit - fixed) // max(tokens - fixed, 1)


def fit_tokens(
    render: Callable[[int], _Rendering],
    count: Callable[[_Rendering], int],
    limit: int,
    *,
    start: int | None = None,
    rounds: int | None = 4,
    slack: int | None = None,
    fixed: int = 0,
    used: Callable[[_Rendering], int] | None = None,
) -> Fitted[_Rendering] | None:
    """The rendering within ``limit`` tokens that ``render`` gives, or None when none was found.

    ``start`` is the first target (``limit`` when omitted). ``rounds`` bounds the renders
    (None: until one fits or the target falls below 1). Without ``slack`` the first
    rendering within the limit is taken; with it, one more than ``slack`` under the limit
    is rendered again at a larger target while rounds remain, and the largest within the
    limit wins (a larger target that overshoots is followed by one between the two, while
    rounds remain and it lies above the best's target).

    ``fixed`` is what every rendering costs whatever its target (a header around the
    content): rescaling applies to the rest. ``used`` says how much of its target a
    rendering took (by default all of it): a rendering that stopped short of its target
    is rescaled from what it took.
    """
    target = limit if start is None else start
    best: Fitted[_Rendering] | None = None
    done = 0
    # The last rendering over the limit and the cut that followed it: renderings change in steps (a plan of frames,
    # a count of lines), so a cut that left the count where it was is doubled, not made again.
    over: int | None = None
    cut = 0
    while target >= 1 and (rounds is None or done < rounds):
        rendering = render(target)
        tokens = count(rendering)
        done += 1
        took = target if used is None else used(rendering)
        if tokens <= limit:
            if best is None or tokens > best.tokens:
                best = Fitted(rendering, tokens, target, done)
            if slack is None or limit - tokens <= slack:
                break
            grown = _rescaled(took, tokens, limit, fixed)
            if grown <= target:
                break
            target = grown
        elif best is not None:
            # Over, after one within: once more between the two, rescaled from this one, while that lies above
            # the best's target (it is below this target, so the search narrows).
            between = min(_rescaled(took, tokens, limit, fixed), target - 1)
            if between <= best.target:
                break
            target = between
        else:
            # Smaller by at least one token, so the loop ends; a target of 1 is always tried before giving up.
            smaller = min(_rescaled(took, tokens, limit, fixed), target - 1)
            if tokens == over:
                smaller = min(smaller, target - max(2 * cut, target // _STALLED_SHARE))
            smaller = max(smaller, min(target - 1, 1))
            over, cut = tokens, target - smaller
            target = smaller
    if best is not None and best.rounds != done:
        best = Fitted(best.rendering, best.tokens, best.target, done)
    return best

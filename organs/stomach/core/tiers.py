"""The degradation tier a paste is digested at, and the reason, stated for people and machines.

* ``full``: every rendering, templates mined.
* ``shallow``: the paste is large or the stomach is behind; same classification
  and equally honest frames, but head/tail renderings instead of mining.
* ``deferred``: the paste is huge, the stomach is far behind, or the budget is
  zero; evidence is served as references only (goal and anchors still extracted).
"""

from __future__ import annotations

from envelopes.types import DegradationTier

__all__ = ["choose_tier"]


def choose_tier(
    paste_chars: int,
    *,
    budget_tokens: int,
    backlog: int,
    shallow_chars: int,
    deferred_chars: int,
    shallow_backlog: int,
    deferred_backlog: int,
) -> tuple[DegradationTier, str]:
    if budget_tokens == 0:
        return "deferred", "budget 0"
    if paste_chars > deferred_chars:
        return "deferred", f"paste {paste_chars} chars > deferred_chars {deferred_chars}"
    if backlog > deferred_backlog:
        return "deferred", f"backlog {backlog} > {deferred_backlog}"
    if paste_chars > shallow_chars:
        return "shallow", f"paste {paste_chars} chars > shallow_chars {shallow_chars}"
    if backlog > shallow_backlog:
        return "shallow", f"backlog {backlog} > {shallow_backlog}"
    return "full", f"paste {paste_chars} chars <= shallow_chars {shallow_chars}, backlog {backlog} <= {shallow_backlog}"

"""Header columns: leading fields of a log's records that are header, not event.

A leading field is header when every field before it is, a message follows it
in nearly every record, no value of it is a level, and it either holds one value
(masked) in nearly every record (a host, a pid, an epoch) or its values are
interchangeable: among the rests of line that recur, a good share recur with
several of its values (one event logged by several hosts or processes). A field
that tells events apart (a verb) rarely shares its rest of line across values.
Template lines leave header fields out; what they held is stated once.
"""

from __future__ import annotations

from dataclasses import dataclass

from organs.stomach.core.shapes.signals import ALERT_LEVELS
from organs.stomach.core.tuning import LogConfig

__all__ = ["NO_HEADER", "Header", "cut_fields", "header_columns"]

# A field holding one of these is a level: it tells events apart and stays in the template lines.
_LEVEL_WORDS = frozenset({"trace", "debug", "info", "information", "notice"}) | {
    level for level in ALERT_LEVELS if len(level) > 1
}
_LEVEL_LETTERS = frozenset("VDIWEF")


@dataclass(frozen=True, slots=True)
class Header:
    """Leading fields that every template line leaves out, and what they held."""

    columns: int
    summary: str


NO_HEADER = Header(0, "")


def _column_summary(values: dict[str, int], total: int, shown_count: int) -> str:
    ranked = sorted(values.items(), key=lambda item: -item[1])
    if ranked[0][1] == total:
        return ranked[0][0] or "''"
    shown = "|".join(value or "''" for value, _ in ranked[:shown_count])
    return shown + ("|…" if len(ranked) > shown_count else "")


def header_columns(split: list[tuple[tuple[str, ...], int]], config: LogConfig) -> Header:
    """How many leading fields of the record bodies are header, not event (see the module docstring).

    ``split`` holds each distinct body's masked words (leading blanks dropped) and
    how many records have it.
    """
    total = sum(weight for _, weight in split)
    if total < config.header_min_records:
        return NO_HEADER
    summaries: list[str] = []
    for column in range(config.header_max_columns):
        values: dict[str, int] = {}
        rests: dict[str, set[str]] = {}
        rest_weight: dict[str, int] = {}
        covered = 0
        for masked, weight in split:
            if len(masked) <= column + 1:
                continue
            covered += weight
            value = masked[column]
            values[value] = values.get(value, 0) + weight
            rest = " ".join(masked[column + 1 :])
            rests.setdefault(rest, set()).add(value)
            rest_weight[rest] = rest_weight.get(rest, 0) + weight
        if covered < total * config.header_coverage:
            break
        if any(value.strip("[]():,|<>").lower() in _LEVEL_WORDS or value in _LEVEL_LETTERS for value in values):
            # A level tells events apart and marks the alerts: it stays in the template lines.
            break
        constant = max(values.values()) >= covered * config.header_constant_share
        # As when merging templates: two or three plain values are usually different events, unless the
        # rest of the line is long enough to be the same event.
        few = len(values) < config.merge_min_variants
        recurring = [
            rest
            for rest, weight in rest_weight.items()
            if weight > 1 and not (few and rest.count(" ") + 1 < config.merge_context_words)
        ]
        shared = sum(1 for rest in recurring if len(rests[rest]) > 1)
        interchangeable = (
            len(recurring) >= config.header_min_recurring and shared >= len(recurring) * config.header_shared_share
        )
        if not (constant or interchangeable):
            break
        summaries.append(_column_summary(values, covered, config.header_values_shown))
    if not summaries:
        return NO_HEADER
    return Header(len(summaries), " ".join(summaries))


def cut_fields(words: list[str] | tuple[str, ...], columns: int) -> int:
    """How many of the body's space-split words the first ``columns`` fields (non-empty words, the spaces
    after them included) take, or 0 when no message would follow them."""
    fields = 0
    index = 0
    while index < len(words) and fields < columns:
        fields += bool(words[index])
        index += 1
    while index < len(words) and not words[index]:
        index += 1
    return index if fields == columns and index < len(words) else 0

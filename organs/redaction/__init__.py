"""Redaction: credentials never reach the model or a log, and personal data only as pseudonyms when asked.

A leaf below the runtime: the rules, the engine that finds them and the ``Redactor`` that replaces them.
The stomach's segment-aware ``redact_paste`` (``organs.stomach.core.redact``) runs them on each evidence segment
before anything is rendered, counted, stored for serving or logged; ``find_secrets`` is the same rules for the
border's defence in depth and ``scrub_secrets`` for log lines and dead-letter reasons.
"""

from __future__ import annotations

from collections.abc import Iterable

from organs.redaction.engine import Hit, find_hits, holds_keyword
from organs.redaction.pseudonyms import REDACT_VARIABLE, Redactor, parse_personal
from organs.redaction.rules import PERSONAL_RULES, SECRET_RULES, Rule

__all__ = [
    "PERSONAL_RULES",
    "REDACT_VARIABLE",
    "SECRET_RULES",
    "Hit",
    "Redactor",
    "Rule",
    "find_secrets",
    "parse_personal",
    "scrub_secrets",
    "secret_free",
]


def find_secrets(text: str) -> list[Hit]:
    """Every credential the rules find in ``text``, in order (personal data is not looked for)."""
    return find_hits(text, SECRET_RULES)


def secret_free(texts: Iterable[str]) -> bool:
    """True when none of ``texts`` can hold a credential (no rule's keyword occurs): one pass for them all."""
    return not holds_keyword("\n".join(texts), SECRET_RULES)


def scrub_secrets(text: str) -> str:
    """``text`` with its credentials replaced by placeholders: for a log line, a reason, a header."""
    return Redactor().redact(text)[0]

"""Redaction: credentials in a paste never reach the model, and personal data only as pseudonyms when asked.

``redact_paste`` runs on each evidence segment before the stomach renders,
counts, stores for serving or logs anything; ``find_secrets`` is the same rules
for the border's defence in depth and ``scrub_secrets`` for log lines and reasons.
"""

from __future__ import annotations

from collections.abc import Iterable

from organs.stomach.redact.engine import Hit, find_hits, holds_keyword
from organs.stomach.redact.paste import PasteRedaction, describe, redact_paste
from organs.stomach.redact.pseudonyms import REDACT_VARIABLE, Redactor, parse_personal
from organs.stomach.redact.rules import PERSONAL_RULES, SECRET_RULES, Rule

__all__ = [
    "PERSONAL_RULES",
    "REDACT_VARIABLE",
    "SECRET_RULES",
    "Hit",
    "PasteRedaction",
    "Redactor",
    "Rule",
    "describe",
    "find_secrets",
    "parse_personal",
    "redact_paste",
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

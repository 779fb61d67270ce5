"""Which prose carries the ask: a question, or an imperative addressed to the reader."""

from __future__ import annotations

import re

__all__ = ["reads_as_ask"]

_ASK_OPENERS = frozenset(
    [
        "please",
        "why",
        "how",
        "what",
        "where",
        "when",
        "which",
        "who",
        "whom",
        "whose",
        "can",
        "could",
        "would",
        "should",
        "shall",
        "will",
        "is",
        "are",
        "was",
        "were",
        "does",
        "do",
        "did",
        "help",
        "fix",
        "explain",
        "find",
        "tell",
        "show",
        "summarize",
        "summarise",
        "debug",
        "investigate",
        "identify",
        "check",
        "figure",
        "list",
        "give",
        "write",
        "make",
        "add",
        "remove",
        "delete",
        "update",
        "refactor",
        "analyze",
        "analyse",
        "diagnose",
        "look",
        "review",
        "describe",
        "suggest",
        "compare",
        "implement",
        "rewrite",
        "convert",
        "optimise",
        "optimize",
        "propose",
        "recommend",
        "determine",
        "resolve",
        "clarify",
        "walk",
        "point",
        "spot",
    ]
)
_ASK_PHRASES = re.compile(
    r"\b(?:please|can you|could you|would you|help me|i need|i want|we need|tell me|let me know|any idea)\b", re.I
)
_QUESTION_END = re.compile(r"\?(?:[\s\"')\]]|$)")


def reads_as_ask(text: str) -> bool:
    head = text[:2000]
    if _QUESTION_END.search(head) is not None or _ASK_PHRASES.search(head) is not None:
        return True
    first_word = head.lstrip().split(maxsplit=1)[0].strip(",.:;!").lower() if head.strip() else ""
    return first_word in _ASK_OPENERS

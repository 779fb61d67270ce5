"""Masking a log line's variable fields as ``<*>``.

A variable field is any token carrying a digit (numbers, ids, hex, IPs, UUIDs,
versions, paths with digits; a digit-free lead such as ``attempt_`` or ``node-``
stays, and so do a lone leading ``/`` and a trailing ``.``, ``:`` or ``-``),
a quoted value, a ``key=value`` value, a digit-free absolute path or a base64 value padded with ``=``;
side-by-side wildcards collapse into one.

Masking is the hot path of the distiller: it runs once per distinct
digit-flattened line shape and, through a cache, once per distinct word.
"""

from __future__ import annotations

import re

__all__ = [
    "DIGITS_TO_ZERO",
    "VARIABLE",
    "WILDCARD",
    "collapse_runs",
    "joined",
    "mask_by_words",
    "mask_variables",
    "split_variables",
    "word_masks",
]

WILDCARD = "<*>"
DIGITS_TO_ZERO = str.maketrans("0123456789", "0000000000")
_MASK_MARK = re.compile(r"[0-9=/]")
# How many distinct words the masking cache grows to before it keeps only plain words (a log's vocabulary).
_VALUE_WORDS_KEPT = 1 << 16

# A quoted value. Quote characters are taken by these alternatives only, so a line's quoted values are
# the same whether found alone or with the rest of ``VARIABLE`` (``mask_by_words`` relies on it).
# Each opens on its quote, then looks behind it, so the engine skips straight to quote characters.
_QUOTED_VALUE = r"\"(?<!\w\")[^\"\n]{0,200}\"|'(?<!\w')[^'\n]{0,200}'(?!\w)"
_QUOTED = re.compile(_QUOTED_VALUE)
VARIABLE = re.compile(
    _QUOTED_VALUE + r"|(?<==)[^\s,;&)\]}>\"']{1,200}"
    # A base64 value padded with ``=`` (a digest, a key), whether or not a digit is in it.
    r"|(?<![\w+/=])[A-Za-z0-9+/]{6,200}={1,2}(?![\w+/=])"
    # A token carrying a digit. A digit-free lead of letters ending in a separator (``attempt_``,
    # ``node-``, ``Thread.java:``) is a name, not a value, so it stays: a match starts at a token start
    # that opens no such lead, or right after a letter and a separator. Each look-around is bounded or
    # scans one letter run once, so masking stays linear in the line.
    # A lone leading slash (``/10.0.0.1:50010``) is punctuation the template keeps.
    r"|(?:(?<![\w.:/@+\-#])(?!/)|(?<=[A-Za-z][_\-:./#@])|(?<=(?<![\w.:/@+\-#])/))(?![A-Za-z]+[_\-:./#@])"
    # A trailing ``.``, ``:`` or ``-`` is the sentence's punctuation, not the value's (``from 10.0.0.1: 11:``).
    r"(?=[\w.:/@+\-#]{0,300}?\d)[\w.:/@+\-#]*[\w/@+#]"
    r"|(?<![\w.])(?:/[\w.\-@+~]{1,200}){2,}"
)
# Variables standing side by side are one variable: "<*> <*> <*>" says no more than "<*>".
_WILDCARD_RUN = re.compile(r"<\*>(?: +<\*>)+")


def mask_variables(body: str, prefix: int) -> str:
    """``body`` with its variable fields as ``<*>``; only its first ``prefix`` characters are read."""
    masked = VARIABLE.sub(WILDCARD, body[:prefix])
    if "> <*>" in masked:
        masked = _WILDCARD_RUN.sub(WILDCARD, masked)
    return masked if len(body) <= prefix else masked + "<…>"


def collapse_runs(text: str) -> str:
    return _WILDCARD_RUN.sub(WILDCARD, text) if "> <*>" in text else text


def mask_by_words(body: str, words: dict[str, str], prefix: int) -> str:
    """``mask_variables(body, prefix)``, computed one space-separated word at a time through a cache.

    Every alternative of ``VARIABLE`` except the quoted ones matches inside one
    word and looks at most at a space beyond it, which it treats like the string
    edge, so masking each word alone is the same as masking the line. Quoted
    values are found first, on the whole line (no other alternative takes a
    quote character, and one treats a quote beside it as it treats the string
    edge), and the words between them are masked one at a time. Lines longer
    than the masked prefix take the line-wide path. Words repeat across lines
    far more than lines do, so most words cost a lookup.
    """
    if len(body) > prefix:
        return mask_variables(body, prefix)
    masked_words = word_masks(body, words, prefix)
    if masked_words is not None:
        return joined(masked_words)
    pieces: list[str] = []
    position = 0
    for quoted in _QUOTED.finditer(body):
        pieces += [_mask_between_quotes(body[position : quoted.start()], words, prefix), WILDCARD]
        position = quoted.end()
    pieces.append(_mask_between_quotes(body[position:], words, prefix))
    return collapse_runs("".join(pieces))


def _mask_between_quotes(gap: str, words: dict[str, str], prefix: int) -> str:
    masked_words = word_masks(gap, words, prefix)
    # A quote that opens no quoted value stays in its gap, which is then masked whole.
    return VARIABLE.sub(WILDCARD, gap) if masked_words is None else " ".join(masked_words)


def word_masks(body: str, words: dict[str, str], prefix: int) -> tuple[str, ...] | None:
    """Each word of ``body`` masked on its own, or ``None`` when the body needs the line-wide path."""
    if len(body) > prefix or '"' in body or "'" in body:
        return None
    pieces = []
    for word in body.split(" "):
        masked_word = words.get(word)
        if masked_word is None:
            # Without a digit, ``=`` or ``/`` no alternative can match (quotes were ruled out above).
            if word.isascii() and _MASK_MARK.search(word) is None:
                masked_word = words[word] = word
            else:
                masked_word = VARIABLE.sub(WILDCARD, word)
                # The commonest mask is one shared string, kept or not.
                masked_word = WILDCARD if masked_word == WILDCARD else masked_word
                # Values (ids, counters) past the cache's size are masked again when they recur: in a log of
                # ids nearly every line brings new ones, and keeping them all would cost more than the log.
                if len(words) < _VALUE_WORDS_KEPT:
                    words[word] = masked_word
        pieces.append(masked_word)
    return tuple(pieces)


def joined(masked_words: tuple[str, ...]) -> str:
    return collapse_runs(" ".join(masked_words))


def split_variables(body: str, prefix: int) -> tuple[list[str], list[str]]:
    """The constant pieces of ``body`` and the variable values between them (as ``mask_variables`` sees them)."""
    constants: list[str] = []
    values: list[str] = []
    position = 0
    for match in VARIABLE.finditer(body, 0, prefix):
        constants.append(body[position : match.start()])
        values.append(match.group())
        position = match.end()
    constants.append(body[position:])
    return constants, values

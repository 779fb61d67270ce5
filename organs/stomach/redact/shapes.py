"""Credentials that no keyword on their own line gives away, found by the shape of what holds them.

* a table (CSV or TSV) whose header names a column like a secret (``Secret access key``,
  ``password``, ``api_token``): every value under that header is one;
* base64 that decodes to text holding a credential: the whole base64 run is one;
* a key split over two lines: an AWS access key id or a GitHub token whose first part ends a
  line and whose rest begins the next, the two parts exactly the key's length;
* a bare 40-character AWS secret access key alone on its line (mixed case, digits, high
  entropy): on its own line nothing else has that shape, and it would otherwise be read as
  a path.

Each detector is linear in the text: a pre-filter (the header words, the base64 alphabet,
the key prefixes) before any work, and bounded patterns.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable

from organs.stomach.redact.rules import entropy, literal_password

__all__ = ["shape_hits"]

Found = tuple[int, int, str]
"""(start, end, kind) of a value to replace."""

# A header cell naming a secret column; ``key id`` and ``key name`` name none.
_SECRET_COLUMN = re.compile(
    r"(?i)^(?:.*[\s_-])?(?:secret(?:[\s_-]*access)?(?:[\s_-]*key)?|password|passwd|pwd|passphrase|"
    r"(?:api|access|auth|private|secret)[\s_-]*(?:key|token)|token|client[\s_-]*secret)$"
)
_HEADER_WORDS = ("secret", "pass", "pwd", "token", "key")
_CELL = re.compile(r"[A-Za-z][A-Za-z0-9 _./()-]{0,48}")
_MAX_TABLE_ROWS = 100_000


def _cells(line: str, delimiter: str) -> list[str]:
    return [cell.strip().strip("\"'").strip() for cell in line.split(delimiter)]


def _header(line: str) -> tuple[str, list[int]] | None:
    """The delimiter and secret columns of ``line`` when it reads as a table header naming one."""
    lowered = line.lower()
    if not any(word in lowered for word in _HEADER_WORDS):
        return None
    for delimiter in ("\t", ",", ";", "|"):
        if delimiter not in line:
            continue
        cells = _cells(line, delimiter)
        if len(cells) < 2 or not all(_CELL.fullmatch(cell) for cell in cells if cell):
            continue
        secret = [index for index, cell in enumerate(cells) if _SECRET_COLUMN.match(cell)]
        if secret:
            return delimiter, secret
    return None


def _column_values(text: str) -> Iterable[Found]:
    """Values under a secret-named header, row by row while the rows keep the header's width."""
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    row = 0
    while row < len(lines):
        found = _header(lines[row])
        row += 1
        if found is None:
            continue
        delimiter, columns = found
        width = lines[row - 1].count(delimiter)
        end = min(len(lines), row + _MAX_TABLE_ROWS)
        while row < end and lines[row].count(delimiter) == width and lines[row].strip():
            yield from _row_values(lines[row], offsets[row], delimiter, columns)
            row += 1


def _row_values(line: str, offset: int, delimiter: str, columns: list[int]) -> Iterable[Found]:
    start = 0
    for index, cell in enumerate(line.split(delimiter)):
        if index in columns:
            value = cell.strip().strip("\"'").strip()
            if literal_password(value) and not value.startswith("‹"):
                where = line.index(value, start)
                yield offset + where, offset + where + len(value), "secret"
        start += len(cell) + len(delimiter)


_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/]{24,8192}={0,2}(?![A-Za-z0-9+/=_-])")


def _wrapped(text: str, inner: Callable[[str], list[str]]) -> Iterable[Found]:
    """Base64 runs whose decoded text holds a credential (``inner`` names its kinds)."""
    for run in _BASE64_RUN.finditer(text):
        value = run.group()
        if len(value) % 4:
            continue
        try:
            decoded = base64.b64decode(value, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            continue
        if not decoded.isprintable() and not decoded.replace("\n", "").replace("\t", "").isprintable():
            continue
        kinds = inner(decoded)
        if kinds:
            yield run.start(), run.end(), f"base64_{kinds[0]}"


# A key's first part at the end of a line, its rest at the start of the next (a wrapped terminal, a
# line-length limit, a paste that broke it); the parts are joined only when they make the key's length.
_SPLIT_KEYS: tuple[tuple[str, re.Pattern[str], int, int], ...] = (
    (
        "aws_access_key_id",
        re.compile(r"(?<![A-Za-z0-9])((?:AKIA|ASIA)[A-Z0-9]{0,15})[ \t]*\\?\r?\n[ \t]*([A-Z0-9]{1,16})(?![A-Za-z0-9])"),
        4,
        16,
    ),
    (
        "github_token",
        re.compile(
            r"(?<![A-Za-z0-9_])(gh[pousr]_[A-Za-z0-9]{0,35})[ \t]*\\?\r?\n[ \t]*([A-Za-z0-9]{1,36})(?![A-Za-z0-9])"
        ),
        4,
        36,
    ),
)
_SPLIT_PREFIXES = ("AKIA", "ASIA", "ghp_", "gho_", "ghu_", "ghs_", "ghr_")


def _split_keys(text: str) -> Iterable[Found]:
    if not any(prefix in text for prefix in _SPLIT_PREFIXES):
        return
    for kind, pattern, prefix, length in _SPLIT_KEYS:
        for match in pattern.finditer(text):
            head, rest = match.group(1), match.group(2)
            if len(head) - prefix + len(rest) == length:
                yield match.start(1), match.end(1), kind
                yield match.start(2), match.end(2), kind


_BARE_SECRET = re.compile(r"(?m)^[ \t]*([A-Za-z0-9/+]{40})[ \t]*$")


def _bare_secrets(text: str) -> Iterable[Found]:
    for match in _BARE_SECRET.finditer(text):
        value = match.group(1)
        mixed = any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value)
        if mixed and entropy(value) >= 4.0:
            yield match.start(1), match.end(1), "aws_secret_access_key"


def shape_hits(text: str, inner: Callable[[str], list[str]]) -> list[Found]:
    """Every credential found by its shape in ``text``; ``inner`` gives the kinds the rules find in a text."""
    return [*_column_values(text), *_wrapped(text, inner), *_split_keys(text), *_bare_secrets(text)]

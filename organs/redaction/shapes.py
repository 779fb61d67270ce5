"""Credentials that no keyword on their own line gives away, found by the shape of what holds them.

* a table (CSV or TSV) whose header names a column like a secret (``Secret access key``,
  ``password``, ``api_token``): every value under that header is one;
* base64 that decodes to text holding a credential: the whole base64 run is one;
* a key split over two lines: an AWS access key id or a GitHub token whose first part ends a
  line and whose rest begins the next, the two parts exactly the key's length;
* a bare 40-character AWS secret access key alone on its line (mixed case, digits, high
  entropy): on its own line nothing else has that shape, and it would otherwise be read as
  a path;
* a ``~/.pgpass`` line (host:port:database:user:password).

Each detector is linear in the text: a pre-filter (the header words, the base64 alphabet,
the key prefixes) before any work, and bounded patterns.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable
from functools import lru_cache

import ahocorasick_rs

from organs.redaction.rules import entropy, literal_password
from organs.text_views import line_pieces

__all__ = ["shape_hits"]

Found = tuple[int, int, str]
"""(start, end, kind) of a value to replace."""

# A header cell naming a secret column; ``key id`` and ``key name`` name none.
_SECRET_COLUMN = re.compile(
    r"(?i)^(?:.*[\s_-])?(?:secret(?:[\s_-]*access)?(?:[\s_-]*key)?|password|passwd|pwd|passphrase|"
    r"(?:api|access|auth|private|secret)[\s_-]*(?:key|token)|token|client[\s_-]*secret)$"
)
_HEADER_WORDS = ("secret", "pass", "pwd", "token", "key")
_HEADER_WORD = ahocorasick_rs.AhoCorasick(list(_HEADER_WORDS))
_HEADER_WORD_BYTES = ahocorasick_rs.BytesAhoCorasick([word.encode() for word in _HEADER_WORDS])
_HEADER_WORD_ANY_CASE = re.compile("|".join(_HEADER_WORDS), re.IGNORECASE)
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


def _line_at(text: str, at: int) -> tuple[int, int]:
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    return start, len(text) if end == -1 else end


def _header_word_positions(text: str) -> Iterable[int]:
    """Where a header word starts, case aside, in order. The text is read a piece of lines at a time, so no
    lower-cased copy or encoding of the whole of a large paste is held; an ASCII piece is searched as bytes,
    whose offsets are its characters' (searching a str builds a table of every character's position, eight
    bytes each)."""
    offset = 0
    for piece in line_pieces(text):
        lowered = piece.lower()
        if len(lowered) != len(piece):
            # Lower-casing moved positions (U+0130 becomes two characters): a case-blind pattern keeps them.
            found: Iterable[int] = (match.start() for match in _HEADER_WORD_ANY_CASE.finditer(piece))
        elif lowered.isascii():
            found = (at for _, at, _ in _HEADER_WORD_BYTES.find_matches_as_indexes(lowered.encode("ascii")))
        else:
            found = (at for _, at, _ in _HEADER_WORD.find_matches_as_indexes(lowered))
        yield from (offset + at for at in found)
        offset += len(piece) + 1


def _column_values(text: str) -> Iterable[Found]:
    """Values under a secret-named header, row by row while the rows keep the header's width. Only the
    lines holding a header word are read as possible headers."""
    done = 0
    for at in _header_word_positions(text):
        if at < done:
            continue
        start, end = _line_at(text, at)
        done = end + 1
        found = _header(text[start:end])
        if found is None:
            continue
        delimiter, columns = found
        width = text.count(delimiter, start, end)
        position, rows = end + 1, 0
        while position < len(text) and rows < _MAX_TABLE_ROWS:
            row_start, row_end = _line_at(text, position)
            row = text[row_start:row_end]
            if row.count(delimiter) != width or not row.strip():
                break
            yield from _row_values(row, row_start, delimiter, columns)
            position, rows = row_end + 1, rows + 1
        done = max(done, position)


def _row_values(line: str, offset: int, delimiter: str, columns: list[int]) -> Iterable[Found]:
    start = 0
    for index, cell in enumerate(line.split(delimiter)):
        if index in columns:
            value = cell.strip().strip("\"'").strip()
            if literal_password(value) and not value.startswith("‹"):
                where = line.index(value, start)
                yield offset + where, offset + where + len(value), "secret"
        start += len(cell) + len(delimiter)


_BASE64_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{24,8192}={0,2}")
# Words a wrapped credential's text holds (the rules' keywords and the token prefixes), in the cases they take.
_WRAPPED_WORDS = (
    "password", "passwd", "secret", "token", "private key", "akia", "asia", "aiza", "ghp_", "gho_", "ghs_",
    "github_pat_", "glpat-", "xoxb-", "xoxp-", "sk_live_", "sk-ant-", "sk-proj-", "npm_", "bearer", "apikey",
    "api_key", "authorization", "://",
)  # fmt: skip


def _encoded(word: bytes) -> list[str]:
    """What base64 holds of ``word`` at each of the three alignments: the characters ``word`` alone decides."""
    shown = []
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + word + b"\0\0").decode()
        first, last = -(-shift * 8 // 6), (shift + len(word)) * 8 // 6
        shown.append(encoded[first:last])
    return shown


@lru_cache(maxsize=1)
def _markers() -> ahocorasick_rs.BytesAhoCorasick:
    words = {variant for word in _WRAPPED_WORDS for variant in (word, word.upper(), word.capitalize())}
    markers = sorted({marker for word in words for marker in _encoded(word.encode()) if len(marker) >= 4})
    return ahocorasick_rs.BytesAhoCorasick([marker.encode() for marker in markers])


def _run_around(text: str, at: int) -> tuple[int, int]:
    """The run of base64 characters around ``at``, and its padding."""
    start = at
    while start > 0 and text[start - 1] in _BASE64_CHARACTERS:
        start -= 1
    match = _BASE64_RUN.match(text, start)
    return (start, match.end()) if match else (start, start)


def _marker_positions(text: str) -> Iterable[int]:
    """Where the base64 of a credential's word starts in ``text``, in order, for all words in one pass. The
    text is read a piece of lines at a time (no base64 run crosses a line), each as its bytes, so no encoding
    of the whole of a large paste is held; a piece that is not ASCII is passed over, as its byte offsets would
    not be its characters'."""
    offset = 0
    for piece in line_pieces(text):
        if piece.isascii():
            matches = _markers().find_matches_as_indexes(piece.encode("ascii"), overlapping=False)
            yield from (offset + at for _, at, _ in matches)
        offset += len(piece) + 1


def _wrapped(text: str, inner: Callable[[str], list[str]]) -> Iterable[Found]:
    """Base64 runs whose decoded text holds a credential (``inner`` names its kinds). Only a run holding the
    base64 of a credential's word is decoded."""
    done = -1
    for at in _marker_positions(text):
        if at < done:
            continue
        start, end = _run_around(text, at)
        done = end
        value = text[start:end]
        # A run inside a longer token (URL-safe base64, an identifier) is not one to decode.
        inside = (start and text[start - 1] in "=_-") or (end < len(text) and text[end] in "_-")
        if len(value) < 24 or len(value) % 4 or inside:
            continue
        try:
            decoded = base64.b64decode(value, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            continue
        if not decoded.replace("\n", "").replace("\t", "").isprintable():
            continue
        kinds = inner(decoded)
        if kinds:
            yield start, end, f"base64_{kinds[0]}"


# A key's first part at the end of a line, its rest at the start of the next (a wrapped terminal, a
# line-length limit, a paste that broke it); the parts are joined only when they make the key's length.
_SPLIT_KEYS: tuple[tuple[str, re.Pattern[str], int, int], ...] = (
    (
        "aws_access_key_id",
        re.compile(r"((?:AKIA|ASIA)[A-Z0-9]{0,15})[ \t]*\\?\r?\n[ \t]*([A-Z0-9]{1,16})(?![A-Za-z0-9])"),
        4,
        16,
    ),
    (
        "github_token",
        re.compile(r"(gh[pousr]_[A-Za-z0-9]{0,35})[ \t]*\\?\r?\n[ \t]*([A-Za-z0-9]{1,36})(?![A-Za-z0-9])"),
        4,
        36,
    ),
)
_SPLIT_PREFIXES = {
    "aws_access_key_id": ("AKIA", "ASIA"),
    "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
}


def _split_keys(text: str) -> Iterable[Found]:
    for kind, pattern, prefix, length in _SPLIT_KEYS:
        for start in _occurrences(text, _SPLIT_PREFIXES[kind]):
            if start and (text[start - 1].isalnum() or text[start - 1] == "_"):
                continue  # inside a longer word
            match = pattern.match(text, start)
            if match is None:
                continue
            head, rest = match.group(1), match.group(2)
            if len(head) - prefix + len(rest) == length:
                yield match.start(1), match.end(1), kind
                yield match.start(2), match.end(2), kind


def _occurrences(text: str, prefixes: tuple[str, ...]) -> Iterable[int]:
    for prefix in prefixes:
        at = text.find(prefix)
        while at != -1:
            yield at
            at = text.find(prefix, at + 1)


class _LineStartPattern:
    """A pattern anchored at the start of a line, the text's first line included. It is searched as a newline
    followed by the pattern, whose literal first character the regex engine looks for before trying a match
    (a ``^`` under MULTILINE is tried at every position, several times slower), and matched once at the
    text's start: no copy of the text with a newline before it is made."""

    def __init__(self, body: str) -> None:
        self._first_line = re.compile(body)
        self._later_lines = re.compile("\n" + body)

    def finditer(self, text: str) -> Iterable[re.Match[str]]:
        first = self._first_line.match(text)
        if first is not None:
            yield first
        yield from self._later_lines.finditer(text)


_BARE_SECRET = _LineStartPattern(r"[ \t]*([A-Za-z0-9/+]{40})[ \t]*(?=\r?\n|$)")
# ~/.pgpass: host:port:database:user:password, the port a number or '*', the password the rest of the line.
_PGPASS = _LineStartPattern(
    r"(?:[A-Za-z0-9._-]{1,253}|\*):(?:[0-9]{1,5}|\*):(?:[A-Za-z0-9_.$-]*[A-Za-z_*][A-Za-z0-9_.$-]*):"
    r"(?:[A-Za-z0-9_.@$-]*[A-Za-z_*][A-Za-z0-9_.@$-]*):((?:[^\s:\\]|\\.){1,256})(?=\r?\n|$)"
)


def _bare_secrets(text: str) -> Iterable[Found]:
    for match in _BARE_SECRET.finditer(text):
        value = match.group(1)
        mixed = any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value)
        if mixed and entropy(value) >= 4.0:
            yield match.start(1), match.end(1), "aws_secret_access_key"


def _pgpass(text: str) -> Iterable[Found]:
    if ":" not in text:
        return
    for match in _PGPASS.finditer(text):
        if literal_password(match.group(1)):
            yield match.start(1), match.end(1), "pgpass_password"


def shape_hits(text: str, inner: Callable[[str], list[str]]) -> list[Found]:
    """Every credential found by its shape in ``text``; ``inner`` gives the kinds the rules find in a text."""
    return [*_column_values(text), *_wrapped(text, inner), *_split_keys(text), *_bare_secrets(text), *_pgpass(text)]

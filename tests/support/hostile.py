"""Generators of hostile input: for the decoder, core and worker tests of bad input, and the hostile bench.

Everything here builds bytes or text; nothing talks to a bus. Valid envelopes
come from the project's own builders (``organs.secretion``, ``tests.support.envelopes``)
so that a mutation of one is a mutation of what really travels on the tract.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import msgspec
from hypothesis import strategies as st

from envelopes.codec import encode
from envelopes.types import Envelope
from organs.absorption.core import yield_context
from tests.support.envelopes import AT, digested_envelope, fresh_paste

# A marker string that cannot occur in a real envelope: it is encoded, then its
# msgpack bytes are swapped for raw bytes that no encoder would ever write.
_MARKER = "\x01ichor-fault-marker\x01"
_MARKER_BYTES = msgspec.msgpack.encode(_MARKER)

# Tags the payload union knows, and tags it must refuse.
PAYLOAD_TAGS = ("paste", "digested", "yield", "admitted", "rejected", "deferred_notice")
PROVENANCE_TAGS = ("user_input", "external", "system_internal", "organ_secretion")


# --- valid envelopes and their raw maps -------------------------------------------------


def valid_envelopes() -> list[Envelope]:
    """One envelope of every kind a worker may receive, built the way organs build them."""
    digested = digested_envelope()
    return [
        fresh_paste(),
        fresh_paste("x", intent="why?", budget_tokens=0),
        digested,
        yield_context(digested, "f", now=AT),
    ]


def raw_map(envelope: Envelope) -> dict[str, Any]:
    """The envelope as plain msgpack data (dicts, lists, scalars), ready to be mutated."""
    data: dict[str, Any] = msgspec.msgpack.decode(encode(envelope))
    return data


def splice(data: Any, path: tuple[str | int, ...], raw: bytes) -> bytes:
    """Encode ``data`` with the value at ``path`` replaced by ``raw``, bytes no encoder would produce.

    An empty path replaces nothing and appends nothing: it encodes ``data`` as is.
    A path whose last key is missing adds that key (an unknown field).
    """
    copy = msgspec.msgpack.decode(msgspec.msgpack.encode(data))
    if path:
        holder = copy
        for key in path[:-1]:
            holder = holder[key]
        holder[path[-1]] = _MARKER
    encoded = msgspec.msgpack.encode(copy)
    assert encoded.count(_MARKER_BYTES) == (1 if path else 0)
    return encoded.replace(_MARKER_BYTES, raw)


def replaced(data: Any, path: tuple[str | int, ...], value: Any) -> Any:
    """A deep copy of ``data`` with ``value`` at ``path`` (the root when the path is empty)."""
    if not path:
        return value
    copy = msgspec.msgpack.decode(msgspec.msgpack.encode(data))
    holder = copy
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = value
    return copy


def paths(data: Any, prefix: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """Every path into a decoded msgpack value, the root included."""
    yield prefix
    if isinstance(data, dict):
        for key, value in data.items():
            yield from paths(value, (*prefix, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from paths(value, (*prefix, index))


def nested_arrays(depth: int) -> bytes:
    """``depth`` one-element arrays around a nil: 1 byte per level, so 10,000 levels cost 10 KB."""
    return b"\x91" * depth + b"\xc0"


def nested_maps(depth: int) -> bytes:
    """``depth`` one-entry maps ``{"k": {"k": ...}}`` around a nil."""
    return b"\x81\xa1k" * depth + b"\xc0"


def msgpack_str(raw: bytes) -> bytes:
    """A msgpack str header with ``raw`` as its body, whatever ``raw`` holds (str 32 for any length)."""
    return b"\xdb" + len(raw).to_bytes(4, "big") + raw


# Byte sequences that are not UTF-8: a stray continuation byte, an overlong NUL and
# an overlong slash, a UTF-16 surrogate spelled in UTF-8 (CESU), a code point past
# U+10FFFF, a truncated three-byte sequence, and the bytes UTF-8 never uses.
INVALID_UTF8 = (
    b"\x80",
    b"\xc0\x80",
    b"\xc0\xaf",
    b"\xed\xa0\x80",
    b"\xed\xbf\xbf",
    b"\xf4\x90\x80\x80",
    b"\xe2\x82",
    b"\xfe\xff",
    b"ok until here \xff",
)

# Headers that claim more data than any message holds: the decoder must not allocate for them.
HUGE_LENGTH_CLAIMS = (
    b"\xdb\xff\xff\xff\xff",  # str 32
    b"\xc6\xff\xff\xff\xff",  # bin 32
    b"\xdd\xff\xff\xff\xff",  # array 32
    b"\xdf\xff\xff\xff\xff",  # map 32
    b"\xc9\xff\xff\xff\xff\x01",  # ext 32
)


# --- hypothesis strategies ------------------------------------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=True),
    st.text(max_size=40),
    st.binary(max_size=40),
    st.sampled_from(["", "\x00", "blake3:" + "0" * 64, "0" * 32, *PAYLOAD_TAGS, *PROVENANCE_TAGS]),
)

# Any msgpack value, nested a few levels: what a confused or hostile sender could put in a field.
msgpack_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=12,
)


@dataclass(frozen=True)
class PathologicalLine:
    """A line shape built to stress one rung of the classifier ladder (or a distiller behind it)."""

    name: str
    line: str
    rung: str
    # Lines in the block handed to the classifier; the sample caps what it examines.
    lines: int = 400


_W = 400  # the classifier examines at most LINE_PREFIX (400) characters of a line


def pathological_lines() -> list[PathologicalLine]:
    """Long runs of the characters each rung's patterns key on, and near misses of what each rung wants."""
    return [
        PathologicalLine("slashes", "/" * _W, "path / code"),
        PathologicalLine("dots", "." * _W, "path / hostname"),
        PathologicalLine("word-dots", "a." * (_W // 2), "trace header (dotted type)"),
        PathologicalLine("word-colons", "a::" * (_W // 3), "trace header (Rust path)"),
        PathologicalLine("pipes", "|" * _W, "delimited table"),
        PathologicalLine("commas", "," * _W, "delimited table (csv)"),
        PathologicalLine("quoted-commas", '"a,' * (_W // 3), "delimited table (csv quoting)"),
        PathologicalLine("tabs", "\t" * (_W - 1) + "x", "delimited table / Go frame"),
        PathologicalLine("spaces", " " * (_W - 1) + "x", "aligned table / Go frame"),
        PathologicalLine("brackets", "[" * _W, "weak log (bracketed prefix)"),
        PathologicalLine("bracket-word", "[" + "a" * (_W - 1), "weak log (bracketed prefix)"),
        PathologicalLine("colons", ":" * _W, "timestamped log / weak log"),
        PathologicalLine("digits", "1" * _W, "numbered records / timestamps"),
        PathologicalLine("clock-runs", "1:11:11" * (_W // 7), "weak log (embedded clock)"),
        PathologicalLine("error-colon", "Error:" * (_W // 6), "trace header (typed)"),
        PathologicalLine("error-words", "Error" * (_W // 5), "trace header (typed, no colon)"),
        PathologicalLine("at-frames", "at " * (_W // 3), "trace frame (at)"),
        PathologicalLine("at-frame-no-paren", "\tat " + "a" * (_W - 4), "trace frame (at)"),
        PathologicalLine("file-quotes", 'File "' * (_W // 6), "trace frame (Python)"),
        PathologicalLine("go-frame-miss", "\t" + "a" * (_W - 5) + ".go", "trace frame (Go)"),
        PathologicalLine("backticks", "`" * _W, "fence / code"),
        PathologicalLine("letters", "a" * _W, "code / prose"),
        PathologicalLine("parens", "(" * _W, "code"),
        PathologicalLine("assignment-miss", "a" * (_W - 2) + " =", "code (assignment)"),
        PathologicalLine("daemon-tag-miss", "a" * 79 + "[" + "1" * (_W - 80), "weak log (daemon tag)"),
        PathologicalLine("level-brackets", "[INFO" * (_W // 5), "weak log (level)"),
        PathologicalLine("stamp-pipe-digits", "12:00:00|" + "1" * (_W - 9), "clock-led records"),
        # A clock, a delimiter, then one long run of letters: _FREE_TEXT ("[A-Za-z]{2,}\S* +\S")
        # backtracks cubically in the run. Kept to a few lines: 400 of them take minutes.
        PathologicalLine("stamp-pipe-letters", "12:00:00|" + "a" * (_W - 9), "clock-led records", lines=24),
    ]


def repeat_to(line: str, size: int) -> str:
    """Newline-joined copies of ``line`` totalling about ``size`` characters."""
    return "\n".join([line] * max(size // (len(line) + 1), 1))

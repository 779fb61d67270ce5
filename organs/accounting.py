"""Exact accounting shared by every organ: token counts and content digests.

Token counts use ``encode_ordinary`` so text that happens to spell a special
token (``<|endoftext|>``) is counted as the text it is, never rejected.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import tiktoken

from envelopes.ids import digest_text
from envelopes.types import DEFAULT_ENCODING, Frame

__all__ = ["DEFAULT_ENCODING", "count_tokens", "count_tokens_many", "digest_text", "encoding_for", "yield_cost"]


@lru_cache(maxsize=8)
def encoding_for(name: str) -> tiktoken.Encoding:
    return tiktoken.get_encoding(name)


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    if not text:
        return 0
    return len(encoding_for(encoding).encode_ordinary(text))


# Below this many characters in all, starting threads costs more than it saves.
THREADED_COUNT_CHARS = 64 * 1024
_POOL_THREADS = 2
_counting_pool = ThreadPoolExecutor(max_workers=_POOL_THREADS, thread_name_prefix="ichor-tokens")


def count_tokens_many(texts: list[str], encoding: str = DEFAULT_ENCODING, num_threads: int = 2) -> list[int]:
    """Counts for many texts; large inputs are tokenised on a long-lived pool (tiktoken releases the GIL).

    ``num_threads`` of 1 or less counts inline, for a caller already on a worker thread.
    """
    if num_threads <= 1 or sum(len(text) for text in texts) < THREADED_COUNT_CHARS:
        return [count_tokens(text, encoding) for text in texts]
    # One task per worker, each counting a contiguous share: per-text futures cost more than they save.
    share = -(-len(texts) // _POOL_THREADS)
    groups = [texts[start : start + share] for start in range(0, len(texts), share)]
    counted = _counting_pool.map(lambda group: [count_tokens(text, encoding) for text in group], groups)
    return [count for group_counts in counted for count in group_counts]


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

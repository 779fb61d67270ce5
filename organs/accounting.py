"""Exact accounting shared by every organ: token counts and content digests.

Token counts use ``encode_ordinary`` so text that happens to spell a special
token (``<|endoftext|>``) is counted as the text it is, never rejected.
"""

from __future__ import annotations

from collections.abc import Sequence
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


def count_tokens_many(texts: list[str], encoding: str = DEFAULT_ENCODING, num_threads: int = 2) -> list[int]:
    """Counts for many texts, tokenised on worker threads (tiktoken releases the GIL)."""
    batches = encoding_for(encoding).encode_ordinary_batch(texts, num_threads=num_threads)
    return [len(tokens) for tokens in batches]


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

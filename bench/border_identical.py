"""Byte-identity of the border's answers across a change (``python -m bench.border_identical record|check FILE``).

Every bench paste shape (``bench.common.mixed_paste`` and ``small_paste``, 100 of each) and every real paste
(``../shared/corpus/realpastes/``) is taken through the pure cores (stomach, absorption, border) with fixed
clocks, at the default budget and at 600 tokens; one blake3 per (case, budget) is taken of the border's answer
as encoded for the wire: the admitted payload (the prompt's text, modules, inspection, findings, the yield it
was compiled from) or the rejection and its reasons. The envelope around it is left out: its id and trace are
fresh for every paste. ``record`` writes the digests to FILE; ``check`` recomputes them and exits non-zero,
naming each case that differs.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

from bench.common import record_or_check

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

REALPASTES = ROOT.parent / "shared" / "corpus" / "realpastes"
BUDGETS = (None, 600)
AT = "2026-12-01T00:00:00Z"


def _cases() -> Iterator[tuple[str, str]]:
    from bench.common import mixed_paste, small_paste

    for number in range(100):
        yield f"mixed/{number}", mixed_paste(number)
        yield f"small/{number}", small_paste(number)
    for path in sorted(REALPASTES.glob("*.txt")):
        yield f"realpastes/{path.name}", path.read_bytes().decode("utf-8")


def _answer(text: str, budget: int | None) -> bytes:
    from envelopes.codec import encode
    from envelopes.types import UserInput
    from organs.absorption.core import yield_context
    from organs.border.decide import BorderConfig, border_decide
    from organs.border.guard import BorderPolicy, GuardState, RateLimit
    from organs.secretion import paste_envelope
    from organs.stomach import IngestConfig, ingest_paste
    from organs.stomach.worker import digest_paste

    paste = paste_envelope(
        text, origin=UserInput(actor="bench"), source="ichor-bench", instance="bench", now=AT, budget_tokens=budget
    )
    config = IngestConfig() if budget is None else IngestConfig(budget_tokens=budget)
    digested = digest_paste(paste, ingest_paste(text, config), instance="bench", now=AT)
    yielded = yield_context(digested, "bench", now=AT)
    unlimited = RateLimit(capacity=1_000_000_000)
    border = BorderConfig(policy=BorderPolicy(rate=unlimited, sender_rate=unlimited))
    answer = border_decide(yielded, border, GuardState(), instance="bench", now=1_764_547_200.0, at=AT)
    # The payload alone: the envelope's id and trace are fresh for every paste.
    return encode(answer.payload)


def digests() -> dict[str, str]:
    import blake3

    return {
        f"{name}@{budget or 'default'}": blake3.blake3(_answer(text, budget)).hexdigest()
        for name, text in _cases()
        for budget in BUDGETS
    }


def main(argv: list[str] | None = None) -> int:
    return record_or_check("the border's answers", digests, argv)


if __name__ == "__main__":
    sys.exit(main())

"""Byte-identity of the stomach's renderings across a refactoring (``python -m bench.identical record|check FILE``).

Every Loghub log (``../shared/corpus/loghub/``) and every real paste (``../shared/corpus/realpastes/``) is
digested with ``ingest_paste`` at budgets 4,096, 1,500 and 600 tokens, and once more at 4,096 under a backlog
that makes the tier shallow and one that makes it deferred, so the cheap renderings are covered too. One blake3
per (case, setting) is taken of everything the bundle serves: the goal, the anchors, the tier and its reason,
the source digest, every frame as encoded for the wire (id, content, token cost, tier, window, title...), each
frame asked for again compact and full through the provider (a deferred frame is rendered then), and the report.

``record`` writes the digests to FILE; ``check`` recomputes them and exits non-zero, naming each case that
differs, when any does. Nothing here knows a case: a difference is reported, never explained away.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

from bench.common import record_or_check

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CORPORA = (ROOT.parent / "shared" / "corpus" / "loghub", ROOT.parent / "shared" / "corpus" / "realpastes")
BUDGETS = (4096, 1500, 600)
# (label, budget, backlog): the backlogs are the default config's shallow and deferred thresholds.
SETTINGS = (*((str(budget), budget, 0) for budget in BUDGETS), ("4096-shallow", 4096, 1), ("4096-deferred", 4096, 64))


def _cases() -> Iterator[tuple[str, str]]:
    for corpus in CORPORA:
        pattern = "*_2k.log" if corpus.name == "loghub" else "*.txt"
        for path in sorted(corpus.glob(pattern)):
            # The bytes as the bus carries them: no newline translation on the way in.
            yield f"{corpus.name}/{path.name}", path.read_bytes().decode("utf-8")


def _digest(text: str, budget: int, backlog: int) -> str:
    import blake3
    import msgspec

    from organs.stomach import IngestConfig, ingest_paste

    bundle = ingest_paste(text, IngestConfig(budget_tokens=budget, backlog=backlog))
    hasher = blake3.blake3()

    def feed(value: object) -> None:
        encoded = msgspec.msgpack.encode(value)
        hasher.update(len(encoded).to_bytes(8, "big"))
        hasher.update(encoded)

    query = bundle.query
    feed([query.goal, list(query.anchors), query.budget_tokens])
    feed([bundle.tier, bundle.tier_reason, bundle.encoding, bundle.source_digest])
    frames = bundle.provider.frames
    for frame in frames:
        feed(frame)
    for frame in frames:
        feed(bundle.provider.serve(frame.id, "compact"))
        feed(bundle.provider.serve(frame.id, "full"))
    for entry in bundle.report:
        feed(entry)
    return hasher.hexdigest()


def digests() -> dict[str, str]:
    found = {}
    for name, text in _cases():
        for label, budget, backlog in SETTINGS:
            found[f"{name}@{label}"] = _digest(text, budget, backlog)
    return found


def main(argv: list[str] | None = None) -> int:
    return record_or_check("the stomach's renderings", digests, argv)


if __name__ == "__main__":
    sys.exit(main())

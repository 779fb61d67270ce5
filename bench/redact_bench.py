"""Redaction: speed, false positives and recall (``python -m bench.redact_bench``).

* speed — the stomach's redaction of the Loghub corpus (16 logs, 4.4 MB; see
  ``bench/stomach_bench.py`` for the citation) against one single-threaded tiktoken
  encode of it, best of several runs; goal ≤ 0.2. Printed as MB/s too.
* hits — credentials found in the Loghub corpus and in ``../shared/corpus/realpastes``
  (goal 0: neither holds one); the opt-in personal data found in Loghub is printed
  for information.
* recall — share of generated planted-secret pastes (``bench/planted_secrets.py``)
  whose every planted value is gone from the redacted text; goal 1.0.
* linear time — adversarial inputs (each rule's keywords followed by long runs of the
  characters its patterns loop on) at 4× the size take ≤ 8× the time (linear is 4×, quadratic 16×).
"""

from __future__ import annotations

import functools
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import Row, best_time, emit_rows  # noqa: E402
from bench.planted_secrets import planted_pastes  # noqa: E402
from organs.accounting import DEFAULT_ENCODING, encoding_for  # noqa: E402
from organs.redaction import PERSONAL_RULES, SECRET_RULES, Redactor, find_secrets  # noqa: E402
from organs.stomach.core.blocks.split import split_blocks  # noqa: E402
from organs.stomach.core.redact import redact_paste  # noqa: E402

__all__ = ["adversarial_inputs"]

LOGHUB = ROOT.parent / "shared" / "corpus" / "loghub"
REALPASTES = ROOT.parent / "shared" / "corpus" / "realpastes"
SPEED_GOAL = 0.2
GROWTH_GOAL = 8.0
REPEATS = 3
SPEED_REPEATS = 5
SEEDS = range(10)
# What the rules' repeats loop on: name, value and separator characters, quotes and whitespace.
_LOOP_CHARACTERS = " \t_-.=:/+@~aZ09'\"%;"


def adversarial_inputs(run: int) -> dict[str, str]:
    """Family → a text where every rule's keyword is followed (or repeated) by runs of ``run`` of one character."""
    keywords = sorted({keyword for rule in (*SECRET_RULES, *PERSONAL_RULES) for keyword in rule.keywords})
    families = {
        f"keyword then {character!r}": "".join(k + character * run for k in keywords) for character in _LOOP_CHARACTERS
    }
    families.update(
        {
            f"(keyword {character!r}) repeated": "".join((k + character) * (run // 8) for k in keywords)
            for character in " =:_-"
        }
    )
    families["private-key headers, no footer"] = "-----BEGIN RSA PRIVATE KEY-----\n" * (run // 4)
    return families


def _recall() -> tuple[int, int, list[str]]:
    caught, total, missed = 0, 0, []
    for seed in SEEDS:
        for planted in planted_pastes(seed):
            total += 1
            redacted, found = Redactor().redact(planted.text)
            if found and not any(secret in redacted for secret in planted.secrets):
                caught += 1
            else:
                missed.append(f"{planted.kind} in {planted.place} (seed {seed})")
    return caught, total, missed


def main() -> int:
    logs = sorted(LOGHUB.glob("*_2k.log"))
    if not logs:
        print(f"no corpus under {LOGHUB}")
        return 1
    texts = {log.name: log.read_text(encoding="utf-8") for log in logs}
    corpus = "\n\n".join(text.strip("\n") for text in texts.values())
    megabytes = len(corpus.encode()) / 1e6
    tokenizer = encoding_for(DEFAULT_ENCODING)
    blocks = split_blocks(corpus)
    # Interleaved, so that a busy machine slows both sides of the ratio alike.
    redaction_s = encode_s = float("inf")
    for _ in range(SPEED_REPEATS):
        redaction_s = min(redaction_s, best_time(lambda: redact_paste(corpus, blocks), 1))
        encode_s = min(encode_s, best_time(lambda: tokenizer.encode_ordinary(corpus), 1))
    speed = redaction_s / encode_s
    print(
        f"redaction of Loghub ({megabytes:.1f} MB): {redaction_s:.3f}s = {megabytes / redaction_s:.1f} MB/s; "
        f"one encode {encode_s:.3f}s = {megabytes / encode_s:.1f} MB/s; ratio {speed:.3f} (goal ≤ {SPEED_GOAL})"
    )

    loghub_hits = {name: len(find_secrets(text)) for name, text in texts.items()}
    realpastes = sorted(REALPASTES.glob("*.txt"))
    realpaste_hits = {path.name: len(find_secrets(path.read_text(encoding="utf-8"))) for path in realpastes}
    personal = Counter(
        redaction.kind
        for text in texts.values()
        for redaction in Redactor(frozenset({"emails", "ips", "phones"})).redact(text)[1]
        for _ in range(redaction.count)
    )
    print(f"credentials found: Loghub {sum(loghub_hits.values())}, realpastes {sum(realpaste_hits.values())}")
    for name, hits in {**loghub_hits, **realpaste_hits}.items():
        if hits:
            print(f"  {name}: {hits}")
    print(f"personal data in Loghub when opted in (ICHOR_REDACT=emails,ips,phones): {dict(personal)}")

    caught, total, missed = _recall()
    print(f"planted-secret recall: {caught}/{total} pastes with every planted value gone")
    for miss in missed[:20]:
        print(f"  missed: {miss}")

    growth = 0.0
    small, large = adversarial_inputs(4096), adversarial_inputs(16384)
    everything = frozenset({"emails", "ips", "phones"})
    for family, text in small.items():
        small_s = best_time(functools.partial(Redactor(everything).redact, text), REPEATS)
        large_s = best_time(functools.partial(Redactor(everything).redact, large[family]), REPEATS)
        growth = max(growth, large_s / max(small_s, 1e-6))
    print(
        f"adversarial inputs, 4× the size: at most {growth:.1f}× the time "
        f"(goal ≤ {GROWTH_GOAL}; linear is 4, quadratic 16)"
    )

    emit_rows(
        [
            Row("redact", "redaction / one encode (Loghub)", round(speed, 3), goal=f"≤ {SPEED_GOAL}",
                met=speed <= SPEED_GOAL, note=f"{megabytes / redaction_s:.1f} MB/s"),
            Row("redact", "credentials found in Loghub", sum(loghub_hits.values()), unit="", goal="0",
                met=sum(loghub_hits.values()) == 0),
            Row("redact", "credentials found in realpastes", sum(realpaste_hits.values()), unit="", goal="0",
                met=sum(realpaste_hits.values()) == 0),
            Row("redact", "planted-secret recall", round(caught / total, 4), unit="", goal="1.0",
                met=caught == total, note=f"{caught}/{total} pastes"),
            Row("redact", "adversarial 4× size: time growth", round(growth, 2), goal=f"≤ {GROWTH_GOAL}",
                met=growth <= GROWTH_GOAL),
        ]
    )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

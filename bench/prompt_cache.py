"""What the compiled prompt gives providers' prompt caches, over the real-pastes corpus.

    python -m bench.prompt_cache

Run by ``bench.compile_bench`` too. Each paste of ``../shared/corpus/realpastes``
is digested by the stomach's core and compiled by the border's compiler with
the same modules (the built-in kernel and one workspace document):

* **stable prefix**: for every two consecutive pastes, the bytes their prompts
  share from the start, against the bytes before each one's first frame. Goal:
  every byte before the first frame is shared (1.00 for every pair).
* **new question, same paste**: the share of the prompt two asks about the same
  paste have in common (context: the kernel and every frame, with the goal last).
* **second turn**: the evidence tokens (frame segments) of the same paste
  compiled again in one session, where the first turn's frames are delivered,
  against the first turn's. Goal: at most 5% (the sum over the corpus).
"""

from __future__ import annotations

import itertools
import os
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.common import ROOT, Row, emit_rows

CORPUS = ROOT.parent / "shared" / "corpus" / "realpastes"
SECOND_TURN_GOAL = 0.05

# A workspace document of ordinary length, the same for every paste (it is part of "the same modules").
WORKSPACE = "\n".join(
    f"{number}. When a service named in the evidence is ours, say which team owns it and link its runbook; "
    f"prefer the smallest change that fixes the cause, and say how to check it worked (rule {number})."
    for number in range(1, 25)
)


def _compile(bundle: Any, goal: str, delivered: dict[str, int] | None = None) -> Any:
    from envelopes.types import UserInput, Yield, YieldMeta
    from organs.border import BorderConfig, BuiltinPromptConfig, builtin_modules, compile, paste_modules

    config = BorderConfig(builtins=BuiltinPromptConfig(workspace_instructions=(WORKSPACE,)))
    origin = UserInput(actor="bench")
    payload = Yield(
        summary="",
        extractions=(),
        meta=YieldMeta(origin, bundle.tier, bundle.source_digest, 0),
        goal=goal,
        anchors=bundle.query.anchors,
        frames=bundle.provider.frames,
        encoding=bundle.encoding,
    )
    modules = (
        *builtin_modules(config.builtins),
        *paste_modules(payload, origin, lambda _: "delegated", delivered=delivered),
    )
    return compile(modules, config.budget, config.encoding), payload


def _common_prefix(first: bytes, second: bytes) -> int:
    length = min(len(first), len(second))
    mismatch = next((index for index in range(length) if first[index] != second[index]), length)
    return mismatch


def _evidence_tokens(prompt: Any) -> int:
    return sum(
        entry.tokens for entry in prompt.inspection if entry.segment_id.startswith(("frame/", "paste/delivered/"))
    )


def measure(corpus: Path = CORPUS) -> list[Row]:
    from organs.border.session import SessionRecord, delivered_frames
    from organs.stomach import ingest_paste

    pastes = sorted(corpus.glob("*.txt"))
    if not pastes:
        print(f"prompt cache: no pastes in {corpus}; skipped", file=sys.stderr)
        return []
    prompts, shares, firsts, seconds, over_goal = [], [], 0, 0, 0
    for path in pastes:
        bundle = ingest_paste(path.read_bytes().decode("utf-8"))
        goal = bundle.query.goal or "What went wrong?"
        prompt, payload = _compile(bundle, goal)
        prompts.append(prompt)
        other, _ = _compile(bundle, goal + " And what should change first?")
        shares.append(_common_prefix(prompt.text.encode(), other.text.encode()) / prompt.bytes)
        carried = delivered_frames(payload.frames, prompt, {})
        delivered = SessionRecord().with_turn("turn-1", carried).delivered_before("turn-2")
        second, _ = _compile(bundle, goal, delivered)
        first_tokens, second_tokens = _evidence_tokens(prompt), _evidence_tokens(second)
        firsts, seconds = firsts + first_tokens, seconds + second_tokens
        over_goal += first_tokens > 0 and second_tokens > SECOND_TURN_GOAL * first_tokens
    pair_shares = []
    for first, second in itertools.pairwise(prompts):
        before_frame = [prompt.text.encode().find(b"[frame ") for prompt in (first, second)]
        needed = max(position for position in before_frame if position >= 0) if max(before_frame) >= 0 else 0
        shared = _common_prefix(first.text.encode(), second.text.encode())
        pair_shares.append(min(1.0, shared / needed) if needed else 1.0)
    stable_bytes = prompts[0].stable_prefix_bytes
    stable_tokens = prompts[0].stable_prefix_tokens
    worst_pair = min(pair_shares)
    second_ratio = seconds / firsts if firsts else 0.0
    rows = [
        Row(
            "compile",
            "two pastes: shared bytes / bytes before the first frame (worst pair)",
            worst_pair,
            unit="",
            goal="= 1.00",
            met=worst_pair >= 1.0,
            note=f"{len(pair_shares)} pairs; stable prefix {stable_bytes:,} B / {stable_tokens:,} tokens "
            "(kernel + workspace, the system message)",
        ),
        Row(
            "compile",
            "same paste, new question: shared prefix / prompt bytes (median)",
            statistics.median(shares),
            unit="",
            note=f"{len(shares)} pastes; kernel, workspace and every frame before the goal",
        ),
        Row(
            "compile",
            "second turn evidence tokens / first turn (one session)",
            second_ratio,
            unit="",
            goal=f"<= {SECOND_TURN_GOAL:.2f}",
            met=second_ratio <= SECOND_TURN_GOAL,
            note=f"{seconds:,} / {firsts:,} tokens over {len(pastes)} pastes; {over_goal} pastes above 5% alone",
        ),
    ]
    for row in rows:
        print(f"prompt cache: {row.metric}: {row.value:.3f} ({row.note})", file=sys.stderr, flush=True)
    return rows


def main() -> int:
    corpus = Path(os.environ.get("ICHOR_REALPASTES", CORPUS))
    emit_rows(measure(corpus))
    return 0


if __name__ == "__main__":
    sys.exit(main())

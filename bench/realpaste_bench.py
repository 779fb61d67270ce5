"""Real pastes: does the model see what answers the ask? (``python -m bench.realpaste_bench``)

Reads ``../shared/corpus/realpastes/`` (60 pastes with sidecars written before anything
ran: the ask, the kind each block should get, the facts a reader needs) and digests
each one exactly as ``ichor digest FILE --json`` does at the default budget. Printed
per paste and in total:

* goal — the goal is exactly the sidecar's ask (and, beside it, whether the ask is inside the goal);
* segments — how many segments the paste became (the goal's paragraph aside), against the sidecar's
  blocks; more is a paste shattered. Beside it the strict count: more segments than the paste's distinct
  kinds of evidence plus its prose blocks (two traces of one kind, two config files, count once there);
* kinds — blocks whose covering segment has the expected kind (``alt`` kinds accepted);
* facts — share of the sidecar's facts found in what the model is served (goal,
  anchors, every frame's content as served);
* escapes — an ANSI escape or a carriage return in anything served;
* tokens before (the whole paste) and served (frames' token costs), and whether the
  served total is within the budget; crashes.

Then, at each of ``--budgets`` (4,096, 1,500 and 600 tokens by default), the fact recall of the stomach
beside what a host could serve without it (``bench.baselines``: head+tail, BM25 over line chunks, MiniLM
chunk retrieval where the optional ``embed`` extra is installed, and their fusion), each handed the ask for
free, over the pastes above the budget and over all. ``--corpus DIR`` reads another folder in the same
sidecar format (a held-out set).

The figures are computed from the public bundle only; nothing here knows a case.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import Row, emit_rows  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus" / "realpastes"
BUDGET = 4096
COMPARED_BUDGETS = (4096, 1500, 600)
GOAL_ASKS = 59
GOAL_KINDS = 95
GOAL_FACTS = 0.97
GOAL_FACTS_OVER = 0.90
_TERMINAL_CONTROL = re.compile(r"\x1b|\r")


@dataclass
class CaseResult:
    name: str
    goal_ok: bool
    ask_in_goal: bool
    segments: int
    segments_allowed: int
    segments_strict: int
    kinds_ok: int
    kinds_total: int
    facts_found: int
    facts_total: int
    missing: list[str]
    escapes: bool
    tokens_before: int
    tokens_served: int
    over_budget: bool
    crashed: str | None = None

    @property
    def fact_share(self) -> float:
        return self.facts_found / self.facts_total if self.facts_total else 1.0


def _covering_kind(report: list[dict], position: int) -> str | None:
    """The kind of the segment whose span holds ``position`` (or the first that starts after it)."""
    after = None
    for entry in report:
        start, end = entry["span"]
        if start <= position < end:
            return entry["kind"]
        if start >= position and after is None:
            after = entry["kind"]
    return after


def _locate(text: str, starts_with: str) -> int:
    """Where a block starts in the received text; a sidecar prefix may differ in line endings."""
    position = text.find(starts_with)
    if position < 0:
        position = text.find(starts_with.strip()[:40])
    return position


def measure_case(paste: Path, budget: int) -> CaseResult:
    from organs.accounting import count_tokens
    from organs.stomach import IngestConfig, ingest_paste

    sidecar = json.loads(paste.with_suffix(".json").read_text(encoding="utf-8"))
    # The bytes as the bus carries them: no newline translation on the way in.
    text = paste.read_bytes().decode("utf-8")
    facts: list[str] = sidecar["facts"]
    blocks: list[dict] = sidecar["blocks"]
    try:
        bundle = ingest_paste(text, IngestConfig(budget_tokens=budget))
    except Exception as error:  # a crash is a figure here, not an exit
        return CaseResult(
            paste.stem, False, False, 0, len(blocks), _segments_strict(blocks), 0, len(blocks), 0, len(facts),
            list(facts),
            False, 0, 0, False,
            crashed="".join(traceback.format_exception_only(error)).strip(),
        )  # fmt: skip
    frames = bundle.provider.frames
    served_parts = [bundle.query.goal, *bundle.query.anchors, *(frame.content or "" for frame in frames)]
    served = "\n".join(served_parts)
    report = json.loads(json.dumps([_report_dict(entry) for entry in bundle.report]))
    kinds_ok = 0
    for block in blocks:
        position = _locate(text, block["starts_with"])
        kind = _covering_kind(report, position) if position >= 0 else None
        kinds_ok += kind in {block["kind"], *block.get("alt", [])}
    missing = [fact for fact in facts if fact not in served]
    tokens_served = sum(frame.token_cost for frame in frames)
    return CaseResult(
        name=paste.stem,
        goal_ok=bundle.query.goal == sidecar["ask"],
        ask_in_goal=sidecar["ask"] in bundle.query.goal,
        # The ask's own paragraph is the goal, which a sidecar does not list as a block.
        segments=sum(entry["outcome"] != "goal" for entry in report),
        segments_allowed=len(blocks),
        segments_strict=_segments_strict(blocks),
        kinds_ok=kinds_ok,
        kinds_total=len(blocks),
        facts_found=len(facts) - len(missing),
        facts_total=len(facts),
        missing=missing,
        escapes=bool(_TERMINAL_CONTROL.search(served)),
        tokens_before=count_tokens(text, bundle.encoding),
        tokens_served=tokens_served,
        over_budget=tokens_served > budget,
    )


def _segments_strict(blocks: list[dict]) -> int:
    """The most segments a paste may become by the strict count: one per kind of evidence it holds, one per prose
    block."""
    evidence = {block["kind"] for block in blocks if block["kind"] != "prose"}
    return len(evidence) + sum(block["kind"] == "prose" for block in blocks)


def _report_dict(entry: object) -> dict:
    import msgspec

    return msgspec.to_builtins(entry)  # type: ignore[no-any-return]


def verdict(met: bool) -> str:
    return "met" if met else "MISSED"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="real pastes: goal, kinds, facts served, escapes, budget")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--budget", type=int, default=BUDGET)
    parser.add_argument("--only", default="", help="a substring of the case names to run")
    parser.add_argument("--verbose", action="store_true", help="print each missing fact")
    parser.add_argument(
        "--budgets",
        default=",".join(map(str, COMPARED_BUDGETS)),
        help="budgets at which the stomach is compared with the baselines ('' to skip the comparison)",
    )
    args = parser.parse_args(argv)
    pastes = sorted(path for path in args.corpus.glob("*.txt") if args.only in path.stem)
    if not pastes:
        print(f"no pastes under {args.corpus}", file=sys.stderr)
        return 2
    started = time.monotonic()
    results = [measure_case(paste, args.budget) for paste in pastes]
    seconds = time.monotonic() - started

    print(f"{'case':<44} goal kinds facts  esc  before  served  segments")
    for result in results:
        flag = "CRASH " + (result.crashed or "") if result.crashed else ""
        print(
            f"{result.name[:44]:<44} {'ok' if result.goal_ok else 'NO':>4} {result.kinds_ok}/{result.kinds_total:<3}"
            f" {result.facts_found}/{result.facts_total:<3} {'ESC' if result.escapes else '-':>4}"
            f" {result.tokens_before:>7} {result.tokens_served:>6} {result.segments:>4}/{result.segments_allowed:<3}"
            f"{' SHATTERED' if result.segments > result.segments_allowed else ''}"
            f"{' OVER' if result.over_budget else ''} {flag}"
        )
        if args.verbose:
            for fact in result.missing:
                print(f"    missing: {fact!r}")

    over = [result for result in results if result.tokens_before > args.budget]
    under = [result for result in results if result.tokens_before <= args.budget]
    asks = sum(result.goal_ok for result in results)
    asks_inside = sum(result.ask_in_goal for result in results)
    shattered = sum(result.segments > result.segments_allowed for result in results)
    shattered_strict = sum(result.segments > result.segments_strict for result in results)
    kinds = sum(result.kinds_ok for result in results)
    kinds_total = sum(result.kinds_total for result in results)
    mean_facts = sum(result.fact_share for result in results) / len(results)
    mean_over = sum(result.fact_share for result in over) / len(over) if over else 1.0
    mean_under = sum(result.fact_share for result in under) / len(under) if under else 1.0
    escapes = sum(result.escapes for result in results)
    over_budget = sum(result.over_budget for result in results)
    crashes = sum(result.crashed is not None for result in results)
    full_set = len(results) == 60
    print()
    print(f"{len(results)} pastes in {seconds:.1f}s at a budget of {args.budget} tokens")
    print(f"goal exactly the ask: {asks}/{len(results)} (goal ≥ {GOAL_ASKS} of 60): {verdict(asks >= GOAL_ASKS)}")
    print(f"the ask inside the goal: {asks_inside}/{len(results)}")
    print(f"pastes shattered (more segments than the sidecar's blocks): {shattered} (goal 0): "
          f"{verdict(shattered == 0)}; by the strict count (kinds of evidence plus prose blocks): "
          f"{shattered_strict}")  # fmt: skip
    kinds_met = verdict(kinds >= GOAL_KINDS)
    print(f"blocks of the expected kind: {kinds} of {kinds_total} (goal ≥ {GOAL_KINDS}): {kinds_met}")
    print(f"fact recall mean {mean_facts:.3f} (goal ≥ {GOAL_FACTS}): {verdict(mean_facts >= GOAL_FACTS)}")
    print(
        f"fact recall over the budget {mean_over:.3f} over {len(over)} pastes (goal ≥ {GOAL_FACTS_OVER}): "
        f"{verdict(mean_over >= GOAL_FACTS_OVER)}; under it {mean_under:.3f} over {len(under)}"
    )
    print(f"pastes with an ANSI escape or CR served: {escapes} (goal 0): {verdict(escapes == 0)}")
    print(f"pastes served over the budget: {over_budget} (goal 0): {verdict(over_budget == 0)}")
    print(f"crashes: {crashes} (goal 0): {verdict(crashes == 0)}")
    if not full_set:
        print("(a subset was run: the goals are stated for all 60)")
    emit_rows(
        [
            Row("realpastes", "goal exactly the ask", asks, unit=f"/{len(results)}", goal=f"≥ {GOAL_ASKS}",
                met=asks >= GOAL_ASKS),
            Row("realpastes", "blocks of the expected kind", kinds, unit=f"/{kinds_total}", goal=f"≥ {GOAL_KINDS}",
                met=kinds >= GOAL_KINDS),
            Row("realpastes", "fact recall, mean", round(mean_facts, 3), unit="", goal=f"≥ {GOAL_FACTS}",
                met=mean_facts >= GOAL_FACTS),
            Row("realpastes", "fact recall, pastes over the budget", round(mean_over, 3), unit="",
                goal=f"≥ {GOAL_FACTS_OVER}", met=mean_over >= GOAL_FACTS_OVER),
            Row("realpastes", "pastes shattered", shattered, unit="", goal="0", met=shattered == 0),
            Row("realpastes", "pastes with escapes served", escapes, unit="", goal="0", met=escapes == 0),
            Row("realpastes", "pastes served over the budget", over_budget, unit="", goal="0", met=over_budget == 0),
            Row("realpastes", "crashes", crashes, unit="", goal="0", met=crashes == 0),
        ]
    )  # fmt: skip
    budgets = [int(part) for part in args.budgets.split(",") if part.strip()]
    if budgets:
        print()
        compare_baselines(pastes, budgets, {args.budget: results})
    return 1 if crashes else 0


def _facts_served(served: str, facts: list[str]) -> float:
    return sum(fact in served for fact in facts) / len(facts) if facts else 1.0


def compare_baselines(pastes: list[Path], budgets: list[int], measured: dict[int, list[CaseResult]]) -> None:
    """Fact recall of the stomach and of every baseline, per budget, over the pastes above it and over all."""
    from bench.baselines import Baselines
    from organs.accounting import count_tokens

    names = ("stomach", *Baselines.names())
    # Per method and budget, one (over the budget, share of facts served) per paste.
    recall: dict[str, dict[int, list[tuple[bool, float]]]] = {
        name: {budget: [] for budget in budgets} for name in names
    }
    for budget in budgets:
        results = measured.get(budget) or [measure_case(paste, budget) for paste in pastes]
        for result in results:
            recall["stomach"][budget].append((result.tokens_before > budget, result.fact_share))
    for paste in pastes:
        sidecar = json.loads(paste.with_suffix(".json").read_text(encoding="utf-8"))
        text = paste.read_bytes().decode("utf-8")
        baselines = Baselines(text, sidecar["ask"], count_tokens)
        for budget in budgets:
            for name in names[1:]:
                served = sidecar["ask"] + "\n" + baselines.served(name, budget)
                recall[name][budget].append((baselines.tokens > budget, _facts_served(served, sidecar["facts"])))
    header = "".join(f"{f'{budget} over / all':>22}" for budget in budgets)
    print(f"fact recall, the baselines handed the ask     {header}")
    for name in names:
        cells = ""
        for budget in budgets:
            over = [share for is_over, share in recall[name][budget] if is_over]
            total = [share for _, share in recall[name][budget]]
            over_mean = f"{sum(over) / len(over):.3f} ({len(over)})" if over else "- (0)"
            cells += f"{over_mean + ' / ' + f'{sum(total) / len(total):.3f}':>22}"
        print(f"{name:<46}{cells}")
    for budget in budgets:
        over_means = {
            name: sum(shares) / len(shares)
            for name in names
            if (shares := [share for is_over, share in recall[name][budget] if is_over])
        }
        if len(over_means) > 1:
            best = max((name for name in over_means if name != "stomach"), key=lambda name: over_means[name])
            margin = over_means["stomach"] - over_means[best]
            print(f"at {budget}: stomach - best baseline ({best}) over the budget: {margin:+.3f} (goal ≥ +0.05): "
                  f"{verdict(margin >= 0.05)}")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())

"""Tract throughput with one and two replicas per organ, and worker memory after 10,000 pastes.

    python -m bench.scaling_bench [--n 300] [--rss-pastes 10000]

* **replicas**: the tract (every paste at full tier, so the work per paste is
  the same in both runs) with one worker process per organ, then two per organ
  on the same durable consumers; each run on a fresh server.
* **memory**: one worker per organ, 10,000 *small* pastes (~0.6 KB, a few log
  lines, a short trace and the ask, instead of the ~4 KB paste, to keep the run
  near two minutes); VmRSS of every worker after the warm-up and after the last
  paste came out.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable

from bench.common import Processes, Row, emit_rows, log, rss_kib, small_paste
from bench.tract_bench import FULL_TIER_ENV, describe, run_variant


async def replicas(n: int, warmup: int) -> list[Row]:
    results = {}
    for count in (1, 2):
        started = time.monotonic()
        results[count] = await run_variant("tract-full", n=n, warmup=warmup, replicas=count, env=FULL_TIER_ENV)
        line = describe(results[count]).replace("tract-full", f"x{count} replica", 1)
        log(f"{line} ({time.monotonic() - started:.0f}s)")
        print(line, flush=True)
    one, two = results[1].burst, results[2].burst
    value = two.throughput / one.throughput if one.throughput else float("nan")
    missing = one.missing + two.missing
    return [
        Row(
            "scaling", "throughput 2 replicas / 1 replica per organ", value,
            note=f"{two.throughput:,.1f} vs {one.throughput:,.1f} pastes/s (full tier, N={n}"
            + (f", {missing} MISSING" if missing else "") + ")",
        )
    ]  # fmt: skip


async def memory(pastes: int, warmup: int) -> list[Row]:
    warm_rss: dict[str, int] = {}
    end_rss: dict[str, int] = {}

    def sample(into: dict[str, int]) -> Callable[[Processes], None]:
        def take(procs: Processes) -> None:
            into.update({name: rss_kib(pid) for name, pid in procs.named_pids().items()})

        return take

    started = time.monotonic()
    result = await run_variant(
        "tract-full",
        n=pastes,
        warmup=warmup,
        make_text=small_paste,
        env=FULL_TIER_ENV,
        timeout=600.0,
        on_warm=sample(warm_rss),
        on_burst_done=sample(end_rss),
    )
    line = describe(result).replace("tract-full", "rss run", 1)
    log(f"{line} ({time.monotonic() - started:.0f}s)")
    print(line, flush=True)
    rows = []
    for name in sorted(end_rss):
        organ = name.split("#")[0]
        growth = end_rss[name] - warm_rss.get(name, 0)
        rows.append(
            Row(
                "scaling", f"RSS {organ} worker after {result.burst.received:,} small pastes", end_rss[name] / 1024,
                unit="MiB", note=f"{growth / 1024:+.1f} MiB since warm-up ({warm_rss.get(name, 0) / 1024:.1f} MiB)",
            )
        )  # fmt: skip
    if result.burst.missing:
        rows.append(
            Row("scaling", "rss run outputs missing", float(result.burst.missing), unit="", goal="0", met=False)
        )
    return rows


async def run(args: argparse.Namespace) -> int:
    """Each part reports its rows as soon as it has them; a failed part is a row, not a lost table."""
    failed = 0
    parts = [("replicas", lambda: replicas(args.n, args.warmup))]
    if args.rss_pastes:
        parts.append(("memory", lambda: memory(args.rss_pastes, args.warmup)))
    for name, part in parts:
        try:
            emit_rows(await part())
        except Exception as error:  # reported as a row and on stderr
            failed += 1
            log(f"scaling {name} failed: {error!r}")
            message = " ".join(str(error).split())[:160]
            emit_rows([Row("scaling", f"{name} run", None, unit="", met=False, note=f"FAILED: {message}")])
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="replicas and worker memory")
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--rss-pastes", type=int, default=10_000, help="0 skips the memory run")
    args = parser.parse_args(argv)
    return 1 if asyncio.run(run(args)) else 0


if __name__ == "__main__":
    sys.exit(main())

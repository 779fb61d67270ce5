"""``python -m bench`` (``make bench``): every benchmark, then one table of ratios.

Each benchmark runs as its own process (fresh servers, no state shared between
them) and reports its rows; the table below is assembled from what they
measured in this run. ``bench/stomach_bench.py`` prints its own report, which
is included verbatim.

    python -m bench [--quick] [--only tract,law_floor,stomach,compile,scaling,realpaste,counting,hostile]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from bench.common import PYTHON, ROOT, Row, log, machine, parse_rows, render_table

BENCHES = ("tract", "law_floor", "stomach", "compile", "scaling", "realpaste", "redact", "counting", "hostile")
QUICK_ARGS = {
    "tract": ["--n", "200", "--paced", "50"],
    "law_floor": ["--n", "150", "--repeats", "2"],
    "scaling": ["--n", "150", "--rss-pastes", "1000"],
    "compile": ["--repeats", "5"],
    "counting": ["--repeats", "2", "--pastes", "50"],
    "hostile": ["--quick"],
}


def run_child(name: str, command: list[str], timeout: float) -> tuple[int | None, str, float]:
    """Run one benchmark; its stderr (progress) passes through, its stdout is returned."""
    started = time.monotonic()
    log(f"{name}: {' '.join(command)}")
    try:
        done = subprocess.run(
            [PYTHON, *command], cwd=ROOT, stdout=subprocess.PIPE, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as error:
        output = error.stdout if isinstance(error.stdout, str) else (error.stdout or b"").decode(errors="replace")
        return None, output, time.monotonic() - started
    return done.returncode, done.stdout, time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="run every benchmark and print one table of ratios")
    parser.add_argument("--quick", action="store_true", help="smaller runs, for checking the harness")
    parser.add_argument("--only", default=",".join(BENCHES))
    args = parser.parse_args(argv)
    chosen = [name for name in args.only.split(",") if name]
    rows: list[Row] = []
    details: list[str] = []
    failures = 0
    started = time.monotonic()
    for name in chosen:
        extra = QUICK_ARGS.get(name, []) if args.quick else []
        if name == "stomach":
            script = Path(ROOT) / "bench" / "stomach_bench.py"
            if not script.exists():
                details.append("## stomach\nbench/stomach_bench.py is missing: the stomach benchmark did not run.")
                rows.append(Row("stomach", "bench/stomach_bench.py", None, unit="", note="MISSING: not run"))
                continue
            code, output, seconds = run_child(name, [str(script)], timeout=900)
            missed = sum(1 for line in output.splitlines() if "MISSED" in line)
            met = sum(1 for line in output.splitlines() if line.rstrip().endswith(": met"))
            rows.extend(parse_rows(output))
            rows.append(
                Row(
                    "stomach", "bench/stomach_bench.py (report below)", None, unit="",
                    met=None if code is None else (code == 0 and missed == 0),
                    note=(f"exit {code}" if code is not None else "TIMED OUT")
                    + f"; its goals: {met} met, {missed} MISSED; {seconds:.0f}s",
                )
            )  # fmt: skip
            details.append("## stomach (bench/stomach_bench.py, verbatim)\n" + output.rstrip())
            failures += code != 0
            continue
        if name not in BENCHES:
            parser.error(f"unknown benchmark {name!r}; choose from {', '.join(BENCHES)}")
        code, output, seconds = run_child(name, ["-m", f"bench.{name}_bench", *extra], timeout=900)
        rows.extend(parse_rows(output))
        lines = [line for line in output.splitlines() if not line.startswith("BENCH-ROW ")]
        details.append(f"## {name} ({seconds:.0f}s)\n" + "\n".join(lines).rstrip())
        if code != 0:
            failures += 1
            status = "TIMED OUT" if code is None else f"FAILED (exit {code})"
            rows.append(Row(name, f"{name}_bench", None, unit="", met=False, note=f"{status}; see stderr above"))

    facts = machine()
    print()
    print(f"# Ichor organs benchmarks: {facts['date']}")
    print(f"machine: {facts['nproc']} CPUs, {facts['cpu']}, Python {facts['python']}")
    print(f"total {time.monotonic() - started:.0f}s; every ratio is measured side by side in this run\n")
    print(render_table(rows))
    missed = [row for row in rows if row.met is False]
    print(f"\n{len(missed)} goal(s) MISSED" + (": " + "; ".join(row.metric for row in missed) if missed else ""))
    print()
    print("\n\n".join(details))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

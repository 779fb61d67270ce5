"""The large-paste digester's peak memory per byte of the paste (#16: goal under 3x).

Each digest runs as the worker runs it: ``python -m organs.stomach.large`` reads
a ``LargeDigestRequest`` naming a paste file, once with the worker's defaults (a
paste this large is deferred) and once as the deferred follow-up digests it (full
tier: templates mined). A thread samples the digester's ``VmHWM`` and its counting
process's resident memory every few milliseconds. The multiple is the digester's
growth over a resting one (the same digest of a paste of a few lines: interpreter,
modules, tokenizer) per byte of the paste; both come from this run.

The pastes are generated logs of varied services: clocks, levels, hosts, HTTP
access lines, JSON lines, stack traces, and ids (hex sessions, trace ids) that
make about a quarter of the lines distinct after digits are flattened;
``--ids`` puts a request id on every line, a log where nearly every line is;
``--colour`` colours two lines in three's clock (ANSI escapes, as a terminal
shows them), so the paste's normal form is a second text; ``--newline`` ends the
paste in a newline, as a file's contents do.

    python -m bench.large_paste_memory_bench [--sizes 8,20,50] [--ids] [--colour] [--newline]
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import msgspec

from bench.common import PYTHON, ROOT, Row, emit_rows
from envelopes.ids import digest_text
from organs.stomach.core.ingest import IngestConfig
from organs.stomach.large import LargeDigestReply, LargeDigestRequest

GOAL = 3.0
RESTING_BYTES = 4096
_HOSTS = [f"node-{n:02d}.cluster.local" for n in range(40)]
_USERS = ("alice", "bob", "carol", "dave", "erin", "frank")
_CLASSES = ("org.apache.hadoop.hdfs.DataNode", "com.example.api.OrderService", "kafka.server.ReplicaManager")
_ROUTES = ("/api/v1/orders", "/api/v1/users/{}", "/healthz", "/api/v2/search?q={}", "/login")


def _record(rng: random.Random, n: int, ids: bool) -> list[str]:
    t = n * 37
    clock = f"2026-11-29T{t // 3_600_000 % 24:02d}:{t // 60_000 % 60:02d}:{t // 1000 % 60:02d}.{t % 1000:03d}Z"
    if ids:
        clock += f" [req-{rng.getrandbits(128):032x}]"
    kind = rng.random()
    if kind < 0.3:
        took = rng.randrange(2000)
        return [f"{clock} INFO [worker-{rng.randrange(17)}] job {n} stage {rng.randrange(5)} took {took} ms"]
    if kind < 0.45:
        route = rng.choice(_ROUTES).format(rng.randrange(100_000))
        status = rng.choice([200] * 20 + [301, 404, 404, 500, 503])
        return [f'10.{rng.randrange(256)}.{rng.randrange(256)}.1 - {rng.choice(_USERS)} "GET {route}" {status}']
    if kind < 0.6:
        block = f"blk_{rng.getrandbits(62)} of size {rng.randrange(1 << 26)}"
        return [f"{clock} DEBUG {rng.choice(_CLASSES)}: Received {block} from /{rng.choice(_HOSTS)}"]
    if kind < 0.7:
        session = f"{rng.getrandbits(64):016x}"
        return [f"{clock} INFO {rng.choice(_CLASSES)}: user {rng.choice(_USERS)} session {session} opened"]
    if kind < 0.78:
        return [f"{clock} WARN [pool-{rng.randrange(8)}] connection pool at {rng.randrange(70, 100)}%"]
    if kind < 0.85:
        trace = f"{rng.getrandbits(128):032x}"
        return [f'{{"ts":"{clock}","level":"info","msg":"request done","status":200,"trace":"{trace}"}}']
    if kind < 0.86:
        frames = [f"\tat com.example.Handler{rng.randrange(20)}.handle(Handler.java:{rng.randrange(900)})"] * 4
        return [f"{clock} ERROR {rng.choice(_CLASSES)}: request failed", "java.lang.IllegalStateException", *frames]
    task = f"{rng.getrandbits(40):x}"
    return [f"{clock} INFO scheduler: placed task {task} on {rng.choice(_HOSTS)} (cpu={rng.randrange(64)})"]


def log_paste(size: int, *, ids: bool, colour: bool = False, newline: bool = False, seed: int = 16) -> str:
    rng = random.Random(seed)
    lines: list[str] = []
    total = n = 0
    while total < size:
        for line in _record(rng, n, ids):
            if colour and len(lines) % 3:
                line = f"\x1b[32m{line[:24]}\x1b[0m{line[24:]}"
            lines.append(line)
            total += len(line) + 1
        n += 1
    return "\n".join(lines) + ("\n" if newline else "")


def _status_kib(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def digest_peaks(request: LargeDigestRequest) -> tuple[int, int, LargeDigestReply]:
    """The digester's peak (KiB), its counting process's, and its reply."""
    child = subprocess.Popen(
        [PYTHON, "-m", "organs.stomach.large"], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    peaks = [0, 0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peaks[0] = max(peaks[0], _status_kib(child.pid, "VmHWM:"))
            counting = sum(_status_kib(pid, "VmRSS:") for pid in _children(child.pid))
            peaks[1] = max(peaks[1], counting)
            time.sleep(0.005)

    sampler = threading.Thread(target=sample)
    sampler.start()
    out, _ = child.communicate(msgspec.msgpack.encode(request))
    done.set()
    sampler.join()
    reply = msgspec.msgpack.decode(out, type=LargeDigestReply)
    if reply.parts is None:
        raise SystemExit(f"the digester refused the paste: {reply.poison}")
    return peaks[0], peaks[1], reply


def configs(size: int) -> dict[str, IngestConfig]:
    """The worker's two digests of a large paste: first with its defaults, then the deferred follow-up."""
    first = IngestConfig()
    later = max(first.deferred_chars, size + 1)
    return {"first": first, "follow-up": dataclasses.replace(first, shallow_chars=later, deferred_chars=later)}


def measure(folder: Path, text: str, config: IngestConfig) -> tuple[int, int, str]:
    paste = folder / "paste"
    paste.write_bytes(text.encode())
    request = LargeDigestRequest(str(paste), str(folder / "redacted"), config, "Which jobs failed?", digest_text(text))
    digester, counting, reply = digest_peaks(request)
    assert reply.parts is not None
    return digester, counting, reply.parts.tier


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="8,20,50", help="paste sizes in MiB, comma-separated")
    parser.add_argument("--ids", action="store_true", help="a request id on every line")
    parser.add_argument("--colour", action="store_true", help="ANSI colour codes on two lines in three")
    parser.add_argument("--newline", action="store_true", help="the paste ends in a newline")
    parser.add_argument("--only", choices=("first", "follow-up"), help="only this one of the two digests")
    args = parser.parse_args(argv)
    shape = {"ids": args.ids, "colour": args.colour, "newline": args.newline}
    named = "".join(f", {name}" for name, chosen in shape.items() if chosen)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="ichor-memory-bench-") as name:
        folder = Path(name)
        small = log_paste(RESTING_BYTES, **shape)
        resting = {
            label: measure(folder, small, config)[0]
            for label, config in configs(len(small)).items()
            if args.only in (None, label)
        }
        print(f"resting digester: {', '.join(f'{label} {kib / 1024:.0f} MiB' for label, kib in resting.items())}")
        for mib in (float(size) for size in args.sizes.split(",")):
            text = log_paste(int(mib * 2**20), **shape)
            size = len(text.encode())
            for label, config in configs(len(text)).items():
                if label not in resting:
                    continue
                digester, counting, tier = measure(folder, text, config)
                multiple = (digester - resting[label]) * 1024 / size
                print(
                    f"{mib:4g} MiB {label:9s} ({tier}): digester peak {digester / 1024:4.0f} MiB, growth "
                    f"{multiple:.2f}x the paste; counting process {counting / 1024:.0f} MiB",
                    flush=True,
                )
                rows.append(
                    Row(
                        "large paste memory",
                        f"digester growth / paste, {mib:g} MiB log{named}, {label}",
                        multiple,
                        goal=f"< {GOAL}",
                        met=multiple < GOAL,
                        note=f"peak {digester / 1024:.0f} MiB, resting {resting[label] / 1024:.0f} MiB, "
                        f"counting process {counting / 1024:.0f} MiB",
                    )
                )
            del text
    emit_rows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

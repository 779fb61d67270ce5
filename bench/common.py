"""What every benchmark shares: the pastes, servers, worker processes, the load driver, the table.

Absolute times on a shared two-core machine are noise; every number a benchmark
prints as a result is a ratio of two measurements taken side by side in the same
run. Nothing in here hard-codes a result.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# --- pastes ---------------------------------------------------------------------

_SERVICES = ("cart", "checkout", "payments", "inventory", "search", "auth")


def _log_lines(n: int, count: int, base_order: int) -> list[str]:
    lines = []
    start_ms = (8 * 3600 + 14 * 60) * 1000 + (n * 7919) % 600_000
    for line in range(count):
        at_ms = start_ms + line * 2_713 + (n * 131 + line * 37) % 1000
        hours, rest = divmod(at_ms // 1000, 3600)
        stamp = f"2026-11-29T{hours % 24:02d}:{rest // 60:02d}:{rest % 60:02d}.{at_ms % 1000:03d}Z"
        order = base_order + line
        match line % 6:
            case 0:
                level, text = "INFO ", f"[http] GET /cart/{order % 9973} 200 in {9 + (n + line) % 7}ms"
            case 1:
                level, text = "INFO ", f"[http] POST /checkout 200 in {80 + (n * line) % 40}ms (order={order})"
            case 2:
                level, text = "WARN ", f"[pool] connection pool at {80 + line % 20}% ({40 + line % 10}/50)"
            case 3:
                level, text = "ERROR", f"[checkout] payment call failed: timeout after 5000ms (order={order})"
            case 4:
                level, text = "INFO ", f"[http] POST /checkout 502 in {5000 + line % 9}ms (order={order})"
            case _:
                level = "INFO "
                sku = f"SKU-{(order * 31) % 100000:05d}"
                text = f"[inventory] reserved {1 + line % 4} item(s) for order={order} sku={sku}"
        lines.append(f"{stamp} {level} {text}")
    return lines


def mixed_paste(n: int) -> str:
    """A realistic ~4 KB paste: a log, a Python trace, a table, a path and the ask.

    ``n`` varies order ids, timestamps and numbers, so every paste is distinct.
    """
    base_order = 100_000 + n * 97
    log = "\n".join(_log_lines(n, 34, base_order))
    trace = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "/srv/checkout/app/handlers.py", line 88, in post_checkout',
            "    receipt = await payments.charge(order)",
            '  File "/srv/checkout/app/payments.py", line 41, in charge',
            "    response = await self.client.post(self.url, json=body, timeout=5.0)",
            '  File "/srv/checkout/venv/lib/python3.11/site-packages/httpx/_client.py", line 1859, in post',
            '    return await self.request("POST", url, **kwargs)',
            '  File "/srv/checkout/venv/lib/python3.11/site-packages/httpx/_transports/default.py",'
            " line 372, in handle",
            "    raise mapped_exc(message) from exc",
            f"httpx.ReadTimeout: timed out (order={base_order + 3})",
        ]
    )
    rows = [
        "| service    | replicas | p50_ms | p99_ms | error_rate |",
        "|------------|----------|--------|--------|------------|",
    ]
    for index, service in enumerate(_SERVICES):
        p99 = 14 + (n * (index + 3)) % 90 if service != "checkout" else 5000 + n % 50
        rate = f"{((n + index * 7) % 400) / 10:.1f}%"
        rows.append(f"| {service:<10} | {2 + index % 3:<8} | {5 + index * 2:<6} | {p99:<6} | {rate:<10} |")
    table = "\n".join(rows)
    return (
        f"Our checkout service started failing after this morning's deploy (build {n}). Here is what I have.\n\n"
        f"{log}\n\n{trace}\n\n{table}\n\n./services/checkout/app/payments.py\n\n"
        f"Why does checkout time out against payments for order {base_order + 3} when payments itself "
        "reports no errors, and what should I change first?\n"
    )


def small_paste(n: int) -> str:
    """A ~0.6 KB paste (a few log lines, a short trace, the ask) for long runs."""
    base_order = 500_000 + n * 13
    log = "\n".join(_log_lines(n, 5, base_order))
    return (
        f"{log}\n\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/checkout/app/payments.py", line 41, in charge\n'
        "    response = await self.client.post(self.url, json=body, timeout=5.0)\n"
        f"httpx.ReadTimeout: timed out (order={base_order})\n\n"
        f"Why did order {base_order + 3} time out?\n"
    )


# --- machine -----------------------------------------------------------------------


def machine() -> dict[str, str]:
    model = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "nproc": str(os.cpu_count()),
        "cpu": model,
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


# --- servers and processes ------------------------------------------------------------


@contextlib.contextmanager
def embedded_server() -> Iterator[Any]:
    """A fresh nats-server with JetStream in a temporary directory, always stopped; its monitoring port
    (``server.monitor_port``) answers ``/varz``, whose byte counters say what the tract costs the server."""
    from organs.runtime.server import EmbeddedServer, free_port

    monitor_port = free_port()
    with tempfile.TemporaryDirectory(prefix="ichor-bench-") as data_dir:
        server: Any = EmbeddedServer(data_dir, extra_config=f"http_port: {monitor_port}")
        server.monitor_port = monitor_port
        try:
            server.start()
            yield server
        finally:
            server.stop()


def server_traffic(monitor_port: int) -> dict[str, int]:
    """The server's counters since it started: messages and bytes in and out (``/varz``)."""
    import json
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{monitor_port}/varz", timeout=5) as reply:
        varz = json.load(reply)
    return {key: int(varz[key]) for key in ("in_msgs", "out_msgs", "in_bytes", "out_bytes")}


class Processes:
    """Child processes of one benchmark; ``stop`` terminates, then kills what is left."""

    def __init__(self) -> None:
        self.children: list[tuple[str, subprocess.Popen[bytes], Any]] = []

    def spawn(self, name: str, args: Sequence[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        errors = tempfile.TemporaryFile()  # noqa: SIM115 - closed in stop()
        # For diagnosis only: BENCH_STDOUT_DIR keeps each child's stdout (the organs' JSON logs).
        stdout_dir = os.environ.get("BENCH_STDOUT_DIR")
        stdout: Any = subprocess.DEVNULL
        if stdout_dir:
            stdout = (Path(stdout_dir) / f"{name.replace('#', '-')}.log").open("wb")
        child = subprocess.Popen(
            [PYTHON, *args],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=errors,
        )
        if stdout is not subprocess.DEVNULL:
            stdout.close()
        self.children.append((name, child, errors))
        return child

    def pids(self, prefix: str = "") -> list[int]:
        return [child.pid for name, child, _ in self.children if name.startswith(prefix)]

    def named_pids(self) -> dict[str, int]:
        return {name: child.pid for name, child, _ in self.children}

    def check(self) -> None:
        for name, child, errors in self.children:
            if child.poll() is not None:
                errors.seek(0)
                tail = errors.read().decode(errors="replace")[-2000:]
                raise RuntimeError(f"{name} exited with {child.returncode}:\n{tail}")

    def stop(self, timeout: float = 10.0, sig: int = signal.SIGTERM) -> None:
        for _, child, _ in self.children:
            if child.poll() is None:
                child.send_signal(sig)
        deadline = time.monotonic() + timeout
        for _, child, errors in self.children:
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
            errors.close()
        self.children.clear()

    def __enter__(self) -> Processes:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


def rss_kib(pid: int) -> int:
    """VmRSS of a process in KiB (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads), 0 when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def descendants(pid: int) -> list[int]:
    """Every live process started, directly or not, by ``pid`` (a counting process, its fork server)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found: list[int] = []
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        children = [child for child, its_parent in parents.items() if its_parent == parent]
        found += children
        frontier += children
    return found


def process_tree_cpu_seconds() -> float:
    """CPU time of this process and every live process it started: work handed to a helper process counts."""
    return time.process_time() + sum(cpu_seconds(child) for child in descendants(os.getpid()))


# --- the load driver ----------------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    """One input: the key its output is matched by, where it goes, its bytes and headers."""

    key: str
    subject: str
    data: bytes
    headers: dict[str, str]


@dataclass
class PhaseResult:
    sent: int
    received: int
    seconds: float
    latencies: list[float]
    missing: int
    first_send: float = 0.0

    @property
    def throughput(self) -> float:
        return self.received / self.seconds if self.seconds > 0 else 0.0

    def percentile(self, p: float) -> float:
        return percentile(self.latencies, p)


def best_time(action: Callable[[], object], repeats: int) -> float:
    """The least wall time of ``repeats`` runs of ``action``: the run the machine's other load disturbed least."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - started)
    return best


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (``p`` in 0..100); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(p / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


KeyOf = Callable[[Any], "tuple[str, str] | None"]
"""Given a sink message: ``(key, category)``, or None for a message that is not a primary output."""


@dataclass
class Sink:
    """Core subscriptions on the last subject(s); the first primary arrival per key counts."""

    key_of: KeyOf
    arrivals: dict[str, float] = field(default_factory=dict)
    categories: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0
    others: int = 0
    _expected: set[str] = field(default_factory=set)
    _remaining: int = 0
    _done: asyncio.Event = field(default_factory=asyncio.Event)

    async def on_message(self, msg: Any) -> None:
        now = time.time()
        found = self.key_of(msg)
        if found is None:
            self.others += 1
            return
        key, category = found
        if key in self.arrivals:
            self.duplicates += 1
            return
        self.arrivals[key] = now
        self.categories[category] = self.categories.get(category, 0) + 1
        if key in self._expected:
            self._remaining -= 1
            if self._remaining == 0:
                self._done.set()

    def expect(self, keys: Sequence[str]) -> None:
        self._expected = set(keys)
        self._remaining = len(self._expected - self.arrivals.keys())
        self._done = asyncio.Event()
        if self._remaining == 0:
            self._done.set()

    async def wait(self, timeout: float) -> None:
        with contextlib.suppress(TimeoutError, asyncio.TimeoutError):
            await asyncio.wait_for(self._done.wait(), timeout=timeout)


async def subscribe_sink(nc: Any, subjects: Sequence[str], key_of: KeyOf) -> Sink:
    sink = Sink(key_of)
    for subject in subjects:
        await nc.subscribe(subject, cb=sink.on_message, pending_msgs_limit=1_000_000, pending_bytes_limit=2**31)
    await nc.flush()
    return sink


def _result(sink: Sink, sent_at: dict[str, float]) -> PhaseResult:
    latencies = [sink.arrivals[key] - sent for key, sent in sent_at.items() if key in sink.arrivals]
    arrived = [sink.arrivals[key] for key in sent_at if key in sink.arrivals]
    first_send = min(sent_at.values()) if sent_at else 0.0
    seconds = (max(arrived) - first_send) if arrived else 0.0
    return PhaseResult(
        sent=len(sent_at),
        received=len(arrived),
        seconds=seconds,
        latencies=latencies,
        missing=len(sent_at) - len(arrived),
        first_send=first_send,
    )


async def burst(js: Any, sink: Sink, items: Sequence[Item], *, timeout: float, window: int = 512) -> PhaseResult:
    """Publish every item pipelined (publish_async), then wait for every output."""
    sink.expect([item.key for item in items])
    sent_at: dict[str, float] = {}
    pending: list[Any] = []
    for item in items:
        sent_at[item.key] = time.time()
        pending.append(await js.publish_async(item.subject, item.data, headers=item.headers))
        if len(pending) >= window:
            await asyncio.gather(*pending)
            pending.clear()
    await asyncio.gather(*pending)
    await sink.wait(timeout)
    return _result(sink, sent_at)


async def paced(js: Any, sink: Sink, items: Sequence[Item], *, rate: float, timeout: float) -> PhaseResult:
    """Publish at a fixed rate (open loop), then wait for every output."""
    sink.expect([item.key for item in items])
    sent_at: dict[str, float] = {}
    pending: list[Any] = []
    loop = asyncio.get_running_loop()
    start = loop.time()
    for index, item in enumerate(items):
        delay = start + index / rate - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        sent_at[item.key] = time.time()
        pending.append(await js.publish_async(item.subject, item.data, headers=item.headers))
    await asyncio.gather(*pending)
    await sink.wait(timeout)
    return _result(sink, sent_at)


async def wait_bound(js: Any, stream: str, durables: dict[str, int], *, timeout: float = 60.0) -> None:
    """Wait until each durable exists with at least the given number of waiting pull requests."""
    from nats.js.errors import NotFoundError

    deadline = time.monotonic() + timeout
    while True:
        ready = True
        for durable, waiting in durables.items():
            try:
                info = await js.consumer_info(stream, durable)
            except NotFoundError:
                ready = False
                break
            if (info.num_waiting or 0) < waiting:
                ready = False
                break
        if ready:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"consumers {sorted(durables)} of {stream} not bound after {timeout}s")
        await asyncio.sleep(0.1)


async def wait_stream(js: Any, stream: str, *, timeout: float = 60.0) -> None:
    from nats.js.errors import NotFoundError

    deadline = time.monotonic() + timeout
    while True:
        try:
            await js.stream_info(stream)
            return
        except NotFoundError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"stream {stream} not created after {timeout}s") from None
            await asyncio.sleep(0.1)


# --- the table ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One line of the result table: a measured ratio (or value) against its goal."""

    section: str
    metric: str
    value: float | None
    unit: str = "x"
    goal: str = ""
    met: bool | None = None
    note: str = ""

    def cells(self) -> list[str]:
        if self.value is None or self.value != self.value:
            shown = "n/a"
        elif self.unit == "x":
            shown = f"{self.value:.2f}x"
        elif self.unit == "MiB":
            shown = f"{self.value:.1f} MiB"
        else:
            shown = f"{self.value:,.1f} {self.unit}".strip()
        status = "" if self.met is None else ("ok" if self.met else "MISSED")
        return [self.section, self.metric, shown, self.goal, status, self.note]


def render_table(rows: Sequence[Row]) -> str:
    header = ["bench", "metric", "measured", "goal", "", "context (same run)"]
    body = [row.cells() for row in rows]
    widths = [max(len(line[column]) for line in [header, *body]) for column in range(len(header))]
    lines = [
        "| " + " | ".join(cell.ljust(width) for cell, width in zip(header, widths, strict=True)) + " |",
        "|" + "|".join("-" * (width + 2) for width in widths) + "|",
    ]
    lines.extend(
        "| " + " | ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)) + " |" for line in body
    )
    return "\n".join(lines)


ROW_PREFIX = "BENCH-ROW "


def emit_rows(rows: Sequence[Row]) -> None:
    """Print rows as JSON lines so ``python -m bench`` can gather them from a child process."""
    import json

    for row in rows:
        print(ROW_PREFIX + json.dumps(row.__dict__), flush=True)


def parse_rows(output: str) -> list[Row]:
    import json

    return [Row(**json.loads(line[len(ROW_PREFIX) :])) for line in output.splitlines() if line.startswith(ROW_PREFIX)]


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def hop_parser(description: str) -> argparse.ArgumentParser:
    """The arguments every pass-through hop takes, whatever it is written with."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--nats", required=True)
    parser.add_argument("--stream", required=True)
    parser.add_argument("--durable", required=True)
    parser.add_argument("--inbound", required=True)
    parser.add_argument("--outbound", required=True)
    parser.add_argument("--tag", required=True, help="appended to the input's Nats-Msg-Id")
    parser.add_argument("--batch", type=int, default=32)
    return parser


# The header that carries an input's key through the hops, so the sink matches outputs to inputs.
HOP_KEY_HEADER = "Bench-Key"


def hop_headers(received: Mapping[str, str] | None, tag: str) -> dict[str, str]:
    """A pass-through hop's output headers: the input's ``Nats-Msg-Id`` with ``tag`` appended, and its key."""
    headers = received or {}
    return {"Nats-Msg-Id": f"{headers.get('Nats-Msg-Id', '')}/{tag}", HOP_KEY_HEADER: headers.get(HOP_KEY_HEADER, "")}


def stop_on_signals() -> asyncio.Event:
    """An event set when the process is asked to stop (SIGTERM or SIGINT)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    return stop


def record_or_check(what: str, digests: Callable[[], dict[str, str]], argv: list[str] | None = None) -> int:
    """``record FILE`` writes the digests of ``what`` (case name to blake3); ``check FILE`` compares them byte for
    byte with a recording and exits 1 when any case differs (each named)."""
    parser = argparse.ArgumentParser(description=f"record or check {what}, byte for byte")
    parser.add_argument("action", choices=("record", "check"))
    parser.add_argument("file", type=Path)
    args = parser.parse_args(argv)
    started = time.monotonic()
    found = digests()
    seconds = time.monotonic() - started
    if not found:
        print("no cases under the corpora", file=sys.stderr)
        return 2
    if args.action == "record":
        args.file.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"recorded {len(found)} digests in {seconds:.1f}s to {args.file}")
        return 0
    recorded: dict[str, str] = json.loads(args.file.read_text(encoding="utf-8"))
    differ = sorted(name for name in recorded.keys() | found.keys() if recorded.get(name) != found.get(name))
    for name in differ:
        print(f"DIFFERS {name}: recorded {recorded.get(name)} now {found.get(name)}")
    verdict = "identical" if not differ else f"{len(differ)} DIFFER"
    print(f"{what}: {len(found) - len(differ)}/{len(found)} cases identical ({verdict}) in {seconds:.1f}s")
    return 0 if not differ else 1

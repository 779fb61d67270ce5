"""The house rules, read from the source with the standard library's ``ast``.

* The import graph has no loops, and no module imports one of a floor above it:
  envelopes ← foundation (errors, settings, anatomy, redaction, text views) ← runtime ← organs ← operations ← cli.
* A pure core reads no environment and no wall clock: its callers pass configuration and time in; it does no
  I/O either (no bus, no process, no socket, no ``os._exit``). The stomach's core is pure by folder:
  everything under ``organs/stomach/core/``; its I/O shell (worker, stores, the large-paste digester) is beside it.
* No function in ``organs/`` or ``envelopes/`` is longer than 80 lines.
* No module starts a thread pool when it is imported.
* The stomach's core holds no module-level number but in its tuning (``organs/stomach/core/tuning.py``, handed in):
  a few named format facts and bounds that are not tuning choices aside.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("envelopes", "organs")

# Lower floors first; a module may import its own floor and the ones below it.
FLOORS: tuple[tuple[str, ...], ...] = (
    ("envelopes",),
    # Redaction is a room of its own that the runtime needs too: logs and dead-letter reasons are scrubbed with
    # it; the text views it reads a large text through are a leaf beside it.
    ("organs.errors", "organs.settings", "organs.anatomy", "organs.redaction", "organs.text_views"),
    ("organs.runtime",),
    ("organs",),
    ("organs.operations",),
    ("organs.cli",),
)

# Pure cores: synchronous, deterministic functions of their input, config and the time they are given.
PURE_CORES = (
    "envelopes.codec",
    "envelopes.subjects",
    "envelopes.types",
    "organs.absorption.core",
    "organs.accounting",
    "organs.anatomy",
    "organs.border.compiler",
    "organs.border.decide",
    "organs.border.guard",
    "organs.border.prompt",
    "organs.errors",
    "organs.redaction",
    "organs.secretion",
    "organs.stomach.core",
)
CLOCK_AND_ENVIRONMENT = {
    ("os", "environ"),
    ("os", "getenv"),
    ("os", "environb"),
    ("time", "time"),
    ("time", "time_ns"),
    ("time", "localtime"),
    ("time", "gmtime"),
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("datetime", "today"),
    ("date", "today"),
}
CLOCK_FUNCTIONS = {"utc_now"}
POOLS = {"ThreadPoolExecutor", "ProcessPoolExecutor", "Pool", "ThreadPool"}
# None left: the stomach's full count shares accounting's thread, made on first use.
POOLS_AT_IMPORT_LEFT: set[str] = set()


def _modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = path
    return modules


MODULES = _modules()


def _imports(name: str) -> set[str]:
    """The package modules ``name`` imports, at any depth of its body."""
    found: set[str] = set()
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(MODULES[name].read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {module for module in found if module in MODULES and module != name}


GRAPH = {name: _imports(name) for name in MODULES}


def _floor(name: str) -> int:
    best, floor = -1, -1
    for index, prefixes in enumerate(FLOORS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > best:
                best, floor = len(prefix), index
    assert floor >= 0, f"{name} is on no floor"
    return floor


def test_no_module_imports_one_on_a_floor_above_it() -> None:
    upward = [
        f"{name} (floor {_floor(name)}) imports {target} (floor {_floor(target)})"
        for name, targets in GRAPH.items()
        for target in targets
        if _floor(target) > _floor(name)
    ]
    assert upward == []


def test_the_import_graph_has_no_loops() -> None:
    # A package's __init__ re-exporting its own modules is not a loop between rooms.
    graph = {
        name: {target for target in targets if not (name == target.rpartition(".")[0] and target in MODULES)}
        for name, targets in GRAPH.items()
    }
    state: dict[str, int] = {}
    loops: list[list[str]] = []

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                loops.append([*path[path.index(target) :], target] if target in path else [name, target])
            elif target not in state:
                visit(target, [*path, target])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert loops == []


def _pure(name: str) -> bool:
    return any(name == core or name.startswith(core + ".") for core in PURE_CORES)


def _impure_reads(tree: ast.AST) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if (node.value.id, node.attr) in CLOCK_AND_ENVIRONMENT:
                yield f"line {node.lineno}: {node.value.id}.{node.attr}"
        elif isinstance(node, ast.Name) and node.id in CLOCK_FUNCTIONS:
            yield f"line {node.lineno}: {node.id}"
        elif isinstance(node, ast.ImportFrom) and node.module in {"os", "time", "datetime"}:
            for alias in node.names:
                if (node.module, alias.name) in CLOCK_AND_ENVIRONMENT or alias.name in {"environ", "getenv"}:
                    yield f"line {node.lineno}: from {node.module} import {alias.name}"


def test_the_pure_cores_are_the_modules_the_list_names() -> None:
    pure = sorted(name for name in MODULES if _pure(name))
    assert "organs.border.decide" in pure and "organs.stomach.core.ingest" in pure
    assert "organs.stomach.core.distill.log.mining" in pure
    assert "organs.stomach.worker" not in pure and "organs.stomach.large" not in pure
    assert "organs.border.worker" not in pure


@pytest.mark.parametrize("name", sorted(name for name in MODULES if _pure(name)))
def test_a_pure_core_reads_no_environment_and_no_clock(name: str) -> None:
    assert list(_impure_reads(ast.parse(MODULES[name].read_text()))) == []


# What a pure core never imports or calls: the bus, processes, sockets, a hard exit.
IO_MODULES = ("nats", "subprocess", "socket", "socketserver", "multiprocessing")
IO_CALLS = {("os", "_exit"), ("os", "fork"), ("os", "kill")}


def _io(tree: ast.AST) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            modules = [node.module or ""]
            if node.module == "os":
                modules += [f"os.{alias.name}" for alias in node.names if ("os", alias.name) in IO_CALLS]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            modules = [f"{node.value.id}.{node.attr}"] if (node.value.id, node.attr) in IO_CALLS else []
        else:
            continue
        for module in modules:
            if module.split(".")[0] in IO_MODULES or tuple(module.split(".")) in IO_CALLS:
                yield f"line {node.lineno}: {module}"


@pytest.mark.parametrize("name", sorted(name for name in MODULES if _pure(name)))
def test_a_pure_core_does_no_io(name: str) -> None:
    assert list(_io(ast.parse(MODULES[name].read_text()))) == []


def test_the_io_check_finds_the_bus_a_process_a_socket_and_an_exit() -> None:
    source = "import nats\nimport subprocess\nfrom socket import socket\nimport os\nos._exit(1)\nfrom os import _exit\n"
    assert len(list(_io(ast.parse(source)))) == 5


def test_the_stomach_core_is_pure_by_folder() -> None:
    core = ROOT / "organs" / "stomach" / "core"
    under = {name for name, path in MODULES.items() if core in path.parents}
    assert under and all(_pure(name) for name in under)
    assert not _pure("organs.stomach.large") and not _pure("organs.stomach.frames_store")


def test_the_check_finds_a_clock_and_an_environment_read() -> None:
    source = (
        "import os, time\nfrom envelopes.ids import utc_now\nA = os.environ.get('X')\nB = time.time()\nC = utc_now()\n"
    )
    assert len(list(_impure_reads(ast.parse(source)))) == 3


def _pools_at_import(tree: ast.Module) -> list[int]:
    """Lines of module-level statements (not inside a def or class) that build a pool."""
    lines = []
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for node in ast.walk(statement):
            if isinstance(node, ast.Call):
                called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if called in POOLS:
                    lines.append(node.lineno)
    return lines


def test_no_module_starts_a_thread_pool_when_imported() -> None:
    found = {name for name, path in MODULES.items() if _pools_at_import(ast.parse(path.read_text()))}
    assert found <= POOLS_AT_IMPORT_LEFT, sorted(found - POOLS_AT_IMPORT_LEFT)


def test_the_runtime_loads_no_stomach_module() -> None:
    # A fresh interpreter, so what this test session already imported cannot hide an import.
    probe = (
        "import sys, organs.runtime.logs, organs.runtime.worker, organs.runtime.dead_letters\n"
        "print(sorted(name for name in sys.modules if name.startswith('organs.stomach')))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert loaded.stdout.strip() == "[]"
    # The probe can see a stomach module when one is loaded.
    seen = probe.replace("organs.runtime.dead_letters", "organs.stomach.core.redact")
    loaded = subprocess.run([sys.executable, "-c", seen], capture_output=True, text=True, check=True, cwd=ROOT)
    assert "organs.stomach.core.redact" in loaded.stdout


MAX_FUNCTION_LINES = 80


def _long_functions(tree: ast.AST, limit: int) -> list[str]:
    return [
        f"{node.name} (line {node.lineno}, {node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > limit
    ]


def test_no_function_is_longer_than_eighty_lines() -> None:
    long = {
        name: found
        for name, path in MODULES.items()
        if (found := _long_functions(ast.parse(path.read_text()), MAX_FUNCTION_LINES))
    }
    assert long == {}


def test_the_length_check_finds_a_long_function() -> None:
    source = "def long():\n" + "    x = 1\n" * MAX_FUNCTION_LINES + "\ndef short():\n    return 1\n"
    assert [entry.split(" ")[0] for entry in _long_functions(ast.parse(source), MAX_FUNCTION_LINES)] == ["long"]


# The stomach's tuning numbers live in StomachTuning and its sub-configs (class bodies of tuning.py), handed to the
# code that reads them. A module-level number elsewhere in the core would be a tuning choice out of the tuning's reach,
# unless it is one of these: what a format says, names of slots, or bounds the output does not depend on.
CORE_NUMBERS_NOT_TUNING = {
    "organs.stomach.core.blocks.split": {"_STRIP_CHARS": "a work size: the span found is the same for any size"},
    "organs.stomach.core.compare": {
        "_SCALE": "what thousand, million, billion and k mean",
        "_TIME_UNITS": "what a time unit is in milliseconds",
        "_SIZE_UNITS": "what a size unit is in bytes",
        "_KEY_UNITS": "what the unit a key names is in milliseconds",
    },
    "organs.stomach.core.distill.log.pieces": {
        "SLOT_ALERTS": "the name of a piece's slot",
        "SLOT_ASKED": "the name of a piece's slot",
        "SLOT_TAIL": "the name of a piece's slot",
        "SLOT_CRASH": "the name of a piece's slot",
    },
    "organs.stomach.core.distill.log.excerpt": {
        "_COMPARED_TIE": "a tie-break past every weight, not a weight",
    }
    | {
        name: "the name of a kept line's place in the excerpt's order"
        for name in (
            "_ALERT_LINE",
            "_SILENCE",
            "_TAIL",
            "_HEAD",
            "_WEAK_ASK",
            "_NEAR_ASK",
            "_RARE",
            "_REST",
            "_QUOTE",
            "_SAID_AGAIN",
        )
    },
    "organs.stomach.core.distill.log.masking": {"_VALUE_WORDS_KEPT": "a memory bound: values past it are told apart"},
    "organs.stomach.core.distill.log.mining": {"_KEYS_KEPT": "a memory bound: keys past it are read back exactly"},
    "organs.stomach.core.distill.log.structured": {"_NUMERIC_LEVELS": "the numeric levels of bunyan and pino"},
    "organs.stomach.core.distill.trace": {"_ALL": "a plan's 'every frame', more than any trace holds"},
    "organs.stomach.core.shapes.signals": {
        "LINE_PREFIX": "the examined prefix of every line shape, shared by every reader of one",
        "_LEVEL_WINDOW": "where a level token names the line's level, part of level_of's shape",
    },
    "organs.stomach.core.shapes.timestamps": {"_YEAR_PIVOT": "the two-digit-year convention of syslog-style stamps"},
}


def _module_numbers(tree: ast.Module) -> list[str]:
    """Names bound at module level to a value holding a number other than 0 and 1 (a count, a share, a bound)."""
    found = []
    for statement in tree.body:
        if isinstance(statement, ast.Assign):
            targets, value = statement.targets, statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets, value = [statement.target], statement.value
        else:
            continue
        if any(
            isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value not in (0, 1)
            for node in ast.walk(value)
        ):
            found.extend(ast.unparse(target) for target in targets)
    return found


def test_the_stomach_core_keeps_its_numbers_in_its_tuning() -> None:
    core = ROOT / "organs" / "stomach" / "core"
    numbers = {
        name: sorted(set(found) - set(CORE_NUMBERS_NOT_TUNING.get(name, {})))
        for name, path in MODULES.items()
        if core in path.parents and (found := _module_numbers(ast.parse(path.read_text())))
    }
    assert {name: found for name, found in numbers.items() if found} == {}
    # Every exception still names a number that is there: a stale entry would let a new one in under its name.
    listed = {(module, name) for module, names in CORE_NUMBERS_NOT_TUNING.items() for name in names}
    present = {
        (name, found)
        for name, path in MODULES.items()
        if core in path.parents
        for found in _module_numbers(ast.parse(path.read_text()))
    }
    assert listed <= present, sorted(listed - present)


def test_the_number_check_finds_a_count_a_share_and_a_bound() -> None:
    source = "A = 3\nB: float = 0.25\nC = 1 << 16\nD = 'x' * 1\nE = -1\nF = (0, 1)\nclass T:\n    G = 5\n"
    assert _module_numbers(ast.parse(source)) == ["A", "B", "C"]

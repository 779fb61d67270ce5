"""Node.js for the tests that speak the contract from another language: npm packages installed once, cached.

Each install lives under ``.pytest_cache/npm/<key>``, the key a digest of its ``package.json``, so a
repeat run costs a directory check and an edited manifest gets a fresh install. A lock file keeps two
pytest-xdist workers from installing the same folder at once. Where ``node`` is absent the test is
skipped and says why; an install that fails is a failure, not a skip.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["CACHE_ROOT", "node_or_skip", "npm_installed"]

CACHE_ROOT = Path(__file__).resolve().parents[2] / ".pytest_cache" / "npm"
_INSTALL_TIMEOUT_S = 300


def node_or_skip() -> str:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are not installed here: the cross-language contract tests need Node.js 18+")
    return node


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def npm_installed(name: str, manifest: dict[str, Any]) -> Path:
    """A folder holding ``package.json`` = ``manifest`` and its ``node_modules``, installed on first use."""
    node_or_skip()
    text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    folder = CACHE_ROOT / f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"
    done = folder / ".installed"
    with _locked(CACHE_ROOT / f"{folder.name}.lock"):
        if done.exists():
            return folder
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        (folder / "package.json").write_text(text)
        result = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=_INSTALL_TIMEOUT_S,
        )
        if result.returncode != 0:
            raise AssertionError(f"npm install in {folder} failed ({result.returncode}):\n{result.stderr[-4000:]}")
        done.touch()
    return folder

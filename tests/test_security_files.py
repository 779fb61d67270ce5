"""Every file `ichor security init` writes that holds a secret is readable by its owner alone."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

from organs.operations.security import generate_security
from organs.runtime.server import EmbeddedServer

ROOT = Path(__file__).resolve().parents[1]


def secrets_in(security: Path) -> list[str]:
    """The passwords and signing seeds a security directory holds."""
    passwords = list(json.loads((security / "credentials.json").read_text()).values())
    return passwords + [seed.read_text().strip() for seed in (security / "seeds").iterdir()]


def exposed_secret_files(root: Path, secrets: list[str]) -> tuple[list[Path], list[Path]]:
    """(files under ``root`` holding a secret, those of them anyone but the owner may read or write)."""
    holding, exposed = [], []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or "jetstream" in path.parts:
            continue
        text = path.read_bytes().decode("utf-8", "replace")
        if any(secret in text for secret in secrets):
            holding.append(path)
            if stat.S_IMODE(path.stat().st_mode) & 0o077:
                exposed.append(path)
    return holding, exposed


def test_security_init_writes_every_secret_owner_only(tmp_path: Path) -> None:
    directory = tmp_path / "security"
    subprocess.run(
        [sys.executable, "-m", "organs.cli", "security", "init", str(directory)], check=True, cwd=ROOT, timeout=60
    )
    holding, exposed = exposed_secret_files(directory, secrets_in(directory))
    names = {path.name for path in holding}
    assert {"credentials.json", "auth.conf", "stomach.seed", "stomach.env", "admin.env"} <= names
    assert exposed == []
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700


def test_a_file_written_wide_before_is_narrowed_on_the_next_write(tmp_path: Path) -> None:
    directory = generate_security(tmp_path / "security")
    (directory / "auth.conf").chmod(0o644)
    generate_security(directory)
    assert exposed_secret_files(directory, secrets_in(directory))[1] == []


def test_the_embedded_server_configuration_with_passwords_is_owner_only(tmp_path: Path) -> None:
    directory = generate_security(tmp_path / "security")
    server = EmbeddedServer(tmp_path / "nats", extra_config=(directory / "auth.conf").read_text())
    config = server._write_config()
    holding, exposed = exposed_secret_files(tmp_path / "nats", secrets_in(directory))
    assert holding == [config] and exposed == []

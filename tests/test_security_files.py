"""Identities without stored secrets: the server configuration holds public keys only, and every
file `ichor security init` writes that holds a secret (a seed) is readable by its owner alone."""

from __future__ import annotations

import re
import stat
import subprocess
import sys
from pathlib import Path

from envelopes.subjects import Subjects
from organs.operations.security import generate_security, permissions
from organs.runtime.server import EmbeddedServer
from organs.signing import public_key_of

ROOT = Path(__file__).resolve().parents[1]
# An nkey seed of any kind (user, account, operator...), as nkeys encodes one.
SEED_PATTERN = re.compile(r"S[A-Z][A-Z2-7]{56}")


def secrets_in(security: Path) -> list[str]:
    """The seeds a security directory holds: the only secrets it has."""
    return [seed.read_text().strip() for seed in (security / "seeds").iterdir()]


def exposed_secret_files(root: Path, secrets: list[str]) -> tuple[list[Path], list[Path]]:
    """(files under ``root`` holding a secret, those of them anyone but the owner may read or write)."""
    holding, exposed = [], []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or "jetstream" in path.parts:
            continue
        text = path.read_bytes().decode("utf-8", "replace")
        if any(secret in text for secret in secrets) or SEED_PATTERN.search(text):
            holding.append(path)
            if stat.S_IMODE(path.stat().st_mode) & 0o077:
                exposed.append(path)
    return holding, exposed


def assert_no_stored_secret(config: str) -> None:
    """A server configuration with no password and no seed: public keys only."""
    assert "password" not in config.lower()
    assert SEED_PATTERN.search(config) is None


def test_security_init_writes_every_secret_owner_only(tmp_path: Path) -> None:
    directory = tmp_path / "security"
    subprocess.run(
        [sys.executable, "-m", "organs.cli", "security", "init", str(directory)], check=True, cwd=ROOT, timeout=60
    )
    holding, exposed = exposed_secret_files(directory, secrets_in(directory))
    users = set(permissions(Subjects()))
    # The seeds are the only secrets: one per user, in its own file; the env files only say where it is.
    assert {path.name for path in holding} == {f"{user}.seed" for user in users}
    assert exposed == []
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    for name in ("auth.conf", "server.conf"):
        assert_no_stored_secret((directory / name).read_text())
    auth = (directory / "auth.conf").read_text()
    assert sorted(re.findall(r'nkey: "(U[A-Z2-7]{55})"', auth)) == sorted(
        public_key_of((directory / "seeds" / f"{user}.seed").read_text().strip()) for user in users
    )


def test_a_file_written_wide_before_is_narrowed_on_the_next_write(tmp_path: Path) -> None:
    directory = generate_security(tmp_path / "security")
    (directory / "seeds" / "admin.seed").chmod(0o644)
    (directory / "auth.conf").chmod(0o644)
    generate_security(directory)
    assert exposed_secret_files(directory, secrets_in(directory))[1] == []
    assert stat.S_IMODE((directory / "auth.conf").stat().st_mode) == 0o600


def test_the_embedded_server_configuration_holds_no_secret(tmp_path: Path) -> None:
    directory = generate_security(tmp_path / "security")
    server = EmbeddedServer(tmp_path / "nats", extra_config=(directory / "auth.conf").read_text())
    config = server._write_config()
    assert exposed_secret_files(tmp_path / "nats", secrets_in(directory))[0] == []
    assert_no_stored_secret(config.read_text())
    assert stat.S_IMODE(config.stat().st_mode) == 0o600

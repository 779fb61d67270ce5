"""compose.yaml cannot run here (no Docker engine): check it is valid Compose and runs the right commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from organs.anatomy import ORGAN_NAMES
from organs.cli import _parser

ROOT = Path(__file__).resolve().parent.parent


def test_compose_runs_one_worker_per_organ_against_nats() -> None:
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    services = compose["services"]
    assert services["nats"]["image"].startswith("nats:")
    # JetStream is in the server.conf `ichor security init` writes (the default services' test below).
    assert "--config" in services["nats"]["command"]
    assert any(volume.endswith(":/data") for volume in services["nats"]["volumes"])
    for organ in ORGAN_NAMES:
        service = services[organ]
        assert service["command"] == ["worker", organ]
        assert service["build"] == "."
        assert service["environment"]["ICHOR_NATS_URL"] == "nats://nats:4222"
        # The command the image runs must be one the CLI accepts.
        args = _parser().parse_args(service["command"])
        assert args.organ == organ


def test_the_cluster_profile_runs_three_routed_nodes_and_replicated_organs() -> None:
    services = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]
    nodes = [services[f"nats-{n}"] for n in (1, 2, 3)]
    for node in nodes:
        assert node["profiles"] == ["cluster"]
        assert "--cluster_name" in node["command"]
        routes = node["command"][node["command"].index("--routes") + 1]
        assert routes.count("nats-") == 3
    names = {node["command"][node["command"].index("--name") + 1] for node in nodes}
    assert len(names) == 3, "every node has its own name"
    for organ in ORGAN_NAMES:
        service = services[f"{organ}-c"]
        assert service["command"] == ["worker", organ]
        assert service["environment"]["ICHOR_REPLICAS"] == "3"
        assert service["environment"]["ICHOR_NATS_URL"].count("nats://") == 3


def test_the_cluster_profile_is_as_secure_as_the_default() -> None:
    services = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]
    for n in (1, 2, 3):
        node = services[f"nats-{n}"]
        # JetStream and the users come from the config security-init writes, with the default's permissions.
        assert node["command"][:2] == ["--config", "/etc/ichor/security/server.conf"]
        assert "ichor-security:/etc/ichor/security:ro" in node["volumes"]
        assert node["depends_on"]["security-init"]["condition"] == "service_completed_successfully"
        assert "ports" not in node, "the routes and clients stay inside the compose network"
    assert services["provision-c"]["environment"]["ICHOR_NATS_USER"] == "admin"
    for organ in ORGAN_NAMES:
        environment = services[f"{organ}-c"]["environment"]
        assert environment["ICHOR_NATS_USER"] == organ
        assert environment["ICHOR_NATS_NKEY_FILE"] == environment["ICHOR_SIGNING_SEED_FILE"]
        assert environment["ICHOR_NATS_NKEY_FILE"].endswith(f"/{organ}.seed")


def test_the_default_services_run_the_secure_tract_with_credentials_made_by_a_one_shot_init(tmp_path: Path) -> None:
    import subprocess
    import sys

    services = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]
    init = services["security-init"]
    assert init["command"][:2] == ["security", "init"] and "profiles" not in init
    volume = init["command"][2]
    result = subprocess.run(
        [sys.executable, "-m", "organs.cli", *init["command"][:2], str(tmp_path / "security")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    made = tmp_path / "security"
    server_conf = services["nats"]["command"][services["nats"]["command"].index("--config") + 1]
    assert "jetstream" in (made / Path(server_conf).relative_to(volume)).read_text()
    assert services["nats"]["depends_on"]["security-init"]["condition"] == "service_completed_successfully"
    # Loopback on the Docker host, and no open server among the services that always start.
    assert services["nats"]["ports"] == ["127.0.0.1:4222:4222"]
    always = {name: service for name, service in services.items() if "profiles" not in service}
    assert not [name for name, service in always.items() if "--jetstream" in service.get("command", [])]
    provisioner = services["provision"]
    assert provisioner["command"] == ["provision"] and provisioner["environment"]["ICHOR_NATS_USER"] == "admin"
    for organ in ORGAN_NAMES:
        service = services[organ]
        assert service["depends_on"]["provision"]["condition"] == "service_completed_successfully"
        environment = service["environment"]
        assert environment["ICHOR_NATS_USER"] == organ and environment["ICHOR_PROVISION"] == "0"
        assert environment["ICHOR_SIGNING_SEED_FILE"] == environment["ICHOR_NATS_NKEY_FILE"]
        for key in ("ICHOR_NATS_NKEY_FILE", "ICHOR_TRUSTED_KEYS_FILE"):
            assert (made / Path(environment[key]).relative_to(volume)).exists(), key
        assert all(mount.endswith(":ro") for mount in service["volumes"])


def test_the_open_mode_is_a_profile_named_for_what_it_is_on_its_own_port() -> None:
    services = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]
    insecure = {name for name, service in services.items() if service.get("profiles") == ["insecure"]}
    assert insecure == {"nats-insecure", *(f"{organ}-insecure" for organ in ORGAN_NAMES)}
    assert services["nats-insecure"]["ports"] == ["127.0.0.1:4223:4222"]


def test_dockerfile_installs_the_ichor_command() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["ichor"]' in dockerfile
    assert "pip install" in dockerfile


def test_ci_calls_the_readme_test_command() -> None:
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make run" in readme


def test_every_organ_service_is_health_checked_on_its_metrics_port() -> None:
    from organs.settings import Settings

    services = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]
    nats_check = services["nats"]["healthcheck"]["test"]
    assert nats_check[0] == "CMD" and "8222/healthz" in nats_check[-1]
    assert "8222" in services["nats"]["command"], "the check asks the server's monitoring port"
    for organ in ORGAN_NAMES:
        for name in (organ, f"{organ}-c", f"{organ}-insecure"):
            service = services[name]
            # The seed files are in the containers' volume, not on this machine.
            environment = {k: v for k, v in service.get("environment", {}).items() if not k.endswith("_FILE")}
            # The settings the organ reads accept what compose gives it.
            settings = Settings.from_environ({key: str(value) for key, value in environment.items()})
            assert settings.metrics_port is not None and settings.metrics_host == "0.0.0.0", name
            check = service["healthcheck"]["test"]
            assert check[:3] == ["CMD", "python", "-c"], name
            assert f"127.0.0.1:{settings.metrics_port}/readyz" in check[3], name
            compile(check[3], name, "exec")
    assert services["provision"]["depends_on"]["nats"]["condition"] == "service_healthy"
    assert services["stomach"]["depends_on"]["provision"]["condition"] == "service_completed_successfully"


def _compose_spec_schema() -> dict[str, Any]:
    # The Compose Specification's JSON Schema as check-jsonschema vendors it (a test dependency).
    from importlib.resources import files

    schema: dict[str, Any] = json.loads(
        files("check_jsonschema.builtin_schemas.vendor").joinpath("compose-spec.json").read_text()
    )
    return schema


def test_compose_is_valid_by_the_compose_specification_schema() -> None:
    import jsonschema

    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    validator = jsonschema.Draft202012Validator(_compose_spec_schema())
    assert [f"{list(error.absolute_path)}: {error.message}" for error in validator.iter_errors(compose)] == []
    # The schema's own check: a service key it does not know is refused.
    broken = {**compose, "services": {**compose["services"], "nats": {**compose["services"]["nats"], "helthcheck": {}}}}
    assert not validator.is_valid(broken)


def test_compose_has_no_top_level_name_and_names_its_project_in_dot_env() -> None:
    # Compose v1 (Debian's docker-compose) refuses a top-level name; every Compose reads .env.
    assert "name" not in yaml.safe_load((ROOT / "compose.yaml").read_text())
    assert "COMPOSE_PROJECT_NAME=ichor" in (ROOT / ".env").read_text().splitlines()


def test_every_service_has_a_healthcheck_or_is_a_job_others_wait_to_complete() -> None:
    services = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]
    awaited = {
        name
        for service in services.values()
        if isinstance(service.get("depends_on"), dict)
        for name, condition in service["depends_on"].items()
        if condition.get("condition") == "service_completed_successfully"
    }
    for name, service in services.items():
        check = service.get("healthcheck")
        assert check is not None, f"{name} has no healthcheck"
        if check.get("disable"):
            assert name in awaited, f"{name} disables its healthcheck but no service waits for it to complete"
            continue
        assert check["test"][0] in ("CMD", "CMD-SHELL"), name
        if any("8222/healthz" in part for part in check["test"]):
            assert "8222" in service["command"], f"{name}'s check asks a monitoring port it does not open"


def test_compose_v1_accepts_the_file_where_it_is_installed(tmp_path: Path) -> None:
    import shutil
    import subprocess

    import pytest

    compose_v1 = shutil.which("docker-compose")
    if compose_v1 is None:
        pytest.skip("docker-compose (Compose v1, Debian's package) is not installed; the schema test still runs")
    for name in ("compose.yaml", ".env"):
        shutil.copy(ROOT / name, tmp_path / name)
    # The env files `ichor security init` writes; their content does not matter to the check.
    (tmp_path / "security" / "env").mkdir(parents=True)
    for user in ("admin", *ORGAN_NAMES):
        (tmp_path / "security" / "env" / f"{user}.env").touch()
    result = subprocess.run([compose_v1, "config", "-q"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr

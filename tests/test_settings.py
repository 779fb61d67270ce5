"""Every ``ICHOR_*`` variable is read once, typed and checked; a bad value is one line on stderr and exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from organs.anatomy import ORGAN_NAMES
from organs.errors import ConfigError
from organs.settings import Settings, variable_of

# A value each variable refuses. Free text has none: any string is a password, an actor or instructions.
BAD_VALUES = {
    "ICHOR_NATS_URL": "http://127.0.0.1:4222/path",
    "ICHOR_PREFIX": "ichor.*",
    "ICHOR_REPLICAS": "x",
    "ICHOR_DUPLICATE_WINDOW_S": "30",
    "ICHOR_MAX_AGE_S": "0",
    "ICHOR_ACK_WAIT_S": "soon",
    "ICHOR_MAX_DELIVER": "1",
    "ICHOR_INSTANCE": "two words",
    "ICHOR_NATS_USER": "two words",
    "ICHOR_PROVISION": "maybe",
    "ICHOR_NATS_SERVER": "/nonexistent/nats-server",
    "ICHOR_BUDGET_TOKENS": "lots",
    "ICHOR_SHALLOW_CHARS": "0",
    "ICHOR_DEFERRED_CHARS": "-5",
    "ICHOR_SHALLOW_BACKLOG": "-1",
    "ICHOR_DEFERRED_BACKLOG": "many",
    "ICHOR_MAX_BLOCKS": "1.5",
    "ICHOR_LARGE_PASTE_BYTES": "2MB",
    "ICHOR_MAX_PASTE_BYTES": "0",
    "ICHOR_ENCODING": "no_such_encoding",
    "ICHOR_REDACT": "emails,shoe_sizes",
    "ICHOR_BORDER_ALLOW_EXTERNAL": "maybe",
    "ICHOR_BORDER_RATE": "abc",
    "ICHOR_BORDER_RATE_WINDOW_S": "0",
    "ICHOR_BORDER_SENDER_RATE": "0",
    "ICHOR_NATS_NKEY_FILE": "/nonexistent/user.seed",
    "ICHOR_LIVENESS_FILE": "/nonexistent/liveness/stomach",
    "ICHOR_BORDER_BUDGET_TOKENS": "1.5",
    "ICHOR_BORDER_SECRET_IN_GOAL": "allow",
    "ICHOR_SIGNING_SEED_FILE": "/nonexistent/organ.seed",
    "ICHOR_SIGNING_SEED": "not-a-seed",
    "ICHOR_TRUSTED_KEYS_FILE": "/nonexistent/keys.json",
    "ICHOR_LOG_LEVEL": "loud",
    "ICHOR_LOG_FORMAT": "xml",
    "ICHOR_FRAME_TOOLS": "get_frame,rm_rf",
    "ICHOR_SESSION_TTL_S": "0",
    "ICHOR_FAULT_KILL_BEFORE_ACK": "maybe",
    "ICHOR_TRACT_MAX_BYTES": "-1",
    "ICHOR_DLQ_MAX_BYTES": "1GB",
    "ICHOR_DLQ_MAX_AGE_S": "forever",
    "ICHOR_FRAMES_MAX_BYTES": "2.5",
    "ICHOR_RAW_MAX_BYTES": "lots",
    "ICHOR_INDEX_MAX_BYTES": "-64",
    "ICHOR_UPLOADS_MAX_BYTES": "half",
    "ICHOR_UPLOADS_SENDER_MAX_BYTES": "-1",
    "ICHOR_STORE_MAX_AGE_S": "-1",
    "ICHOR_METRICS_PORT": "70000",
    "ICHOR_METRICS_HOST": "two words",
}
FREE_TEXT = {
    "ICHOR_NATS_PASSWORD",
    "ICHOR_KERNEL_INSTRUCTIONS",
    "ICHOR_WORKSPACE_INSTRUCTIONS",
    "ICHOR_ACTOR",
    "ICHOR_DATA",
    "ICHOR_FAULT_KILL_ON",
}
# Nothing listens here: a worker that wrongly accepted its settings would wait on it, and time out.
DEAD_URL = "nats://127.0.0.1:9"


def test_the_walk_covers_every_setting() -> None:
    variables = {variable_of(name) for name in Settings.__struct_fields__}
    assert set(BAD_VALUES) | FREE_TEXT == variables
    assert not set(BAD_VALUES) & FREE_TEXT


def test_unset_and_empty_variables_give_the_defaults() -> None:
    assert Settings.from_environ({}) == Settings()
    assert Settings.from_environ({variable: "" for variable in BAD_VALUES}) == Settings()


def test_values_are_converted_to_their_types() -> None:
    settings = Settings.from_environ(
        {
            "ICHOR_REPLICAS": "3",
            "ICHOR_PROVISION": "off",
            "ICHOR_BORDER_RATE_WINDOW_S": "2.5",
            "ICHOR_LOG_LEVEL": "DEBUG",
            "ICHOR_NATS_URL": "nats://a:4222,nats://b:4222",
        }
    )
    assert (settings.replicas, settings.provision, settings.border_rate_window_s) == (3, False, 2.5)
    assert settings.log_level == "debug"


def test_a_refusal_names_the_variable_the_value_and_what_is_allowed() -> None:
    with pytest.raises(ConfigError) as refused:
        Settings.from_environ({"ICHOR_REPLICAS": "9"})
    assert str(refused.value) == "ICHOR_REPLICAS='9' is not allowed: an integer >= 1 and <= 5"


def test_an_ack_wait_whose_redeliveries_outlast_the_duplicate_window_is_refused() -> None:
    assert Settings.from_environ({}).redelivery_backoff_s() == (3.0, 6.0, 12.0, 24.0, 30.0)
    with pytest.raises(ConfigError) as refused:
        Settings.from_environ({"ICHOR_ACK_WAIT_S": "40"})
    assert str(refused.value) == (
        "ICHOR_ACK_WAIT_S=40 with ICHOR_MAX_DELIVER=6 is not allowed: its redeliveries span 200 s, "
        "which must stay below ICHOR_DUPLICATE_WINDOW_S=120"
    )
    # A longer window makes room for the same ack wait.
    assert Settings.from_environ({"ICHOR_ACK_WAIT_S": "40", "ICHOR_DUPLICATE_WINDOW_S": "600"}).ack_wait_s == 40


def _run(args: list[str], variable: str, value: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    environment = {key: item for key, item in os.environ.items() if not key.startswith("ICHOR_")}
    return subprocess.run(
        [sys.executable, "-m", "organs.cli", *args],
        env={**environment, variable: value},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _assert_one_line_and_exit_2(result: subprocess.CompletedProcess[str], variable: str) -> None:
    lines = result.stderr.splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert variable in lines[0] and "is not allowed" in lines[0]


@pytest.mark.slow
@pytest.mark.parametrize("variable", sorted(BAD_VALUES))
def test_a_bad_variable_stops_ichor_worker(variable: str, tmp_path: Path) -> None:
    organ = ORGAN_NAMES[sorted(BAD_VALUES).index(variable) % len(ORGAN_NAMES)]
    result = _run(["worker", organ, "--nats", DEAD_URL], variable, BAD_VALUES[variable], tmp_path)
    _assert_one_line_and_exit_2(result, variable)


@pytest.mark.slow
@pytest.mark.parametrize("variable", sorted(BAD_VALUES))
def test_a_bad_variable_stops_ichor_up(variable: str, tmp_path: Path) -> None:
    result = _run(["up", "--port", "0", "--data", str(tmp_path / "data")], variable, BAD_VALUES[variable], tmp_path)
    _assert_one_line_and_exit_2(result, variable)
    assert not (tmp_path / "data").exists(), "no server starts on a bad setting"


def test_the_log_level_flag_is_read_before_the_command() -> None:
    from organs.cli import _parser

    args = _parser().parse_args(["--log-level", "DEBUG", "worker", "border"])
    assert (args.log_level, args.command, args.organ) == ("debug", "worker", "border")
    assert _parser().parse_args(["schema"]).log_level is None


def test_the_large_paste_threshold_cannot_exceed_the_maximum() -> None:
    with pytest.raises(
        ConfigError, match="ICHOR_LARGE_PASTE_BYTES=300 is not allowed: at most ICHOR_MAX_PASTE_BYTES=200"
    ):
        Settings.from_environ({"ICHOR_LARGE_PASTE_BYTES": "300", "ICHOR_MAX_PASTE_BYTES": "200"})

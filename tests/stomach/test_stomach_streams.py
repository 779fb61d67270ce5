"""A stream that blank lines do not end: a log's records, a CI job's lines, a config file's sections stay one
segment (``blocks.structures.join_streams``, ``blocks.segments``), the user's words apart."""

from __future__ import annotations

from organs.stomach import ingest_paste

_RECORDS = [
    "2024-05-01 10:00:01 INFO pool started size=4\n2024-05-01 10:00:02 INFO connected to broker",
    "2024-05-01 10:01:02 WARN heartbeat missed\nThe broker did not answer in time and the session will close.",
    "2024-05-01 10:01:05 ERROR worker 3 exited code=137\n2024-05-01 10:01:06 INFO restarting worker 3",
]


def _kinds(paste: str) -> list[tuple[str, str]]:
    return [(entry.kind, entry.outcome) for entry in ingest_paste(paste).report]


def test_a_log_with_blank_lines_between_its_records_is_one_segment() -> None:
    paste = "Why does worker 3 restart?\n\n" + "\n\n".join(_RECORDS)
    assert _kinds(paste) == [("prose", "goal"), ("log", "frame")]


def test_the_users_words_after_a_log_stay_apart_from_it() -> None:
    paste = "\n\n".join(_RECORDS) + "\n\nI restarted the broker twice already. Why does worker 3 restart?"
    assert _kinds(paste) == [("log", "frame"), ("prose", "goal")]


def test_the_users_words_that_quote_a_line_of_the_log_are_not_joined_to_it() -> None:
    quoted = "After the restart I also got this single line again and again:\n2024-05-01 10:02:00 ERROR worker 3 gone"
    paste = "\n\n".join([*_RECORDS, quoted]) + "\n\nWhy does worker 3 restart?"
    report = ingest_paste(paste).report
    assert report[0].kind == "log"
    assert report[0].span[1] < paste.index("After the restart")


def test_a_record_body_set_apart_by_a_blank_line_goes_on_with_the_records_around_it() -> None:
    body = "[previous exception] [object] (RuntimeException(code: 0): socket closed)\n[stacktrace]\n#0 {main}"
    records = [
        '[2024-05-01 10:00:01] local.ERROR: queue worker failed {"exception":"[object] (RuntimeException)"}',
        body,
        "[2024-05-01 10:00:09] local.INFO: queue worker restarted",
    ]
    paste = "\n\n".join(records) + "\n\nWhat made the queue worker fail?"
    assert _kinds(paste) == [("log", "frame"), ("prose", "goal")]


def test_a_ci_job_whose_lines_carry_a_runners_control_prefix_is_one_segment_with_the_advice_a_tool_printed() -> None:
    def stamped(lines: list[str], at: int) -> str:
        return "\n".join(f"\x1b_bk;t={at + index}\x07{line}" for index, line in enumerate(lines))

    paste = "\n\n".join(
        [
            "Why did this step fail?",
            stamped(["~~~ Preparing working directory", "$ git checkout -f 72cd6c0"], 1000),
            stamped(["You are in 'detached HEAD' state. You can look around and make experimental changes."], 2000),
            stamped(
                ["HEAD is now at 72cd6c0 Merge pull request #315", "$ make test", "user command error: exit 1"], 3000
            ),
        ]
    )
    assert [entry.kind for entry in ingest_paste(paste).report] == ["prose", "log"]


def test_a_config_file_cut_at_its_blank_lines_is_one_code_segment() -> None:
    config = (
        "[Unit]\nDescription=queue worker\nAfter=network.target\n\n"
        "[Service]\nExecStart=/usr/bin/worker --pool 4\nRestart=always\nLimitNOFILE=1048576\n\n"
        "[Install]\nWantedBy=multi-user.target"
    )
    paste = f"The unit file of our worker:\n\n{config}\n\nWhy does systemd not restart it after a crash?"
    assert _kinds(paste) == [("prose", "frame"), ("code", "frame"), ("prose", "goal")]


def _runner_report(failures: int) -> str:
    """A test runner's report as it prints it: a heading, its message indented, a code excerpt, a frame, each set
    apart by blank lines."""
    parts = []
    for number in range(failures):
        parts += [
            f"  ● suite › case {number}",
            "    expect(received).toBe(expected)",
            f"    Expected: {number}\n    Received: {number + 1}",
            f"      {10 + number} | test('case {number}', () => {{\n"
            f"    > {11 + number} |   expect(f()).toBe({number});",
            f"      at Object.toBe (__tests__/case.test.js:{11 + number}:17)",
        ]
    return "\n\n".join(parts)


def test_a_run_of_many_blocks_none_the_users_words_is_one_segment() -> None:
    paste = f"Our CI printed this:\n\n{_runner_report(3)}\n\nWhy does case 1 fail?"
    kinds = _kinds(paste)
    assert kinds == [("prose", "frame"), ("log", "frame"), ("prose", "goal")]


def test_a_lone_path_sets_apart_the_files_after_it() -> None:
    first = 'version = 2\n\n[grpc]\naddress = "/run/containerd.sock"\n\n[metrics]\naddress = "127.0.0.1:1338"'
    second = (
        "[Unit]\nDescription=runtime\n\n[Service]\nExecStart=/usr/bin/containerd\n\n"
        "[Install]\nWantedBy=multi-user.target"
    )
    paste = (
        f"Two files from the node:\n\n/etc/a/config.toml\n\n{first}\n\n/etc/b/unit.service\n\n{second}\n\n"
        "Which one sets the metrics address?"
    )
    kinds = [kind for kind, outcome in _kinds(paste)]
    assert kinds == ["prose", "path_ref", "code", "path_ref", "code", "prose"]


def test_a_run_broken_by_the_users_words_is_not_joined_across_them() -> None:
    first, second = _runner_report(2), _runner_report(2)
    paste = f"{first}\n\nThen I reran it with the cache cleared and got the same thing again:\n\n{second}\n\nWhy?"
    report = ingest_paste(paste).report
    assert [entry.kind for entry in report][1] == "prose"
    assert report[0].span[1] < paste.index("Then I reran")


def test_a_shell_prompt_joins_the_output_a_blank_line_sets_apart_from_it() -> None:
    output = "Event:\n  EventData:\n    LogonType: 5\n    TargetUserName: SYSTEM\n  System:\n    EventID: 4624"
    paste = f"I searched the log:\n\n$ chainsaw search 4624 security.evtx\n\n{output}\n\nWho logged on?"
    report = ingest_paste(paste).report
    assert len(report) == 3
    assert report[1].span == (paste.index("$ chainsaw"), paste.index("\n\nWho logged on?"))


def test_a_shell_prompt_does_not_join_the_users_words_after_it() -> None:
    paste = "$ make test\n\nThen it printed nothing at all and hung for ten minutes before I killed it.\n\nWhy?"
    report = ingest_paste(paste).report
    assert report[0].span == (0, len("$ make test"))

"""The log distiller: alerts, records, fields, fitting and the ask (small logs written for the tests)."""

from __future__ import annotations

import pytest

from organs.accounting import DEFAULT_ENCODING, count_tokens
from organs.stomach.asked import AskTerms
from organs.stomach.distill.log import distill_log
from organs.stomach.signals import is_alert


@pytest.mark.parametrize(
    ("line", "alert"),
    [
        ("[ERROR] Failed to execute goal on project shop", True),
        ("[INFO] shop ........................ FAILURE [ 3.2 s]", True),
        ("BUG: unable to handle page fault for address", True),
        ("panic: assignment to entry in nil map", True),
        ('10.1.2.3 - - [01/Feb/2024:10:00:00 +0000] "GET /a HTTP/1.1" 404 12', True),
        ('10.1.2.3 - - [01/Feb/2024:10:00:00 +0000] "GET /a HTTP/1.1" 200 12', False),
        ("make: *** [all] exit status 2", True),
        ("process finished with exit status 0", False),
        ("=== 3 failed, 12 passed in 0.40s ===", True),
        ("=== 0 failed, 12 passed in 0.40s ===", False),
        ("XFAIL tests/test_a.py::test_known", False),
        ("java.lang.IllegalStateException: closed", True),
        ("the error budget is fine", False),
    ],
)
def test_what_a_reader_looks_for_is_an_alert(line: str, alert: bool) -> None:
    assert is_alert(line) is alert


def _access_log(ok: int, missing: list[int]) -> str:
    rows = []
    for index in range(ok):
        rows.append(
            f"10.0.{index % 7}.{index % 250} - - [03/Mar/2024:10:{index % 60:02d}:00 +0000] "
            f'"GET /shop/item/{1000 + index} HTTP/1.1" 200 {5000 + index * 3} "-" "curl/8.{index % 5}"'
        )
    for position, item in enumerate(missing):
        rows.insert(
            40 * (position + 1),
            f"10.9.9.{position} - - [03/Mar/2024:11:00:0{position % 10} +0000] "
            f'"GET /shop/item/{item} HTTP/1.1" 404 153 "-" "curl/8.1"',
        )
    return "\n".join(rows)


def test_a_status_code_splits_the_template_and_the_alerts_are_counted_by_kind() -> None:
    digest = distill_log(_access_log(400, [7, 8, 9]), 600, DEFAULT_ENCODING)
    head = digest.rendering.split("\n", 1)[0]
    assert "3 alerts (3 HTTP 404)" in head
    template_lines = [line for line in digest.rendering.split("\n") if line.startswith("\u00d7")]
    assert any('" 404 153' in line and line.startswith("\u00d73 ") for line in template_lines)
    assert any('" 200 ' in line for line in template_lines)
    assert digest.alerts >= 1


def test_bracketed_levels_and_failure_words_are_counted() -> None:
    log = "\n".join(
        [
            "[INFO] Scanning for projects...",
            "[INFO] Building shop 1.0",
            *[f"[INFO] Compiling module {index}" for index in range(30)],
            "[INFO] shop ........................ FAILURE [ 3.2 s]",
            "[ERROR] Failed to execute goal org.example:plugin:1.2:run on project shop",
        ]
    )
    digest = distill_log(log, 200, DEFAULT_ENCODING)
    assert "2 alerts (1 error, 1 failure)" in digest.rendering.split("\n", 1)[0]
    assert "[ERROR] Failed to execute goal" in digest.rendering
    assert count_tokens(digest.rendering, DEFAULT_ENCODING) <= 200


def _service_log() -> str:
    rows = [f"2024-02-01 09:00:{k:02d} INFO worker {k % 4} processed batch {1000 + k} in {k * 3} ms" for k in range(40)]
    rows[12] = "2024-02-01 09:00:12 ERROR worker 0 lost connection to db-primary:5432 (Connection refused)"
    rows[20] = "2024-02-01 09:00:20 INFO cache warmed for tenant acme-eu in 120 ms"
    rows.append("2024-02-01 09:00:41 INFO shutdown complete: 41 batches done")
    return "\n".join(rows)


def test_a_log_that_fits_its_target_is_served_whole() -> None:
    log = _service_log()
    full = count_tokens(log, DEFAULT_ENCODING)
    digest = distill_log(log, full, DEFAULT_ENCODING)
    assert digest.rendering == log and digest.tokens == full
    assert digest.alerts >= 1


def test_a_log_just_over_its_target_is_an_excerpt_that_keeps_alerts_the_ask_and_the_last_lines() -> None:
    log = _service_log()
    full = count_tokens(log, DEFAULT_ENCODING)
    target = int(full * 0.8)
    digest = distill_log(log, target, DEFAULT_ENCODING, ask=AskTerms.of("why is tenant acme-eu slow?"))
    rendering = digest.rendering
    assert digest.tokens is not None and digest.tokens <= target
    assert count_tokens(rendering, DEFAULT_ENCODING) == digest.tokens
    assert "lost connection to db-primary:5432 (Connection refused) (alert)" in rendering
    assert "cache warmed for tenant acme-eu in 120 ms (matches ask)" in rendering
    assert rendering.endswith("INFO shutdown complete: 41 batches done")
    # What was left out is counted where it was left out.
    elided = sum(int(line.split()[1].strip("[")) for line in rendering.split("\n") if line.startswith("… ["))
    kept = len(rendering.split("\n")) - 1 - sum(1 for line in rendering.split("\n") if line.startswith("… ["))
    assert elided > 0 and elided + kept == len(log.split("\n"))


def test_a_record_keeps_its_trace_when_few_lines_carry_a_clock() -> None:
    records = []
    for index in range(6):
        records.append(f"[2024-03-0{index + 1} 10:00:00] app.ERROR: Undefined index: user_{index}")
        records.append("Stack trace:")
        records.extend(f"#{frame} /srv/app/src/Handler{frame}.php({10 + frame}): run()" for frame in range(8))
    digest = distill_log("\n".join(records), 400, DEFAULT_ENCODING)
    head = digest.rendering.split("\n", 1)[0]
    assert "6 records" in head and "1 template" in head and "6 alerts (6 error)" in head
    assert "      Stack trace:" in digest.rendering

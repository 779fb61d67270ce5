"""The log distiller: alerts, records, fields, fitting and the ask (small logs written for the tests)."""

from __future__ import annotations

import pytest

from organs.accounting import DEFAULT_ENCODING, count_tokens
from organs.stomach.core.asked import AskTerms
from organs.stomach.core.compare import Comparison
from organs.stomach.core.distill.log import FILL_HEADING, LogDistiller, distill_log
from organs.stomach.core.distill.log.crash import crash_of
from organs.stomach.core.distill.log.display import ALERT_MARK, ASK_MARK, clip, telling_continuation
from organs.stomach.core.distill.log.excerpt import _ALERT_HEAD as EXCERPT_ALERT_HEAD
from organs.stomach.core.distill.log.excerpt import _ASK as EXCERPT_ASK
from organs.stomach.core.distill.log.excerpt import _ranks as excerpt_ranks
from organs.stomach.core.distill.log.mining import records_of
from organs.stomach.core.distill.text import TIMES
from organs.stomach.core.shapes.signals import is_alert
from organs.stomach.core.tuning import LogConfig
from organs.text_views import TextLines


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
        ("start-stop-daemon: unable to stat /usr/sbin/shopd (No such file or directory)", True),
        ("      ^-- SC2054 (warning): Use spaces, not commas, to separate array elements.", True),
        ("      ^---^ SC2086 (info): Double quote to prevent globbing and word splitting.", False),
        ("invoke-rc.d: policy-rc.d denied execution of start.", True),
        ("dial tcp 10.0.0.7:5432: connect: connection refused", True),
        ("cart-sync: could not resolve host mirror.example", True),
        ("request to /cart timed out after 30s", True),
        ("cannot open shared object file", True),
        ("unable_to_parse counter reset to 0", False),
        ('{"method":"GET","path":"/cart","response_code":401,"duration":3}', True),
        ('{"method":"GET","path":"/cart","response_code":200,"duration":401}', False),
        (" × tests/unit/cart.test.ts > cart > totals the lines 5ms", True),
        ("   ✓ tests/unit/cart.test.ts > cart > totals the lines 5ms", False),
        ("not ok 3 - totals the lines", True),
        ("× 3 replicas", False),
        ("E0612 10:00:00.123456    1234 kubelet.go:123] sync pod cart-7", True),
        ("W0612 10:00:00.123456    1234 kubelet.go:123] slow sync of pod cart-7", True),
        ("I0612 10:00:00.123456    1234 kubelet.go:123] synced pod cart-7", False),
        ("[rank0]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog caught a timeout", True),
    ],
)
def test_what_a_reader_looks_for_is_an_alert(line: str, alert: bool) -> None:
    assert is_alert(line) is alert


def assert_shows(rendering: str, *phrases: str) -> None:
    missing = [phrase for phrase in phrases if phrase not in rendering]
    assert not missing, f"{missing} not in:\n{rendering}"


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


@pytest.mark.parametrize(("share", "excerpted"), [(0.55, True), (0.45, False)])
def test_a_log_at_most_twice_its_target_is_an_excerpt_and_one_further_over_is_templated(
    share: float, excerpted: bool
) -> None:
    log = _service_log()
    target = int(count_tokens(log, DEFAULT_ENCODING) * share)
    digest = distill_log(log, target, DEFAULT_ENCODING)
    assert ("excerpt: the lines in order" in digest.rendering.split("\n", 1)[0]) is excerpted
    assert ("<*>" in digest.rendering) is not excerpted
    assert digest.tokens is not None and digest.tokens <= target


def test_an_excerpt_keeps_the_line_holding_the_asks_rare_term_before_the_alerts() -> None:
    lines = [
        f"2024-05-01 10:00:{n % 60:02d} ERROR {_word(n)} {_word(n + 5)} {_word(n + 9)} lost {_word(n + 2)}"
        for n in range(30)
    ]
    lines[17] = "2024-05-01 10:00:17 INFO upload of invoice-774.pdf stopped at 3672146 bytes"
    log = "\n".join(lines)
    target = int(count_tokens(log, DEFAULT_ENCODING) * 0.78)
    digest = distill_log(log, target, DEFAULT_ENCODING, ask=AskTerms.of("Why did the upload stop?"))
    assert "excerpt" in digest.rendering.split("\n", 1)[0]
    assert "upload of invoice-774.pdf stopped at 3672146 bytes" in digest.rendering


def test_a_short_log_whose_template_legend_would_crowd_a_tight_target_is_an_excerpt_with_its_alert() -> None:
    log = "\n".join(
        [
            "2024-05-01 10:00:00.100 UTC [41] LOG:  checkpoint starting: time",
            "2024-05-01 10:00:00.200 UTC [52] ERROR:  deadlock detected",
            "2024-05-01 10:00:00.200 UTC [52] DETAIL:  Process 52 waits for ShareLock on transaction 9001",
            "2024-05-01 10:00:00.300 UTC [52] STATEMENT:  UPDATE carts SET total = 0 WHERE id = 7",
            "2024-05-01 10:00:00.400 UTC [41] LOG:  checkpoint complete: wrote 12 buffers",
        ]
    )
    digest = distill_log(log, 80, DEFAULT_ENCODING)
    assert digest.tokens is not None and digest.tokens <= 80
    assert "excerpt: the lines in order" in digest.rendering
    assert "ERROR:  deadlock detected (alert)" in digest.rendering


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


def test_a_compose_source_prefix_is_set_aside_and_counted() -> None:
    rows = []
    for index in range(30):
        rows.append(f"api-1     | 2024-06-01T10:00:{index:02d}Z handled GET /orders/{index} in {index + 3} ms")
        rows.append(f"worker-1  | 2024-06-01T10:00:{index:02d}Z picked job {900 + index} from queue default")
    rows.append("worker-1  | 2024-06-01T10:00:59Z WARNING: queue default is backing up (42 waiting)")
    rendering = distill_log("\n".join(rows), 300, DEFAULT_ENCODING).rendering
    assert "1 alert (1 warn)" in rendering.split("\n", 1)[0]
    assert_shows(
        rendering,
        "lines open with their source (worker-1 31, api-1 30)",
        f"{TIMES}30 handled GET /orders/<*> in <*> ms",
        f"{TIMES}30 picked job <*> from queue default",
    )


def test_json_lines_are_mined_on_level_and_message() -> None:
    rows = [
        f'{{"level":30,"time":"2024-06-01T10:00:{k:02d}Z","pid":7,"hostname":"box","msg":"synced repo r{k}","v":0}}'
        for k in range(40)
    ]
    rows[25] = '{"level":50,"time":"2024-06-01T10:00:25Z","pid":7,"hostname":"box","msg":"token expired","v":0}'
    rendering = distill_log("\n".join(rows), 250, DEFAULT_ENCODING).rendering
    assert "1 alert (1 error)" in rendering.split("\n", 1)[0]
    assert_shows(
        rendering,
        "JSON lines mined as time LEVEL message",
        "nearly every line holds pid=7 hostname=box v=0",
        f"{TIMES}39 INFO synced repo <*>",
        f"{TIMES}1 ERROR token expired",
    )


def test_logfmt_lines_are_mined_on_their_message_not_a_masked_quote() -> None:
    rows = [
        f'time="2024-06-01T10:00:{k:02d}Z" level=info msg="pod synced" pod=web-{k} namespace=shop' for k in range(30)
    ]
    rows[9] = 'time="2024-06-01T10:00:09Z" level=warning msg="failed to pull image" pod=web-9 namespace=shop'
    rendering = distill_log("\n".join(rows), 250, DEFAULT_ENCODING).rendering
    assert_shows(
        rendering,
        "logfmt lines mined",
        "WARNING failed to pull image pod=web-9",
        f"{TIMES}29 INFO pod synced pod=web-<*>",
    )


def test_the_ask_raises_its_template_and_shows_the_line_that_holds_it() -> None:
    rows = [f"2024-06-01 10:{k // 60:02d}:{k % 60:02d} INFO served /items/{k} to client c{k % 9}" for k in range(200)]
    rows += [f"2024-06-01 10:05:{k:02d} INFO cache {name} rebuilt" for k, name in enumerate("abcdefghijklmnop")]
    rows.insert(120, "2024-06-01 10:02:00 INFO slow request /items/4711 took 9800 ms")
    rows.insert(121, "2024-06-01 10:02:01 INFO slow request /items/12 took 1200 ms")
    log = "\n".join(rows)
    ask = AskTerms.of("Why did /items/4711 take so long?")
    rendering = distill_log(log, 160, DEFAULT_ENCODING, ask=ask).rendering
    assert "slow request /items/4711 took 9800 ms (matches ask)" in rendering
    assert "slow request /items/4711" not in distill_log(log, 160, DEFAULT_ENCODING).rendering


def test_the_last_lines_of_a_build_are_kept_before_ordinary_templates() -> None:
    rows = [f"[{k:04d}] compiling src/module_{k}.c" for k in range(300)]
    rows += [f"[{300 + k:04d}] linking part {chr(97 + k)} of {name}" for k, name in enumerate(["lib", "app", "cli"])]
    rows += ["Build finished: 300 objects, 0 warnings", "artifacts uploaded to store (12.4 MB)"]
    rendering = distill_log("\n".join(rows), 200, DEFAULT_ENCODING).rendering
    tail = rendering.split("last lines:\n", 1)[1]
    assert "Build finished: 300 objects, 0 warnings\nartifacts uploaded to store (12.4 MB)" in tail


def test_a_w3c_status_splits_the_template_and_counts_as_an_http_alert() -> None:
    rows = ["#Fields: date time s-ip cs-method cs-uri-stem s-port c-ip sc-status sc-substatus sc-win32-status"]
    for index in range(60):
        status = "404 0 2" if index % 10 == 3 else "200 0 0"
        rows.append(f"2024-02-02 10:{index:02d}:00 10.0.0.1 GET /page{index % 4}.html 80 192.0.2.{index} {status}")
    digest = distill_log("\n".join(rows), 400, DEFAULT_ENCODING)
    head = digest.rendering.split("\n", 1)[0]
    assert "6 alerts (6 HTTP 404)" in head
    template_lines = [line for line in digest.rendering.split("\n") if line.startswith(TIMES)]
    assert any(" 404 0 2" in line for line in template_lines) and any(" 200 0 0" in line for line in template_lines)


def test_a_build_that_prints_a_date_once_keeps_its_lines_as_records() -> None:
    rows = ["2024-05-05 08:00:00 build started"]
    # Over twice its target, so templated.
    for step in range(80):
        rows.append(f"$ make target_{step}")
        rows.append(f"  layer {step:03d}: Pull complete")
    digest = distill_log("\n".join(rows), 300, DEFAULT_ENCODING)
    head = digest.rendering.split("\n", 1)[0]
    assert "records" not in head
    assert f"{TIMES}80 layer <*>: Pull complete" in digest.rendering


def test_an_id_before_failed_is_not_a_count_that_splits_templates() -> None:
    rows = [f"2024-01-01 10:00:{k:02d} net: conn_check {20000 + k * 37} failed: 3 - no route" for k in range(40)]
    digest = distill_log("\n".join(rows), 200, DEFAULT_ENCODING)
    assert digest.templates == 1


def test_the_first_alert_templates_show_a_real_line_before_ordinary_templates() -> None:
    rows = [f"npm verb cache add step {k} of pkg-{k}" for k in range(300)]
    rows += [f"npm verb fetch item-{k} done in {k} ms with code {k % 7} and extra words w{k}" for k in range(300)]
    rows.insert(50, "npm WARN package.json left-pad@1.3.0 No repository field.")
    rows.insert(90, "npm WARN package.json right-pad@2.0.1 No repository field.")
    rendering = distill_log("\n".join(rows), 150, DEFAULT_ENCODING).rendering
    assert "e.g. npm WARN package.json left-pad@1.3.0 No repository field." in rendering


def test_alert_lines_that_differ_only_in_numbers_are_one_counted_line_with_its_leading_fields() -> None:
    rows = [f"2024-01-01 10:00:{k:02d} web-{k % 3} GET /ok/{k} 200" for k in range(50)]
    rows += [f"2024-01-01 10:01:{k:02d} web-1 ERROR upstream timeout after {k * 7} ms" for k in range(12)]
    rows.append("2024-01-01 10:02:00 web-2 ERROR upstream refused connection")
    rendering = distill_log("\n".join(rows), 300, DEFAULT_ENCODING).rendering
    refused = "2024-01-01 10:02:00 web-2 ERROR upstream refused connection"
    # As a distinct line of the timeout template, or as its own template seen once (its real line).
    assert f"! {TIMES}1 web-2 ERROR upstream refused connection" in rendering or f"{TIMES}1 {refused}" in rendering
    assert rendering.count("upstream timeout after") <= 2


def test_a_template_seen_once_is_its_real_line_not_its_line_and_an_example() -> None:
    rows = [f"2024-01-01 10:00:{k:02d} web-{k % 3} GET /ok/{k} 200" for k in range(40)]
    rows.append("2024-01-01 10:01:00 web-2 ERROR upstream refused connection to 10.0.0.7:5432")
    rendering = distill_log("\n".join(rows), 400, DEFAULT_ENCODING).rendering
    once = [line for line in rendering.split("\n") if "refused connection" in line]
    assert once == [f"{TIMES}1 2024-01-01 10:01:00 web-2 ERROR upstream refused connection to 10.0.0.7:5432"]


def test_an_alert_line_that_differs_in_a_few_words_shows_those_words_after_the_word_before_them() -> None:
    agent = "- 80 - 203.0.113.7 Mozilla/5.0+(X11;+Linux)+Firefox/99.0 -"
    rows = [f"2024-03-03 09:00:{k:02d} 10.0.0.9 GET /home {agent} 200 0 0 960 242 {300 + k}" for k in range(50)]
    probes = ["/admin/", "/wp-login.php", "/cms/", "/bbs/", "/phpmyadmin/", "/.env", "/backup.zip", "/shell"]
    rows += [
        f"2024-03-03 09:01:{k:02d} 10.0.0.9 GET {path} {agent} 404 0 2 1405 242 {100 + k}"
        for k, path in enumerate(probes)
    ]
    rendering = distill_log("\n".join(rows), 500, DEFAULT_ENCODING).rendering
    assert f"e.g. 2024-03-03 09:01:00 10.0.0.9 GET /admin/ {agent} 404 0 2 1405 242 100" in rendering
    assert f"! {TIMES}1 … GET /cms/ …" in rendering and f"! {TIMES}1 … GET /bbs/ …" in rendering


def _changelog(number: int) -> str:
    padding = ", ".join(f"field{index}: {number * 7 + index}" for index in range(30))
    return (
        f"2024-05-01 10:00:{number:02d} I SHARDING [conn80] metadata event: {{ {padding}, "
        f'details: {{ stepFour: {25000 + number}, to: "shard0{number}" }}, {padding} }}'
    )


def test_a_long_line_is_clipped_around_the_asks_term_in_its_middle() -> None:
    line = _changelog(3)
    ask = AskTerms.of("Which migration spent longest in stepFour?")
    assert "stepFour: 25003" not in clip(line, 240)
    clipped = clip(line, 240, ask)
    assert "stepFour: 25003" in clipped
    assert clipped.startswith(line[:60])
    assert "characters elided" in clipped


def test_a_term_past_the_opening_quarter_keeps_its_stretch_when_another_term_is_deep_in_the_line() -> None:
    line = "LC_ALL=C PATH=/usr/bin " + "x" * 60 + " -smp 2,sockets=2 " + "-device y " * 40 + "-name guest=vm1 "
    line += "-device z " * 40
    clipped = clip(line, 240, AskTerms.of("What smp does the guest get?"))
    assert "-smp 2,sockets=2" in clipped
    assert "guest=vm1" in clipped


def test_a_long_line_whose_head_shows_the_asks_terms_is_clipped_as_before() -> None:
    line = _changelog(3)
    ask = AskTerms.of("What does the metadata event say?")
    assert clip(line, 240, ask) == clip(line, 240)


def test_a_log_of_long_records_shows_the_asks_stretch_of_them() -> None:
    log = (
        "\n".join(_changelog(number) for number in range(1, 9))
        + "\n"
        + "\n".join(
            f"2024-05-01 10:01:{second:02d} I NETWORK  [listener] connection accepted from 127.0.0.1:{50000 + second}"
            for second in range(40)
        )
    )
    digest = distill_log(log, 700, DEFAULT_ENCODING, ask=AskTerms.of("Which event had the largest stepFour?"))
    assert "stepFour: 2500" in digest.rendering


def test_a_template_with_no_varying_field_and_no_clock_is_not_followed_by_the_same_line() -> None:
    rows = []
    for language in ("en", "cs", "de", "zh"):
        rows += ["Running Sphinx v4.5.0", f"loading translations [{language}]... done"]
        rows += [f"reading sources... [{page * 5:3d}%] chapter{page}/index" for page in range(1, 21)]
        rows += ["build succeeded, 3 warnings.", f"The HTML pages are in _build/html/{language}."]
    rendering = distill_log("\n".join(rows), 300, DEFAULT_ENCODING).rendering
    assert f"{TIMES}4 Running Sphinx v4.5.0" in rendering
    assert "e.g. Running Sphinx v4.5.0" not in rendering


_WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]


def _distinct_rows(count: int) -> list[str]:
    """``count`` clocked lines, each its own template: no line is kept for being rare or told apart by its shape."""
    return [
        f"10:{n:02d} {_WORDS[n % 10]} {_WORDS[n // 10 % 10]} {n * 37 % 900} {_WORDS[n * 3 % 10]}" for n in range(count)
    ]


def _excerpted(rows: list[str], ask: str) -> str:
    """The log of ``rows`` at four fifths of its size with ``ask``, which must be served as an excerpt."""
    log = "\n".join(rows)
    rendering = distill_log(log, int(count_tokens(log, DEFAULT_ENCODING) * 0.8), DEFAULT_ENCODING, ask=AskTerms.of(ask))
    assert "excerpt" in rendering.rendering.split("\n", 1)[0]
    return rendering.rendering


def test_an_excerpt_keeps_the_line_with_the_asks_rare_term_before_lines_with_its_common_ones() -> None:
    rows = [f"search index updated for chapter{page} in {page % 7 + 2} ms" for page in range(80)]
    rows.insert(50, "language fallback: English chosen for cs")
    rendering = _excerpted(rows, "Why is the search index in English?")
    assert "language fallback: English chosen for cs" in rendering


def test_an_excerpt_keeps_the_one_line_naming_the_problem_the_ask_speaks_of() -> None:
    rows = _distinct_rows(60)
    rows.insert(52, "10:52 transfer cut short: a network problem on the sending side")
    rendering = _excerpted(rows, "Is there a problem with my uploads?")
    assert "a network problem on the sending side" in rendering


def test_an_excerpt_keeps_the_line_saying_the_asks_term_again_before_one_saying_it_once() -> None:
    rows = _distinct_rows(20)
    for at, worker in ((4, 3), (9, 5), (14, 8)):
        rows.insert(at, f"10:{at:02d} lease renewed by worker {worker} for another term")
    rows.insert(17, "10:17 lease lost, lease renewal refused, lease handed to worker 9")
    # A log this short is an excerpt; its target leaves room for one line.
    rendering = distill_log("\n".join(rows), 70, DEFAULT_ENCODING, ask=AskTerms.of("Who has the lease now?")).rendering
    assert "lease handed to worker 9" in rendering
    assert "lease renewed by worker" not in rendering


def test_an_excerpt_does_not_raise_a_word_of_trouble_that_most_lines_hold() -> None:
    rows = [f"2024-05-01 10:{n // 60:02d}:{n % 60:02d} check {n} failed: retry in {n % 9 + 1}s" for n in range(80)]
    rows.insert(47, "2024-05-01 10:00:47 quota for tenant blue exhausted")
    rendering = _excerpted(rows, "Why does the check keep failing for tenant blue?")
    assert "quota for tenant blue exhausted" in rendering
    assert ASK_MARK not in next(line for line in rendering.split("\n") if "check 3 failed" in line)


def _checker_run(error_at: int) -> list[str]:
    """Distinct lines, a third of them a checker's warnings, the one at ``error_at`` an error."""
    rows = _distinct_rows(120)
    for n in range(0, 120, 3):
        level, message = (
            ("ERROR", "cyclic reverse analysis") if n == error_at else ("WARN", f"{rows[n][6:]} unused " * 4)
        )
        rows[n] = f"{rows[n][:6]}{level} {message}"
    return rows


def _checker_excerpt(rows: list[str]) -> str:
    """The run at a target that leaves room for about half its warnings, served as an excerpt."""
    log = "\n".join(rows)
    target = int(count_tokens(log, DEFAULT_ENCODING) * 0.9)
    rendering = distill_log(log, target, DEFAULT_ENCODING, ask=AskTerms.of("Which line breaks the step?")).rendering
    assert "excerpt" in rendering.split("\n", 1)[0]
    return rendering


def test_an_excerpt_keeps_the_lines_beside_an_alert_of_a_rare_kind() -> None:
    rows = _checker_run(error_at=60)
    assert "\n".join([rows[59], rows[60] + ALERT_MARK, rows[61]]) in _checker_excerpt(rows)


def test_an_excerpt_keeps_the_line_answering_what_the_ask_compares() -> None:
    rows = [f"{row} served in {n % 9 + 2} ms" for n, row in enumerate(_distinct_rows(80))]
    # Late in the log, where an excerpt elides first, and not among its last lines.
    rows[72] = rows[72].replace(f"served in {72 % 9 + 2} ms", "served in 1840 ms")
    log = "\n".join(rows)
    goal = "Which request was the slowest?"
    target = int(count_tokens(log, DEFAULT_ENCODING) * 0.8)
    comparison = Comparison.of(goal)
    rendering = distill_log(log, target, DEFAULT_ENCODING, ask=AskTerms.of(goal), comparison=comparison).rendering
    assert "excerpt" in rendering.split("\n", 1)[0]
    assert rows[72] in rendering


def test_an_id_under_a_key_is_compared_by_no_superlative() -> None:
    comparison = Comparison.of("Which flow is behind most of these alerts?")
    assert comparison is not None
    assert comparison.pick(['{"flow_id":9912,"alert":"a"}', '{"flow_id":12,"alert":"b"}']) == []


def test_an_excerpt_keeps_the_lines_under_an_alert_line_of_a_long_record() -> None:
    # Each ordinary line is its own template, so each is kept for being rare before a trace's ordinary lines.
    rows = [f"2024-05-01 10:00:{row[3:5]} INFO {row[6:]}" for row in _distinct_rows(50)]
    trace = ["2024-05-01 10:00:50 ERROR startup failed", "Traceback (most recent call last):"]
    trace += [f'  File "/srv/app/db{n}.py", line {n * 10}, in connect{n}' for n in range(40)]
    trace += ["OperationalError: could not connect to server", "\tIs the server running on host db-7", "\tport 5432?"]
    rows[44:44] = trace
    rendering = _excerpted(rows, "Why does it not start?")
    assert "\tIs the server running on host db-7" in rendering
    assert "\tport 5432?" in rendering


def test_an_excerpt_of_a_linters_run_keeps_its_findings_before_the_source_they_quote() -> None:
    words = [*_WORDS, "kilo"]
    rows = []
    for n in range(12):
        rows += [f"E50{n % 3} Line too long ({89 + n} > 88)", f"   --> src/shop/cart_{n}.py:{n * 40 + 7}:5", "    |"]
        # Each finding quotes different code: the log is nearly all distinct lines, so it is served as an excerpt.
        for offset in range(4):
            first, second = words[(n + offset) % 11], words[(n * 3 + offset) % 11]
            rows += [f"{n * 40 + offset:3d} |     {first}_{second} = {second}.{first}({first}, {second}.{offset})"]
        rows += ["    |"]
    rows += ["Found 12 errors."]
    log = "\n".join(rows)
    rendering = distill_log(log, count_tokens(log, DEFAULT_ENCODING) // 2, DEFAULT_ENCODING).rendering
    assert "excerpt" in rendering.split("\n", 1)[0]
    assert all(f"src/shop/cart_{n}.py:{n * 40 + 7}:5" in rendering for n in range(12))


def test_a_checkers_pointers_at_different_columns_are_one_template() -> None:
    rows = []
    for n in range(30):
        rows += [f"In deploy.sh line {n * 7 + 3}:", f"{' ' * (n % 9)}cp $src{n} $dest{n}"]
        rows += [f"{' ' * (n % 9 + 3)}^{'-' * (n % 5 + 2)}^ SC2086 (info): Double quote to prevent globbing."]
    rendering = distill_log("\n".join(rows), 300, DEFAULT_ENCODING).rendering
    assert f"{TIMES}30 ^-- <*> (info): Double quote to prevent globbing." in rendering


def test_a_log_with_a_blank_line_after_every_line_is_mined_as_its_lines() -> None:
    records = [f"[ERROR] TS2304: Cannot find name 'total{n}'.\n\n    src/cart.ts:{n}:5:" for n in range(40)]
    # The console's copy put a blank line after each line, and three where the log had one of its own.
    log = "\n\n\n\n".join(records)
    rendering = distill_log(log, 200, DEFAULT_ENCODING).rendering
    assert rendering.startswith("[119-line log")
    single = "\n\n".join(record.replace("\n\n", "\n") for record in records)
    assert distill_log(single, 200, DEFAULT_ENCODING).rendering.startswith("[119-line log")


def test_blank_lines_heading_records_of_their_own_are_no_template() -> None:
    log = "\n\n".join(f"[ERROR] TS2304: Cannot find name 'total{n}'.\n    src/cart.ts:{n}:5:" for n in range(40))
    rendering = distill_log(log, 200, DEFAULT_ENCODING).rendering
    assert not any(line.startswith(TIMES) and not line.split(" ", 1)[1:] for line in rendering.split("\n"))
    assert f"{TIMES}39 \n" not in rendering + "\n"


def test_a_line_said_again_unchanged_is_shown_as_received_with_when_it_last_recurred() -> None:
    rows = []
    for minute in range(30):
        rows.append(f"2024-05-01 10:{minute:02d}:00 WARN disk /data is 91% full")
        rows += [f"2024-05-01 10:{minute:02d}:{second:02d} INFO request {minute * 60 + second} ok" for second in (1, 2)]
    rendering = distill_log("\n".join(rows), 200, DEFAULT_ENCODING).rendering
    assert f"{TIMES}30 2024-05-01 10:00:00 WARN disk /data is 91% full (last 2024-05-01 10:29:00)" in rendering
    assert "e.g. 2024-05-01 10:00:00 WARN disk" not in rendering


def test_with_an_ask_a_line_said_as_it_is_is_shown_as_received_and_a_bare_log_keeps_its_template_line() -> None:
    rows = []
    for minute in range(30):
        rows.append(f"2024-05-01 10:{minute:02d}:00 INFO checkpoint written to /data/ckpt")
        rows += [f"2024-05-01 10:{minute:02d}:{second:02d} INFO request {minute * 60 + second} ok" for second in (1, 2)]
    log = "\n".join(rows)
    asked = distill_log(log, 200, DEFAULT_ENCODING, ask=AskTerms.of("When was the last checkpoint written?"))
    assert f"{TIMES}30 2024-05-01 10:00:00 INFO checkpoint written to /data/ckpt (last 2024-05-01 10:29:00)" in (
        asked.rendering
    )
    bare = distill_log(log, 200, DEFAULT_ENCODING).rendering
    assert f"{TIMES}30 INFO checkpoint written to /data/ckpt" in bare


def test_a_template_holding_the_asks_terms_shows_each_of_its_records_that_hold_them() -> None:
    appenders = ["SYSTEMLOG", "DEBUGLOG", "SparkWorker", "Gremlin", "Audit"]
    rows = [
        f"10:00:{second:02d} |-INFO in logback.Config - Setting level of logger [l{second}] to INFO"
        for second in range(60)
    ]
    rows += [
        f"10:01:{index:02d} |-INFO in RollingFileAppender[{name}] - Active log file name: /var/log/{name.lower()}.log"
        for index, name in enumerate(appenders)
    ]
    ask = AskTerms.of("Which log file name does each RollingFileAppender write to?")
    rendering = distill_log("\n".join(rows), 500, DEFAULT_ENCODING, ask=ask).rendering
    for name in appenders:
        assert f"Active log file name: /var/log/{name.lower()}.log" in rendering


def test_a_templates_records_holding_the_asks_terms_that_differ_only_in_their_clock_are_shown_once() -> None:
    rows = [
        f"10:00:{second:02d} |-INFO in logback.Config - Setting level of logger [l{second}] to INFO"
        for second in range(60)
    ]
    rows += [f"10:01:{second:02d} WARN rule ratio failed at eval {second * 7}: duplicate series" for second in range(9)]
    ask = AskTerms.of("Which ratio rule fails at eval, with which series?")
    rendering = distill_log("\n".join(rows), 500, DEFAULT_ENCODING, ask=ask).rendering
    assert rendering.count(": duplicate series") == 2


def _records(text: str) -> list[tuple[int, int]]:
    records, _, _ = records_of(TextLines(text), text, LogConfig())
    return list(zip(records.start, records.end, strict=True))


def _proxy_log(between: str) -> str:
    rows = []
    for n in range(6):
        rows.append(f"2024-11-09T07:32:5{n}+01:00 DBG router.go:196 > Service selected: backend-{n % 2}")
        rows.append(between.format(n=n))
    return "\n".join(rows)


def test_a_line_without_a_leading_clock_continues_the_clocked_record_above_it() -> None:
    log = _proxy_log("    route matched for request {n}")
    assert _records(log) == [(start, start + 2) for start in range(0, 12, 2)]


def test_a_whole_json_object_between_clocked_lines_is_a_record_of_its_own() -> None:
    log = _proxy_log('{{"RequestPath":"/login/{n}","DownstreamStatus":302,"RouterName":"code@docker"}}')
    assert _records(log) == [(line, line + 1) for line in range(12)]


def test_an_access_log_line_with_its_own_clock_between_clocked_lines_is_a_record_of_its_own() -> None:
    log = _proxy_log('10.0.0.{n} - - [09/Nov/2024:06:32:5{n} +0000] "GET /login/{n} HTTP/2.0" 302 448 2ms')
    assert _records(log) == [(line, line + 1) for line in range(12)]


def test_an_indented_line_that_names_a_date_still_continues_the_record_above_it() -> None:
    log = _proxy_log("    retry scheduled at 2024-11-09 07:40:0{n}")
    assert _records(log) == [(start, start + 2) for start in range(0, 12, 2)]


def test_an_excerpt_keeps_the_lines_beside_an_asked_line_before_the_rest() -> None:
    # Every line a template of its own, so an excerpt without the rule keeps them from the top.
    words = [
        "alpha",
        "bravo",
        "charlie",
        "delta",
        "echo",
        "foxtrot",
        "golf",
        "hotel",
        "india",
        "juliet",
        "kilo",
        "lima",
        "mike",
        "november",
        "oscar",
    ]
    rows = [f"2024-05-01 10:00:{n:02d} INFO {words[n % 15]} {words[n // 15]} stage settled" for n in range(60)]
    rows[50] = "2024-05-01 10:00:50 INFO resume hook started by sleep target"
    rows[51] = "2024-05-01 10:00:51 INFO link on eth0 went down"
    rendering = _excerpted(rows, "Did the resume hook run?")
    assert "resume hook started by sleep target (matches ask)" in rendering
    assert "2024-05-01 10:00:51 INFO link on eth0 went down" in rendering


def test_an_examples_continuation_lines_are_its_records_own_not_the_records_after_it() -> None:
    rows = [f"2024-05-01 10:00:{n:02d} INFO consumer {n} attached to exchange spans" for n in range(40)]
    rows[20:20] = [
        "2024-05-01 10:00:20 ERROR channel error on connection 7, channel 1:",
        "operation queue.declare caused a channel exception not_found",
    ]
    rendering = distill_log("\n".join(rows), 300, DEFAULT_ENCODING).rendering
    assert "      operation queue.declare caused a channel exception not_found" in rendering
    assert "      2024-05-01 10:00:20 INFO consumer 20" not in rendering


def test_a_log_whose_lines_share_an_indentation_is_mined_without_it_and_served_whole_with_it() -> None:
    rows = []
    for n in range(30):
        rows.append(f"    2016/06/17 16:30:{n:02d} [ERR] agent: failed to sync remote state: No cluster leader")
        rows.append(f"    2016/06/17 16:30:{n:02d} [INFO] agent: Joining cluster, attempt {n}")
    log = "\n".join(rows)
    rendering = distill_log(log, 150, DEFAULT_ENCODING).rendering
    assert "2016-06-17T16:30:00Z → 2016-06-17T16:30:29Z" in rendering.split("\n", 1)[0]
    assert "16:<*>" not in rendering
    assert distill_log(log, count_tokens(log, DEFAULT_ENCODING), DEFAULT_ENCODING).rendering == log


def test_records_of_an_asked_template_said_again_word_for_word_are_quoted_once() -> None:
    rows = [f"npm ERR! gyp info spawn arg {n} of the build" for n in range(60)]
    for at in (10, 30, 50):
        rows[at] = "npm ERR! gyp ERR! find Python"
    for at, name in ((11, "python3"), (31, "python"), (51, "py.exe")):
        rows[at] = f'npm ERR! gyp ERR! find Python - "{name}" is not in PATH'
    ask = AskTerms.of("Why can it not find Python?")
    rendering = distill_log("\n".join(rows), 300, DEFAULT_ENCODING, ask=ask).rendering
    assert rendering.count("npm ERR! gyp ERR! find Python\n") + rendering.endswith("find Python") <= 1
    assert '"py.exe" is not in PATH' in rendering


def test_an_asked_template_shows_the_records_holding_the_asks_rarest_term_among_its_first_ones() -> None:
    modules = ["zlib", "path", "crypto", "http", "url", "util", "net", "tls", "os", "dns"]
    rows = [f"Module not found: Error: Can't resolve '{name}' in '/app/node_modules/pkg{n}'" for n, name in
            enumerate(modules * 3)]  # fmt: skip
    for at, package in ((20, "etag"), (24, "mime"), (28, "send")):
        rows[at] = f"Module not found: Error: Can't resolve 'fs' in '/app/node_modules/{package}'"
    rows += [f"webpack step {n} of the build done in {n * 3} ms" for n in range(40)]
    ask = AskTerms.of("Which modules can it not resolve, and which packages ask for 'fs'?")
    rendering = distill_log("\n".join(rows), 400, DEFAULT_ENCODING, ask=ask).rendering
    assert "templates" in rendering.split("\n", 1)[0]
    assert all(f"'fs' in '/app/node_modules/{package}'" in rendering for package in ("etag", "mime", "send"))
    assert "Can't resolve 'zlib' in '/app/node_modules/pkg0'" in rendering


def test_a_template_holding_the_asks_rare_term_is_raised_before_ones_holding_its_common_terms() -> None:
    names = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    rows = []
    for name in names:
        rows += [f"  {line}:4  error  render of component {name} shadows the {name} prop" for line in range(12)]
    rows.insert(77, '  107:46  error  Missing "key" prop for element in array')
    ask = AskTerms.of("Which render of a component has no key?")
    rendering = distill_log("\n".join(rows), 150, DEFAULT_ENCODING, ask=ask).rendering
    assert "not shown" in rendering
    assert 'Missing "key" prop for element in array' in rendering


def test_a_log_of_mostly_distinct_records_is_an_excerpt_even_far_over_its_target() -> None:
    said = [
        "loading tracing configuration",
        "cm init: initializing cds",
        "all clusters initialized. initializing init manager",
        "starting main dispatch loop",
        "lds: add/update listener 'node_listener:3341:6'",
        "Listener rejected: route: unknown cluster 'node_3'",
        "cds: add/update cluster 'node_3'",
        "all dependencies initialized. starting workers",
        "removing cluster cnm_master_cluster",
        "shutting down parent after drain",
        "admin address: 127.0.0.1:8002",
        "runtime: layers: static and admin",
    ]
    rows = [f"[2021-08-17 09:4{n % 3}:{n:02d}] info {said[n // 3]} (epoch {n % 3})" for n in range(3 * len(said))]
    log = "\n".join(rows)
    rendering = distill_log(log, count_tokens(log, DEFAULT_ENCODING) // 2, DEFAULT_ENCODING).rendering
    assert "excerpt: the lines in order" in rendering.split("\n", 1)[0]
    repeated = "\n".join(f"[2021-08-17 09:43:{n:02d}] info cds update applied for {n}" for n in range(48))
    rendering = distill_log(repeated, count_tokens(repeated, DEFAULT_ENCODING) // 2, DEFAULT_ENCODING).rendering
    assert "excerpt" not in rendering.split("\n", 1)[0]


def test_a_json_record_whose_field_holds_a_line_break_is_mined_as_one_line() -> None:
    rows = [
        f'{{"time":"2025-09-03T16:45:{n:02d}Z","level":"info","msg":"run {n}","error":"code {400 + n % 5}\\nrefused"}}'
        for n in range(40)
    ]
    digest = distill_log("\n".join(rows), 400, DEFAULT_ENCODING)
    assert digest.tokens is not None and digest.tokens <= 400
    assert "run" in digest.rendering


def _test_run_that_panics() -> str:
    lines = [f"=== RUN   TestCase{n}\n--- PASS: TestCase{n} (0.00s)" for n in range(60)]
    lines += ["=== RUN   TestSaveMetadata", "fatal error: concurrent map writes", "", "goroutine 110 [running]:"]
    lines += ["runtime.throw(0x5691b3, 0x15)", "\t/usr/local/go/src/runtime/panic.go:566 +0x95"]
    lines += ["shop/store.(*MockStorage).Put(0xc420092540)", "\t/home/ci/src/shop/store/mock.go:171 +0xc6"]
    lines += [
        f"goroutine {n} [chan receive]:\ntesting.tRunner(0xc4200{n})\n\t/go/testing.go:{n} +0x1" for n in range(40)
    ]
    return "\n".join(lines)


def test_a_templates_example_is_the_record_naming_the_asks_rarest_term() -> None:
    rows = [
        f"pkg/kubelet/cache/state_test.go:{n * 3 + 10}:2: this value of err{n} is never used (SA4006)"
        for n in range(60)
    ]
    rows.insert(41, "pkg/proxy/iptables/proxier.go:661:2: this value of args is never used (SA4006)")
    ask = AskTerms.of("Which findings are in pkg/proxy and not in the _test.go files?")
    rendering = distill_log("\n".join(rows), 200, DEFAULT_ENCODING, ask=ask).rendering
    assert "e.g. pkg/proxy/iptables/proxier.go:661:2: this value of args is never used (SA4006)" in rendering


def test_an_example_with_no_clock_of_its_own_is_dated_by_the_banner_printed_before_it() -> None:
    rows = [
        f"=== server startup: 2016-05-{day // 3 + 1:02d} {7 + day % 3 * 5:02d}:45:02 +0800 ===" for day in range(90)
    ]
    rows.insert(
        61, "boot.rb:34:in `setup': You have already activated rack 1.6.4, but your Gemfile requires rack 1.5.5"
    )
    rows.insert(62, "\tfrom config.ru:3:in `block in <main>'")
    rendering = distill_log("\n".join(rows), 200, DEFAULT_ENCODING).rendering
    assert "    after: === server startup: 2016-05-21 07:45:02 +0800 ===\n    e.g. boot.rb:34:in `setup'" in rendering


def test_a_crash_the_log_holds_is_served_as_received_before_its_templates() -> None:
    digest = distill_log(_test_run_that_panics(), 400, DEFAULT_ENCODING, ask=AskTerms.of("Which write blew up?"))
    assert "the crash, as received:\nfatal error: concurrent map writes\n\ngoroutine 110 [running]:" in digest.rendering
    assert "\t/home/ci/src/shop/store/mock.go:171 +0xc6" in digest.rendering
    assert digest.tokens is not None and digest.tokens <= 400


def test_a_caught_exception_a_log_records_is_not_a_crash() -> None:
    lines = [f"2026-01-01 10:00:{n:02d} INFO served request {n}" for n in range(50)]
    lines[20] = (
        "2026-01-01 10:00:20 ERROR lookup failed\njava.lang.IllegalStateException: no row\n\tat Shop.find(Shop.java:3)"
    )
    assert "the crash, as received:" not in distill_log("\n".join(lines), 200, DEFAULT_ENCODING).rendering


def _traceback(number: int) -> list[str]:
    frames = [
        f'  File "/srv/lib/framework/layer{n}.py", line {n}, in call\n    await self.app(scope)' for n in range(30)
    ]
    return ["Traceback (most recent call last):", *frames, f"FileNotFoundError: no note {number}"]


def test_a_python_crash_keeps_its_innermost_frames_and_its_exception() -> None:
    lines = [f'INFO:     10.0.0.{n}:5000 - "GET /notes/{n} HTTP/1.0" 200 OK' for n in range(80)]
    lines += ["ERROR:    Exception in ASGI application", *_traceback(7)]
    digest = distill_log("\n".join(lines), 300, DEFAULT_ENCODING, ask=AskTerms.of("Why did it fail?"))
    assert "the crash, as received:" in digest.rendering
    assert "FileNotFoundError: no note 7" in digest.rendering
    assert "layer29.py" in digest.rendering


def _crash_with_message(message: list[str]) -> str:
    lines = [f'INFO:     10.0.0.{n}:5000 - "GET /notes/{n} HTTP/1.0" 200 OK' for n in range(80)]
    lines += ["ERROR:    Exception in ASGI application", *_traceback(7)[:-1]]
    return "\n".join([*lines, "db.OperationalError: could not connect to server: Connection refused", *message])


def test_a_python_exceptions_message_going_on_over_indented_lines_is_in_the_crash() -> None:
    log = _crash_with_message(['\tIs the server running on host "10.0.0.5" and accepting', "\tTCP/IP on port 5432?"])
    crash = crash_of(log, log.split("\n"), LogConfig())
    assert crash is not None
    assert crash.lines[-2:] == ('\tIs the server running on host "10.0.0.5" and accepting', "\tTCP/IP on port 5432?")


def test_a_python_exceptions_message_is_kept_only_so_far() -> None:
    log = _crash_with_message([f"\tfield_{n}: value {n}" for n in range(6)])
    crash = crash_of(log, log.split("\n"), LogConfig(crash_message_lines=2))
    assert crash is not None
    assert crash.lines[-3:] == (
        "db.OperationalError: could not connect to server: Connection refused",
        "\tfield_0: value 0",
        "\tfield_1: value 1",
    )


def test_a_remote_traceback_under_the_local_exception_is_the_crash_and_its_carets_are_left_out() -> None:
    lines = [f'INFO:     10.0.0.{n}:5000 - "GET /notes/{n} HTTP/1.0" 200 OK' for n in range(80)]
    local = [*_traceback(7)[:-1], "runner.RemoteTaskError(WorkerDiedError): task run() failed"]
    remote = [
        '  File "/srv/app/trainer.py", line 913, in fit',
        "    output = self.workers.update(batch)",
        "             ^^^^^^^^^^^^^^^^^^^^^^^^^^",
        "runner.WorkerDiedError: the worker died before finishing this task.",
    ]
    digest = distill_log("\n".join(lines + local + remote), 300, DEFAULT_ENCODING, ask=AskTerms.of("Why?"))
    assert "    output = self.workers.update(batch)\nrunner.WorkerDiedError: the worker died" in digest.rendering


def test_a_log_of_several_tracebacks_has_no_one_crash() -> None:
    lines = [f'INFO:     10.0.0.{n}:5000 - "GET /notes/{n} HTTP/1.0" 200 OK' for n in range(80)]
    lines += ["ERROR:    Exception in ASGI application", *_traceback(7), "ERROR:    Exception in ASGI application"]
    lines += _traceback(8)
    digest = distill_log("\n".join(lines), 300, DEFAULT_ENCODING, ask=AskTerms.of("Why did it fail?"))
    assert "the crash, as received:" not in digest.rendering


def test_an_alert_said_again_and_again_is_excerpted_by_its_first_and_last_times() -> None:
    lines = [f"2021-02-01 00:25:{n // 10:02d}.{n % 10}00 GMT [26] LOG:  could not write stats: No space left on device"
             for n in range(120)]  # fmt: skip
    lines[60] = "2021-02-01 00:25:06.000 GMT [22] PANIC:  could not create checkpoint file"
    lines.append("2021-02-01 00:25:13.000 GMT [1] LOG:  checkpointer process (PID 22) was terminated by signal 6")
    log = "\n".join(lines)
    target = int(count_tokens(log, DEFAULT_ENCODING) * 0.9)
    rendering = distill_log(log, target, DEFAULT_ENCODING, ask=AskTerms.of("Which process took it down?")).rendering
    assert "PANIC:  could not create checkpoint file" in rendering
    assert "checkpointer process (PID 22) was terminated by signal 6" in rendering
    assert rendering.count("No space left on device (alert)") == 4


def test_an_alert_said_again_for_one_file_after_another_is_excerpted_by_its_first_and_last_times() -> None:
    rows = [
        f"2024-03-02 10:00:{n:02d} WARN [deploy] entry {_word(n)}.jar in /srv/lib/{_word(n + 40)}.jar is not a jar"
        for n in range(40)
    ]
    rows += [f"2024-03-02 10:01:{n:02d} INFO [web] served request {_word(n + 80)} in {n} ms" for n in range(40)]
    log = "\n".join(rows)
    target = int(count_tokens(log, DEFAULT_ENCODING) * 0.6)
    rendering = distill_log(log, target, DEFAULT_ENCODING).rendering
    assert "excerpt" in rendering.split("\n", 1)[0]
    assert rendering.count("is not a jar (alert)") == 4
    assert f"entry {_word(39)}.jar" in rendering


def test_an_excerpt_keeps_the_records_on_each_side_of_a_long_silence() -> None:
    rows = [f"2024-03-02 10:00:{n:02d} INFO [web] served request {_word(n)} in {n} ms" for n in range(60)]
    rows += [f"2024-03-02 10:20:{n:02d} INFO [web] served request {_word(n + 60)} in {n} ms" for n in range(60)]
    log = "\n".join(rows)
    target = int(count_tokens(log, DEFAULT_ENCODING) * 0.55)
    rendering = distill_log(log, target, DEFAULT_ENCODING).rendering
    assert "excerpt" in rendering.split("\n", 1)[0]
    assert f"2024-03-02 10:00:59 INFO [web] served request {_word(59)} in 59 ms" in rendering
    assert f"2024-03-02 10:20:00 INFO [web] served request {_word(60)} in 0 ms" in rendering


def test_an_alert_said_again_with_other_numbers_shows_its_last_time() -> None:
    rows = [f"2024-01-01 10:00:{k:02d} sync INFO copied file {k}.txt" for k in range(60)]
    rows += [f"2024-01-01 10:01:0{k} sync ERROR : Attempt {k}/3 failed with 1 errors" for k in (1, 2, 3)]
    rendering = distill_log("\n".join(rows), 300, DEFAULT_ENCODING).rendering
    assert "Attempt 1/3 failed" in rendering
    assert "Attempt 3/3" in rendering
    assert "not quoted" not in rendering


def test_a_notice_said_again_word_for_word_is_excerpted_once() -> None:
    notice = ["  The component is governed by the licence agreement;", "  see the vendor's page for its terms."]
    lines = []
    for run in range(3):
        lines += [f"[xunit 00:00:0{run}] Starting: Suite{run}", *notice]
        lines += [f"  Passed Suite{run}.Case{n} [2 ms]" for n in range(25)]
    lines[40] = "  Failed Suite1.Case9 [311 ms]"
    lines.insert(41, "  Expected dataSource not to be <null>.")
    log = "\n".join(lines)
    target = int(count_tokens(log, DEFAULT_ENCODING) * 0.9)
    rendering = distill_log(log, target, DEFAULT_ENCODING, ask=AskTerms.of("Which test failed, and on what?")).rendering
    assert rendering.count("governed by the licence agreement") == 1
    assert "Expected dataSource not to be <null>." in rendering


def test_a_log_of_distinct_lines_well_over_its_target_is_an_excerpt_of_its_lines() -> None:
    # A device report's "key : value" lines: no two keys share a word, so each line is a template of its own.
    syllables = ["ka", "lo", "mi", "nu", "pe", "ro", "si", "tu", "va", "ze"]
    words = [a + b + c for a in syllables for b in syllables for c in syllables[:3]]
    lines = [f"{' ' * (4 * (n % 3))}{words[2 * n]} {words[2 * n + 1]} : {n * 7 % 300}" for n in range(150)]
    lines[50] = "        Power Limit : 450.00 W"
    digest = distill_log("\n".join(lines), 300, DEFAULT_ENCODING, ask=AskTerms.of("Is the power limit hit?"))
    assert "templates by first appearance" not in digest.rendering
    assert "        Power Limit : 450.00 W" in digest.rendering


def test_a_log_of_few_long_records_is_an_excerpt_of_whole_lines() -> None:
    rows = [
        f'{{"timestamp":"2018-10-04T09:34:{n:02d}.0","flow_id":{7000 + n % 3},"event_type":"alert",'
        + ",".join(f'"field_{k}":"{"v" * 20}{n}"' for k in range(30))
        + f',"http":{{"hostname":"mirror{n % 3}.example.org","length":{n * 1000}}}}}'
        for n in range(20)
    ]
    digest = distill_log("\n".join(rows), 3000, DEFAULT_ENCODING, ask=AskTerms.of("Which host sent the most?"))
    assert "templates by first appearance" not in digest.rendering
    assert '"hostname":"mirror1.example.org","length":19000' in digest.rendering


def test_a_runs_tally_in_its_middle_comes_before_its_alert_templates() -> None:
    passing = [f"    ✓ queue job {_word(n)} is processed in order" for n in range(60)]
    failures = [
        f"  Error: {_word(n)} {_word(n + 7)} {_word(n + 13)} broke the {_word(n + 3)} stage {k} of {_word(n + 5)}"
        for n in range(40)
        for k in range(3)
    ]
    log = "\n".join([*passing, "", "  104 passing (5m)", "  22 failing", "", *failures])
    rendering = distill_log(log, 300, DEFAULT_ENCODING).rendering
    assert "22 failing" in rendering and "104 passing (5m)" in rendering


def _word(number: int) -> str:
    return "".join(chr(97 + (number // 26**k) % 26) for k in range(3))


def test_a_term_of_the_ask_on_nearly_every_record_quotes_none_of_them_for_it() -> None:
    rows = [
        f"2024-03-02 10:{n // 60:02d}:{n % 60:02d} INFO [acme.http] (worker {n % 7}) served /cart/{n + 1000}"
        for n in range(80)
    ]
    rows[41] = "2024-03-02 10:00:41 INFO [acme.session] (worker 6) session of user 77 closed by the idle reaper"
    ask = AskTerms.of("Why did the acme worker log user 77 out?")
    rendering = distill_log("\n".join(rows), 400, DEFAULT_ENCODING, ask=ask).rendering
    assert "session of user 77 closed by the idle reaper" in rendering
    # The template's line and one real line of it: none of its records is quoted for "acme" and "worker".
    assert rendering.count("served /cart/") == 2


def _lint_run() -> str:
    rows = ["    Checking shop v0.1.0 (/src/shop)"]
    for n in range(30):
        lint = ("unused variable: `cart`", "this function has too many lines", "redundant clone")[n % 3]
        rows += [
            f"warning: {lint}",
            f"  --> src/{_word(n)}.rs:{n + 10}:5",
            "   |",
            f"{n + 10} |     let cart = load({n});",
            "   |         ^^^^",
            "",
        ]
    rows.append("warning: `shop` (lib) generated 30 warnings")
    return "\n".join(rows)


def test_a_linters_run_is_read_as_its_diagnostics_with_their_locations_under_them() -> None:
    digest = distill_log(_lint_run(), 300, DEFAULT_ENCODING)
    head = digest.rendering.split("\n", 1)[0]
    assert "32 records" in head
    assert digest.templates == 5
    assert "  --> src/aaa.rs:10:5" in digest.rendering


def test_a_linters_findings_named_by_their_rule_are_records_with_their_locations_under_them() -> None:
    rows = []
    for n in range(30):
        rule = ("no-var", "no-this-alias", "prefer-const")[n % 3]
        rows += [f"error[{rule}]: the {rule} rule is broken here", f"  --> /src/lib/{_word(n)}.js:{n + 10}:3", "   | "]
        rows += [f"> {n + 10} |   var cart = load({n});", "   |   ^^^", "", f"  docs: https://lint.example/{rule}", ""]
    rows.append("Found 30 problems")
    digest = distill_log("\n".join(rows), 300, DEFAULT_ENCODING)
    # One record a finding, its code frame's quoted lines (marked ">") among its lines, and the tool's tally.
    assert "31 records" in digest.rendering.split("\n", 1)[0]
    assert digest.templates == 4


def test_a_run_of_a_few_diagnostics_among_other_lines_keeps_a_record_a_line() -> None:
    rows = [f"compiling module {_word(n)} ({n} of 40)" for n in range(40)]
    rows[20] = "warning: unused import: `os`"
    rows[30] = "warning: unused import: `sys`"
    digest = distill_log("\n".join(rows), 100, DEFAULT_ENCODING)
    assert "records" not in digest.rendering.split("\n", 1)[0]


def test_an_excerpt_keeps_the_logs_last_lines_before_lines_holding_only_the_asks_weak_terms() -> None:
    # Lines of one length, most of them holding one of the ask's terms, each term on a sixth of the lines: all
    # weaker than the line naming m1 with three of them; the last line says how it ends.
    detail = " ".join(f"{_WORDS[n % 10]}={n * 13 % 97}" for n in range(12))
    rows = [f"10:{n:02d} {row} {detail}" for n, row in enumerate(_distinct_rows(60))]
    for at in range(2, 58):
        term = ("request", "member", "answer", "", "", "")[at % 6]
        if term:
            rows[at] = f"10:{at:02d} {term} {at} sent to the gateway {detail}"
    rows[30] = f"10:30 member m1 gave up, never answered: no quorum {detail}"
    rows.append(f"10:59 campaign for leader lost again at term 16 {detail}")
    log = "\n".join(rows)
    target = int(count_tokens(log, DEFAULT_ENCODING) * 0.55)
    ask = AskTerms.of("Why does member m1 never answer a request?")
    rendering = distill_log(log, target, DEFAULT_ENCODING, ask=ask).rendering
    assert "excerpt" in rendering.split("\n", 1)[0]
    assert "member m1 gave up, never answered: no quorum" in rendering
    assert "campaign for leader lost again at term 16" in rendering


def test_an_excerpt_keeps_records_a_level_calls_errors_before_lines_saying_a_word_of_trouble() -> None:
    detail = " ".join(f"{_WORDS[n % 10]}={n * 13 % 97}" for n in range(10))
    rows = [f"10:{n:02d} [Note] {_WORDS[n % 10]} {_WORDS[n // 10 % 10]} {n * 37 % 900} {detail}" for n in range(40)]
    # Four errors among four notes saying "failed" and four warnings, each said once: every kind as rare.
    troubles = [
        "[Note] the probe of peer {n} failed",
        "[Warning] state file {n} is missing, starting afresh",
        "[ERROR] transfer could not prepare its donor {n}",
        "[Note] handshake with {n} failed twice",
        "[Warning] the clock of node {n} drifts",
        "[ERROR] receiver {n} aborted the snapshot",
        "[Note] retry of channel {n} failed",
        "[Warning] slow disk under member {n}",
        "[ERROR] member {n} left the view unrecoverably",
        "[Note] lookup of {n} failed once",
        "[Warning] queue {n} is half full",
        "[ERROR] the joiner {n} exited with status 32",
    ]
    for at, trouble in zip(range(5, 36, 2), troubles, strict=False):
        rows[at] = f"10:{at:02d} {trouble.format(n=at * 7)} {detail}"
    log = "\n".join(rows)
    rendering = distill_log(log, int(count_tokens(log, DEFAULT_ENCODING) * 0.3), DEFAULT_ENCODING).rendering
    assert "excerpt" in rendering.split("\n", 1)[0]
    assert [row for row in rows if "[ERROR]" in row and row not in rendering] == []
    assert [row for row in rows if "[Note]" in row and "failed" in row and row not in rendering] != []


def test_an_excerpt_keeps_the_heading_a_kept_line_is_indented_under() -> None:
    rows = []
    for file in range(6):
        rows.append(f"/src/lib/{_WORDS[file]}.js")
        for n in range(10):
            said = f"{_WORDS[(n + file) % 10]} {_WORDS[n * 3 % 10]} {_WORDS[(n * 7 + file) % 10]} {n * file}"
            rows.append(f"  {n * 31 + file + 10}:{n % 9 + 3}  error  {said}  no-{_WORDS[n]}")
        rows.append("")
    rows[3 * 12 + 6] = "  301:9  error  Read-only global 'process' should not be modified  no-global-assign"
    log = "\n".join(rows)
    ask = AskTerms.of("Which file overwrites a global?")
    rendering = distill_log(log, int(count_tokens(log, DEFAULT_ENCODING) * 0.4), DEFAULT_ENCODING, ask=ask).rendering
    assert "excerpt" in rendering.split("\n", 1)[0]
    # The file's name comes with its one asked diagnostic, and says it was kept for that line's sake, not its own.
    assert "/src/lib/delta.js\n" in rendering and rows[3 * 12 + 6] + ASK_MARK in rendering


def test_an_excerpt_keeps_the_banner_over_a_kept_line() -> None:
    rows = []
    for unit in range(8):
        rows.append(f"=========== unit {unit} of the array, its drive's identity and counters ===========")
        for n in range(9):
            rows.append(f"{_WORDS[(n + unit) % 10]} {_WORDS[n * 3 % 10]} {n * unit + 11} {_WORDS[(n * 7 + unit) % 10]}")
    rows[5 * 10 + 9] = "reading the spare table: bad checksum 0x3e"
    log = "\n".join(rows)
    ask = AskTerms.of("Which unit has the bad checksum?")
    rendering = distill_log(log, int(count_tokens(log, DEFAULT_ENCODING) * 0.3), DEFAULT_ENCODING, ask=ask).rendering
    assert "excerpt" in rendering.split("\n", 1)[0]
    # The lines under a banner are at its indent: the banner, not an indented heading, says which unit they are of.
    assert rows[5 * 10] + "\n" in rendering and rows[5 * 10 + 9] + ASK_MARK in rendering


def _build_errors(count: int) -> list[str]:
    """A build's errors, each on its own line under a long Windows path: many tokens a character."""
    root = "[ERROR] /C:/Users/build-agent/Desktop/Work/checkouts/refine/main/src/com/example/refine"
    return [f"{root}/{_word(n)}/{_WORDS[n % 10]}Model.java:[{n * 7 + 3},{n % 40 + 1}] cannot find symbol"
            for n in range(count)]  # fmt: skip


def test_an_excerpt_of_lines_denser_than_the_logs_average_still_fits_its_target() -> None:
    rows = []
    for n, error in enumerate(_build_errors(40)):
        rows += [f"[INFO] step {n} of the {_word(n)} module done", error]
    log = "\n".join(rows)
    target = int(count_tokens(log, DEFAULT_ENCODING) * 0.6)
    digest = distill_log(log, target, DEFAULT_ENCODING)
    # Each line is counted for its own tokens, with its mark and the gap notes it opens: the excerpt is not planned
    # from the log's average, missed, and given up for templates.
    assert "excerpt" in digest.rendering.split("\n", 1)[0]
    assert target * 0.95 <= digest.tokens <= target


def test_the_excerpt_filling_a_rendering_leaves_out_the_lines_it_shows() -> None:
    rows = [f"10:{n:02d} worker {n} finished batch {n * 7} of the {_word(n)} queue" for n in range(40)]
    rows[25] = "10:25 worker 25 lost its lease on the shard map"
    log = "\n".join(rows)
    distiller = LogDistiller(log, ask=AskTerms.of("Why did worker 25 lose its lease?"))
    rendering = f"[40-line log]\n×1 {rows[25]}{ASK_MARK}\n×1 {rows[39]}"
    full = count_tokens(log, DEFAULT_ENCODING)
    filled, _ = distiller.filled(
        rendering, count_tokens(rendering, DEFAULT_ENCODING), full - 20, DEFAULT_ENCODING, full
    )
    added = filled.removeprefix(rendering)
    # The rendering quotes the lease line and the last line, marked and counted: the excerpt under it does not.
    assert added.startswith("\n" + FILL_HEADING) and rows[24] in added
    assert rows[25] not in added and rows[39] not in added


def test_an_excerpts_line_of_thousands_of_characters_is_cut_around_the_asks_terms() -> None:
    buffer = "".join(f"\\n# line {n} of the launcher script" for n in range(120))
    rows = [f"478760 12:21:46.{n:06d} close({n}) = 0 <0.000011>" for n in range(30)]
    rows[12] = f'478760 12:21:46.000012 read(10</usr/lib/launcher.sh>, "{buffer} exec firefox-bin", 8192) = 4096'
    log = "\n".join(rows)
    ask = AskTerms.of("Where does it exec firefox-bin?")
    rendering = distill_log(log, int(count_tokens(log, DEFAULT_ENCODING) * 0.6), DEFAULT_ENCODING, ask=ask).rendering
    assert "excerpt" in rendering.split("\n", 1)[0]
    assert "exec firefox-bin" in rendering and "characters elided" in rendering


def _killed_workers(event: str) -> str:
    """A server's log: ordinary lines, and three of one event whose request is one of two spellings."""
    rows = [f"10:{n // 60:02d}:{n % 60:02d} INFO served {_word(n)} in {n % 7} ms" for n in range(60)]
    for at, request in ((10, "/delay/8"), (30, "/drip?duration=9"), (50, "/delay/8")):
        rows[at] = f"10:00:{at} {event} worker {at % 7} killed on GET {request} after 6 seconds"
    return "\n".join(rows)


def test_a_merged_template_does_not_show_its_first_variants_word_as_every_records() -> None:
    rendering = distill_log(_killed_workers("NOTE"), 300, DEFAULT_ENCODING).rendering
    # Two of three say /delay/8, the first and the last: the template does not claim all three do.
    assert f"{TIMES}3 NOTE worker <*> killed on GET <*> after <*> seconds" in rendering


def test_an_asked_merged_template_shows_the_first_record_of_each_of_its_few_variants() -> None:
    log = _killed_workers("NOTE")
    rendering = distill_log(log, 300, DEFAULT_ENCODING, ask=AskTerms.of("What got them killed?")).rendering
    assert "e.g. 10:00:10 NOTE worker 3 killed on GET /delay/8" in rendering
    assert "e.g. 10:00:30 NOTE worker 2 killed on GET /drip?duration=9" in rendering
    # The variant said again (its clock aside) is not quoted again.
    assert "e.g. 10:00:50" not in rendering


def test_an_excerpts_long_last_lines_are_cut_to_leave_room_for_the_asked_ones() -> None:
    rows = [f"21:53:{n:02d} [info]: adding source type=forward port={24000 + n} of {_word(n)}" for n in range(40)]
    rows[20] = '21:53:20 [info]: adding match pattern="web.**" type="stdout"'
    access = " ".join(f'"GET /wp-includes/js/{_word(n)}.min.js?ver=6.2.{n} HTTP/1.1" 200 {n * 97}' for n in range(12))
    rows += [f'21:54:{n:02d} web: {{"source":"stdout","log":"{access}"}}' for n in range(5)]
    log = "\n".join(rows)
    ask = AskTerms.of("Where does the match send the records?")
    rendering = distill_log(log, int(count_tokens(log, DEFAULT_ENCODING) * 0.55), DEFAULT_ENCODING, ask=ask).rendering
    # Each of the five access lines at the end is cut to a share of the target: the asked line stays.
    assert "excerpt" in rendering.split("\n", 1)[0]
    assert rows[20] in rendering and rendering.count("characters elided") == 5


def test_an_error_record_holding_only_the_asks_weaker_terms_stays_an_alert_in_an_excerpt() -> None:
    rows = [f"10:00:{n:02d} [Note] node {n % 5} finished its {_WORDS[n % 10]} step" for n in range(20)]
    rows[5] = "10:00:05 [Note] node 3 asked to join the group"
    rows[12] = "10:00:12 [Note] db2 asked to join the group as a joiner"
    rows[14] = "10:00:14 [ERROR] state transfer crashed, leaving the group to join again later"
    config = LogConfig()
    records, heads, _ = records_of(rows, "\n".join(rows), config)
    ranks, _ = excerpt_ranks(rows, records, heads, AskTerms.of("Why does db2 abort when it tries to join?"), config)
    reason = {index: reason for reason, _, index in ranks}
    # The line naming db2 is the asked one; the error names only "join", which other lines say too: it stays an
    # error record's head, not a weakly asked line kept after the log's first and last lines.
    assert (reason[12], reason[14]) == (EXCERPT_ASK, EXCERPT_ALERT_HEAD)


def _job_failures(count: int) -> str:
    """A job runner's log: each failure a warning with a Ruby backtrace under it, mostly an installed gem's."""
    gems = [f"/srv/app/shared/bundle/ruby/3.2.0/gems/runner-7.1.0/lib/runner/step{depth}.rb:{depth}:in `call'"
            for depth in range(30)]  # fmt: skip
    lines = []
    for number in range(count):
        lines.append(f"2026-12-07T10:{number:02d}:00Z 4411 TID-9 INFO: start job {number}")
        lines.append(f"2026-12-07T10:{number:02d}:01Z 4411 TID-9 WARN: ActiveRecord::RangeError on job {number}")
        lines.extend([*gems[:20], "/srv/app/releases/42/app/models/folder.rb:34:in `rebuild!'", *gems[20:]])
    return "\n".join(lines)


def test_a_records_continuation_shows_the_applications_frame_before_the_installed_packages() -> None:
    rendering = distill_log(_job_failures(40), 400, DEFAULT_ENCODING).rendering
    assert "app/models/folder.rb:34:in `rebuild!'" in rendering
    # Three lines: the first under the head, the application's frame, then the first gem's; the others counted.
    shown = "step1.rb:1:in `call'\n      … [18 continuation lines elided] …\n      /srv/app/releases/42/app"
    assert shown in rendering and "folder.rb:34:in `rebuild!'\n      … [10 continuation lines elided] …" in rendering


def test_the_telling_continuation_lines_are_the_first_then_the_applications_then_the_asks() -> None:
    gems = [f"/srv/app/shared/bundle/ruby/3.2.0/gems/runner-7.1.0/lib/runner/step{depth}.rb:{depth}:in `call'"
            for depth in range(30)]  # fmt: skip
    gems[25] = gems[25].replace("call", "retry_job")
    record = ["ERROR: RangeError on job 7", *gems[:20], "/srv/app/releases/42/app/models/folder.rb:34", *gems[20:]]
    ask = AskTerms.of("Why does the job retry?")
    # The first line under the head, the application's frame, then the gem frame naming the ask's words.
    assert telling_continuation(record, 0, len(record), 3, ask, 256) == [1, 21, 27]
    assert telling_continuation(record, 0, len(record), 3, None, 256) == [1, 2, 21]
    # A line of no word (a gutter, a pointer) comes after every line that says something, the first one too.
    quoted = [
        "error[no-var]: var is not allowed",
        "   | ",
        "15 | var cart = 1",
        "   | ^^^",
        "  docs: https://x.example",
    ]
    assert telling_continuation(quoted, 0, len(quoted), 2, None, 256) == [2, 4]
    # Only the first lines read are ranked: past them the application's frame is not looked for.
    assert telling_continuation(record, 0, len(record), 3, None, 10) == [1, 2, 3]


def test_an_excerpt_keeps_the_message_under_a_failure_heading_with_the_heading() -> None:
    rows = _distinct_rows(100)
    for n in range(6):
        heading = f"{n + 1}. Failure: ledger check {n} (@test-ledger.R#{n}) -----"
        rows[30 + n * 7 : 30 + n * 7] = [heading, f"`t{n}` is 0."]
    log = "\n".join(rows)
    # Room for half the lines: a failure is told by its heading and the message under it, not by its heading alone.
    target = count_tokens(log, DEFAULT_ENCODING) // 2
    rendering = distill_log(log, target, DEFAULT_ENCODING, ask=AskTerms.of("Why is the build red?")).rendering
    assert "excerpt" in rendering.split("\n", 1)[0]
    kept = [n for n in range(6) if f"Failure: ledger check {n} " in rendering]
    assert kept
    assert [n for n in range(6) if f"`t{n}` is 0." in rendering] == kept


def test_an_excerpt_keeps_no_blank_line_alone_between_two_gaps() -> None:
    rows = [
        f"{row} " + " ".join(f"field{n * 7 + k}={n * k}" for k in range(8)) for n, row in enumerate(_distinct_rows(40))
    ]
    for at in range(38, 2, -3):
        rows.insert(at, "")
    log = "\n".join(rows)
    size = count_tokens(log, DEFAULT_ENCODING)
    # Targets that leave the room past the last long line that fits to blank lines, each costing a gap's note.
    for target in range(size // 2, size // 2 + 40, 4):
        lines = distill_log(log, target, DEFAULT_ENCODING).rendering.split("\n")
        assert "excerpt" in lines[0]
        gaps = [index for index, line in enumerate(lines) if line.startswith("… [")]
        assert [index for index in gaps if index + 2 in gaps and not lines[index + 1].strip()] == []

"""Each rung of the classification ladder, and each accepted misread."""

from __future__ import annotations

import pytest

from organs.stomach.classify import classify, looks_like_path


def kind_of(text: str, *, fenced: bool = False) -> str:
    return classify(text, fenced=fenced).kind


def test_rung_1_a_fence_is_a_hint_its_content_walks_the_ladder() -> None:
    found = classify("2024-01-01 10:00:00 ERROR boom\n2024-01-01 10:00:01 INFO retry", fenced=True, language="log")
    assert found.kind == "log"
    assert found.reason.startswith("rung 1: fenced ```log")
    trace = 'Traceback (most recent call last):\n  File "a.py", line 3, in <module>\n    f()\nKeyError: 1'
    assert classify(trace, fenced=True, language="python").kind == "stack_trace"


def test_rung_1_prose_in_a_box_is_code_unless_the_tag_names_output() -> None:
    assert classify("make all then run it again", fenced=True).kind == "code"
    assert classify("make all then run it again", fenced=True, language="python").kind == "code"
    assert classify("server listening and ready", fenced=True, language="console").kind == "log"


@pytest.mark.parametrize(
    "token",
    ["./src/net", "../lib/mod.rs", "/repo/src", "src/net.rs", "net.rs", "file:///a/b", "docs/adr/0006-x.md"],
)
def test_rung_2_path_tokens_are_anchors(token: str) -> None:
    found = classify(token, fenced=False)
    assert found.kind == "path_ref"
    assert found.reason.startswith("rung 2")


@pytest.mark.parametrize(
    "token",
    ["https://example.com/a/b", "example.com/path", "github.com/acme/repo", "www.foo.io/x", "src/net.rs is broken"],
)
def test_rung_2_urls_hostnames_and_spaced_text_are_not_paths(token: str) -> None:
    assert kind_of(token) == "prose"


def test_accepted_misread_scheme_less_source_file_reads_as_anchor() -> None:
    assert looks_like_path("something.rs")
    assert looks_like_path("example.com/path.rs")


PYTHON_TRACE = """Traceback (most recent call last):
  File "app.py", line 10, in <module>
    main()
  File "app.py", line 6, in main
    raise ValueError("bad input")
ValueError: bad input"""

JVM_TRACE = """Exception in thread "main" java.lang.IllegalStateException: boom
\tat com.acme.Service.run(Service.java:42)
\tat com.acme.Main.main(Main.java:7)
Caused by: java.io.IOException: disk full
\tat com.acme.Disk.write(Disk.java:12)
\t... 2 more"""

JS_TRACE = """TypeError: Cannot read properties of undefined (reading 'id')
    at getUser (/srv/app/users.js:12:19)
    at async handler (/srv/app/routes.js:40:5)"""

GO_TRACE = """goroutine 1 [running]:
main.divide(...)
\t/home/me/app/main.go:8 +0x1d
main.main()
\t/home/me/app/main.go:12 +0x25"""

RUST_PANIC = """thread 'main' panicked at src/main.rs:4:5:
index out of bounds: the len is 3 but the index is 7
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"""

DOTNET_TRACE = """System.NullReferenceException: Object reference not set to an instance of an object.
   at Acme.Orders.Checkout(Cart cart) in C:\\src\\Orders.cs:line 42
   at Acme.Program.Main(String[] args) in C:\\src\\Program.cs:line 9"""


@pytest.mark.parametrize("trace", [PYTHON_TRACE, JVM_TRACE, JS_TRACE, GO_TRACE, RUST_PANIC, DOTNET_TRACE])
def test_rung_3_stack_traces_of_each_runtime(trace: str) -> None:
    found = classify(trace, fenced=False)
    assert found.kind == "stack_trace", found.reason
    assert found.reason.startswith("rung 3")


def test_rung_3_a_sentence_mentioning_an_error_is_not_a_header() -> None:
    assert kind_of("We keep getting a NullPointerException: it started after the deploy.") == "prose"


def test_rung_4_pipe_delimited_log_is_a_log_not_a_table() -> None:
    log = "\n".join(f"2024-05-01 10:00:0{i} | {'ERROR' if i == 3 else 'INFO'} | request {i} served" for i in range(6))
    found = classify(log, fenced=False)
    assert found.kind == "log"
    assert found.reason.startswith("rung 4")
    assert "6/6 lines start with a clock" in found.reason


def test_rung_5_markdown_table_with_a_timestamp_column_is_a_table() -> None:
    table = "| time | requests |\n|---|---|\n| 2024-05-01 10:00:00 | 42 |\n| 2024-05-01 10:01:00 | 40 |"
    found = classify(table, fenced=False)
    assert found.kind == "table"
    assert found.reason.startswith("rung 5")


def test_rung_5_csv_of_numbers_is_a_table_but_comma_spliced_prose_is_not() -> None:
    assert kind_of("id,cpu,mem\n1,0.5,128\n2,0.7,256\n3,0.1,64") == "table"
    prose = (
        "I restarted the service, cleared the cache, and redeployed the whole stack\n"
        "then it failed again, the logs were empty, nothing at all made any sense"
    )
    assert kind_of(prose) == "prose"


def test_accepted_misread_csv_of_sentences_reads_as_prose() -> None:
    csv_of_sentences = (
        "step,what happened\n1,the service refused every new connection\n"
        "2,the operator restarted the whole cluster by hand"
    )
    assert kind_of(csv_of_sentences) == "prose"


def test_rung_5_tab_delimited_table() -> None:
    assert kind_of("name\tstate\nweb\tup\ndb\tdown") == "table"


def test_rung_6_log_without_timestamps() -> None:
    found = classify("[INFO] starting worker\n[WARN] queue is slow\n[ERROR] worker died", fenced=False)
    assert found.kind == "log"
    assert found.reason.startswith("rung 6")


def test_rung_6_space_padded_info_log_is_a_log_not_an_aligned_table() -> None:
    log = "INFO  server started on :8080\nWARN  cache miss ratio high\nINFO  request served in 12ms"
    assert kind_of(log) == "log"


def test_rung_7_kubectl_output_is_a_table() -> None:
    kubectl = """NAME                     READY   STATUS    RESTARTS   AGE
web-7d4b9c6f5d-abcde     1/1     Running   0          5d
db-0                     1/1     Running   2          12d
cache-5f6b7c8d9e-xyz12   0/1     Pending   0          1m"""
    found = classify(kubectl, fenced=False)
    assert found.kind == "table"
    assert found.reason.startswith("rung 7")


def test_rung_8_unfenced_code_and_prose() -> None:
    code = "def handler(event):\n    user = event['user']\n    return user.id"
    assert kind_of(code) == "code"
    assert classify("The deploy went fine yesterday.", fenced=False).reason.startswith("rung 8")


def test_log_containing_a_java_trace_stays_a_log() -> None:
    lines = [f"2024-05-01 10:00:{i % 60:02d},000 INFO worker {i} ok" for i in range(60)]
    lines[30:30] = [
        "2024-05-01 10:00:30,500 ERROR job failed: java.lang.IllegalStateException: boom",
        *JVM_TRACE.split("\n")[1:],
    ]
    assert kind_of("\n".join(lines)) == "log"


def test_rung_4b_clock_led_pipe_records_with_a_message_are_a_log() -> None:
    log = "\n".join(f"20240501-10:00:0{i}:123|Worker_{i % 2}|3000{i}|onReceive action: job {i} done" for i in range(6))
    found = classify(log, fenced=False)
    assert found.kind == "log"
    assert found.reason.startswith("rung 4b")


def test_rung_4b_leaves_clock_led_metrics_csv_a_table() -> None:
    metrics = "\n".join(f"2024-05-01 10:00:0{i},{i * 3},{i * 7}" for i in range(6))
    assert classify(metrics, fenced=False).kind == "table"

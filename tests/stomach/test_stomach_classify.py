"""Each rung of the classification ladder, and each accepted misread."""

from __future__ import annotations

import re

import pytest

from organs.stomach.core.classify import ladder
from organs.stomach.core.classify.ladder import classify, looks_like_path
from organs.stomach.core.shapes.line_shapes import is_prompt


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


def test_rung_1_many_lines_of_no_shape_in_an_untagged_box_are_output() -> None:
    session = "\n".join(f"Loading module {name} at its base" for name in "abcdefghij")
    found = classify(session, fenced=True)
    assert found.kind == "log"
    assert classify("\n".join(session.split("\n")[:3]), fenced=True).kind == "code"
    assert classify(session, fenced=True, language="python").kind == "code"


def test_rung_1_fenced_code_stays_code() -> None:
    found = classify("def handler(event):\n    return event['user']", fenced=True, language="python")
    assert found.kind == "code"
    assert found.reason.startswith("rung 1")


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


def test_rung_5_boxes_drawn_side_by_side_are_a_table() -> None:
    plan = "\n".join(
        [
            "┌───────────────┐",
            "│  HASH_JOIN    │",
            "│   ~120 rows   ├──────────────┐",
            "└───────┬───────┘              │",
            "┌───────┴───────┐┌─────────────┴─┐",
            "│   SEQ_SCAN    ││   SEQ_SCAN    │",
            "│  ~5,000 rows  ││   ~14 rows    │",
            "└───────────────┘└───────────────┘",
        ]
    )
    found = classify(plan, fenced=False)
    assert (found.kind, found.reason) == ("table", "rung 5: box-drawn table (its rows drawn in boxes)")


def test_rung_5_tab_delimited_table() -> None:
    assert kind_of("name\tstate\nweb\tup\ndb\tdown") == "table"


def test_a_config_indented_by_tabs_is_not_a_tab_delimited_table() -> None:
    keys = ["guest account = nobody", "map to guest = Bad User", "server min protocol = SMB2_02", "log level = 0"]
    config = "[global]\n" + "\n".join(f"\t{key}" for key in keys * 4)
    assert kind_of(config) != "table"


def test_rung_6_log_without_timestamps() -> None:
    found = classify("[INFO] starting worker\n[WARN] queue is slow\n[ERROR] worker died", fenced=False)
    assert found.kind == "log"
    assert found.reason.startswith("rung 6")


def test_a_log_whose_every_line_is_tabbed_in_is_a_log_not_a_tab_delimited_table() -> None:
    # A log quoted in a post, each line indented by one tab: the tab is the quote's, not a column.
    log = "\n".join(
        f"\tMar 22 16:32:{second:02d} db01 keepalived[{400 + second}]: VRRP_Instance(V1) sent advert {second}"
        for second in range(12)
    )
    found = classify(log, fenced=False)
    assert (found.kind, found.reason.split(":")[0]) == ("log", "rung 5d")
    assert kind_of(log.replace("\t", "")) == "log"


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


def test_rung_7b_records_opening_with_a_pid_and_a_compact_clock_are_a_log() -> None:
    records = "\n".join(
        f" {12480 + n}:20180217:2129{n:02d}.319 Starting the collector for item number {n} of this host"
        for n in range(6)
    )
    found = classify(records, fenced=False)
    assert found.kind == "log"
    assert found.reason.startswith("rung 7b")
    assert kind_of("\n".join(f"1.2 step {n} of the guide says to open the panel" for n in range(6))) == "prose"


def test_rung_4e_findings_located_to_a_line_and_column_are_diagnostics() -> None:
    findings = "\n".join(
        f"internal\\poller\\batch.go:{30 + n}:21: Error return value of `f.Close` is not checked (errcheck)"
        for n in range(4)
    )
    found = classify(findings, fenced=False)
    assert found.kind == "log"
    assert found.reason.startswith("rung 4e")


def _checked_files(count: int) -> list[str]:
    return [f"Checking src/part{n}.cpp ...\n{n}/{count} files checked {n * 100 // count}% done" for n in range(count)]


def test_rung_4e_a_checkers_findings_among_its_progress_lines_count_apart_from_the_source_they_quote() -> None:
    finding = "src/part{n}.h:9:5: warning: Struct 'Line{n}' has a constructor with 1 argument. [noExplicitConstructor]"
    lines = _checked_files(40)
    for n in (n for n in range(40) if n % 4 != 3):
        lines[n] += "\n" + finding.format(n=n) + f"\n    Line{n}(int n) : number(n) {{}}\n    ^"
    found = classify("\n".join(lines), fenced=False)
    assert found.kind == "log"
    assert found.reason.startswith("rung 4e")


def test_rung_4e_a_checkers_findings_without_their_quotes_are_too_few_among_its_progress_lines() -> None:
    finding = "src/part{n}.h:9:5: warning: Struct 'Line{n}' has a constructor with 1 argument. [noExplicitConstructor]"
    lines = _checked_files(40)
    for n in (n for n in range(40) if n % 4 != 3):
        lines[n] += "\n" + finding.format(n=n) + f"\n    Line{n}(int n) : number(n) {{}}\n    // fine"
    assert not classify("\n".join(lines), fenced=False).reason.startswith("rung 4e")


def _failed_boots(frames: int) -> str:
    boots = [f"=== puma startup: 2016-05-0{day} 07:45:01 +0800 ===" for day in range(1, 8)]
    trace = ["/srv/gems/bundler/runtime.rb:34:in `setup': You have already activated puma 3.4.0 (Gem::LoadError)"]
    trace += [f"\tfrom /srv/gems/bundler/lib/step{n}.rb:{n + 10}:in `require'" for n in range(frames)]
    return "\n".join(boots + trace + boots[:3] + trace)


def test_rung_7d_a_programs_banners_among_its_tracebacks_are_a_log() -> None:
    found = classify(_failed_boots(frames=8), fenced=False)
    assert found.kind == "log"
    assert found.reason.startswith("rung 7d")


def test_rung_7d_a_few_frames_among_many_lines_are_no_log_of_tracebacks() -> None:
    assert not classify(_failed_boots(frames=2), fenced=False).reason.startswith("rung 7d")


def test_a_json_document_whose_nesting_aligns_its_keys_is_code_not_a_table() -> None:
    document = """{
    "type": "index",
    "dataSource": "clicks_weekly",
    "granularitySpec": {
        "type": "uniform",
        "gran": "WEEK",
        "intervals": ["2014-04-06T00:00:00.000Z/2014-04-13T00:00:00.000Z"]
    },
    "firehose": {
        "type": "ingestSegment",
        "dataSource": "clicks"
    }
}"""
    assert classify(document, fenced=False).kind == "code"


def test_rung_6_a_tools_debug_log_numbering_its_lines_before_their_levels_is_a_log() -> None:
    lines = ["0 silly argv {", "0 silly argv   _: [ 'publish' ],", "0 silly argv }", "1 notice cli v7.3.0"]
    lines += [
        f"{n} verbose git [ 'tag', 'v0.1.{n}' ]" if n % 2 else f"{n} silly gitPush origin main" for n in range(2, 30)
    ]
    found = classify("\n".join(lines), fenced=False)
    assert found.kind == "log"
    assert found.reason.startswith("rung 6")


def _scan_report() -> list[str]:
    return [
        f"Host 10.0.{n}.1 up ({n * 0.013:.3f}s latency); ports 22/tcp open ssh, 80/tcp {'open' if n % 2 else 'shut'}"
        for n in range(10)
    ]


def test_rung_8m_many_lines_no_rung_reads_and_few_of_them_words_are_a_programs_output() -> None:
    found = classify("\n".join(_scan_report()), fenced=False)
    assert found.kind == "log"
    assert found.reason.startswith("rung 8m")


def test_rung_8m_a_block_that_asks_is_the_users_whatever_its_lines() -> None:
    found = classify("\n".join([*_scan_report(), "why is port 80 shut on half of them?"]), fenced=False)
    assert found.kind == "prose"


def test_rung_8m_lines_of_plain_words_are_prose() -> None:
    caches = ["image", "page", "query", "session", "asset", "thumbnail", "font", "route", "template"]
    said = [f"the {cache} cache filled up again last night and the pages came back slower" for cache in caches]
    assert classify("\n".join(said), fenced=False).kind == "prose"
    # The same line of words again and again but for a number is a program's, though: people vary theirs.
    said_again = [
        f"the cache filled up again on night {n} and the pages came back slower than before" for n in range(9)
    ]
    assert classify("\n".join(said_again), fenced=False).kind == "log"


def test_rung_8j_a_json_document_on_one_line_is_code() -> None:
    document = '{"inputs":{"src/main.ts":{"bytes":5120,"imports":[{"path":"src/app.ts","kind":"import-statement"}]}}}'
    found = classify(document, fenced=False)
    assert found.kind == "code"
    assert found.reason.startswith("rung 8j")


def test_rung_8j_a_sentence_quoting_json_stays_prose() -> None:
    assert kind_of('I sent {"a": 1} and got an empty reply from the server, twice in a row now') == "prose"


_TCL_LIKE = """# board script
if { [info exists CHIP] } {
\tset _CHIP $CHIP
} else {
\tset _CHIP rtl
}
proc reset_board {} {
\tmww 0x40000210 0x211157
\tsleep 10
}
transport select swd
adapter speed 500"""

_ELIXIR_LIKE = """defmodule Shelf do
  @type slot :: :a | :b | nil
  defstruct [:a, :b]

  def put(shelf, slot, item) do
    case Map.fetch(shelf, slot) do
      {:ok, nil} -> {:ok, Map.put(shelf, slot, item)}
      _ -> {:error, :taken}
    end
  end
end"""

_TERMS_LIKE = """{opts, [debug_info,
        {i, ["include"]},
        {src_dirs, ["src"]}]}.

{deps, [
        {lager, "3.6.8"},
        {jiffy, "0.15.2"}
       ]}.

{plugins, [rebar3_hex]}."""


_XML_LIKE = """<?xml version="1.0"?>
<!DOCTYPE shop PUBLIC "-//Shop//DTD 1.0//EN">
<shop name="cart">
  <module name="Checker">
    <property name="severity" value="warning"/>
    <module name="TreeWalker">
      <module name="FallThrough"/>
    </module>
  </module>
</shop>"""


@pytest.mark.parametrize("text", [_TCL_LIKE, _TERMS_LIKE, _XML_LIKE])
def test_rung_8n_lines_that_open_blocks_later_lines_close_are_source(text: str) -> None:
    found = classify(text, fenced=False)
    assert found.kind == "code"
    assert found.reason.startswith("rung 8n")


def test_rung_8_an_elixir_module_half_of_whose_written_lines_are_code_shaped_is_code() -> None:
    # Its blank line no longer counts against it, so the code rung reads it before the nesting rung does.
    assert classify(_ELIXIR_LIKE, fenced=False).reason == "rung 8: unfenced code (5/10 code-shaped lines)"


def test_rung_8n_a_programs_output_that_opens_blocks_it_never_closes_is_no_source() -> None:
    lines = [*_scan_report(), *(f"retrying host 10.0.{n}.1 in 5s -> {{" for n in range(4))]
    found = classify("\n".join(lines), fenced=False)
    assert found.reason.startswith("rung 8m")


def test_rung_7c_records_of_several_key_value_pairs_are_a_log() -> None:
    records = "\n".join(
        f'type=SYSCALL msg=audit(16110{n}.761:{n}): arch=c000003e syscall=59 success=yes exe="/usr/bin/ip"'
        for n in range(6)
    )
    found = classify(records, fenced=False)
    assert found.kind == "log"
    assert found.reason.startswith("rung 7c")
    settings = "\n".join(f"SETTING_{n}=value{n}" for n in range(6))
    assert kind_of(settings) == "code"


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


# --- fences are a hint, not a verdict ---------------------------------------------------------


def test_rung_1_a_fenced_trace_is_a_trace_whatever_the_tag() -> None:
    found = classify(JVM_TRACE, fenced=True, language="java")
    assert found.kind == "stack_trace"
    assert found.reason.startswith("rung 1") and "rung 3" in found.reason


def test_rung_1_a_fenced_log_is_a_log_and_a_language_tag_keeps_code() -> None:
    log = "2024-05-01 10:00:00 INFO start\n2024-05-01 10:00:01 ERROR boom\n2024-05-01 10:00:02 INFO retry"
    assert kind_of(log, fenced=True) == "log"
    assert classify("server started\nlistening on 8080", fenced=True, language="log").kind == "log"
    assert classify(log, fenced=True, language="python").kind == "code"


# --- traces of every common runtime -------------------------------------------------------------

PYTHON_CHAINED = """Traceback (most recent call last):
  File "/srv/shop/db.py", line 12, in connect
    conn = driver.open(
           ^^^^^^^^^^^^
ConnectionError: refused

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/srv/shop/cli.py", line 40, in main
    connect()
RuntimeError: cannot start"""

PHP_TRACE = """PHP Fatal error:  Uncaught RuntimeException: empty cart in /srv/shop/Cart.php:12
Stack trace:
#0 /srv/shop/Checkout.php(30): Shop\\Cart->total()
#1 [internal function]: Shop\\Checkout->run()
#2 {main}
  thrown in /srv/shop/Cart.php on line 12"""

RAILS_TRACE = """NoMethodError (undefined method `total' for nil):
  app/controllers/carts_controller.rb:12:in `show'
  actionpack (7.0.1) lib/action_controller/metal/basic_implicit_render.rb:6:in `send_action'"""

DART_TRACE = """Unhandled exception:
Bad state: cart is empty
#0      Cart.total (package:shop/cart.dart:42:7)
#1      main (file:///home/me/shop/bin/main.dart:7:3)"""

GO_DUMP = """panic: assignment to entry in nil map

goroutine 1 [running]:
main.(*Cart).Add(0xc000010000, {0x1, 0x2})
\t/home/me/shop/cart.go:12 +0x1d
main.main()
\t/home/me/shop/main.go:8 +0x25
exit status 2"""

DOTNET_INNER = """System.InvalidOperationException: checkout failed ---> System.IO.IOException: disk full
   at Shop.Disk.Write() in C:\\src\\Disk.cs:line 12
   --- End of inner exception stack trace ---
   at Shop.Checkout.Run() in C:\\src\\Checkout.cs:line 40"""

KERNEL_OOPS = """[   12.000001] BUG: unable to handle page fault for address: 0000000000001000
[   12.000002] CPU: 0 PID: 42 Comm: shopd Not tainted 6.1.0 #1
[   12.000003] RIP: 0010:cart_alloc+0x1c/0x30
[   12.000004] Call Trace:
[   12.000005]  <TASK>
[   12.000006]  ? __die+0x20/0x70
[   12.000007]  cart_ioctl+0x5a/0xb0
[   12.000008]  __x64_sys_ioctl+0x8d/0xd0
[   12.000009]  </TASK>"""


@pytest.mark.parametrize(
    "trace",
    [PYTHON_CHAINED, PHP_TRACE, RAILS_TRACE, DART_TRACE, GO_DUMP, DOTNET_INNER, KERNEL_OOPS],
    ids=["python-chained", "php", "rails", "dart", "go-dump", "dotnet-inner", "kernel"],
)
def test_rung_3_traces_of_more_runtimes(trace: str) -> None:
    found = classify(trace, fenced=False)
    assert found.kind == "stack_trace", found.reason


def test_rung_3_a_runtime_header_opens_a_trace_even_without_frames() -> None:
    assert kind_of("Unhandled exception:\nBad state: no element") == "stack_trace"
    assert kind_of("java.lang.RuntimeException: send failed\n  nested exception is:\njava.io.IOException: x") == (
        "stack_trace"
    )


def test_rung_3_a_log_whose_records_carry_traces_is_a_log() -> None:
    log = "\n".join(
        [
            "[2024-05-01 10:00:00] shop.ERROR: cart failed",
            "[stacktrace]",
            "#0 /srv/shop/Cart.php(12): Shop\\Cart->total()",
            "#1 {main}",
            "[2024-05-01 10:00:05] shop.INFO: retried",
        ]
    )
    assert kind_of(log) == "log"


# --- logs that are not one line per event -------------------------------------------------------


def test_rung_3b_a_terminal_session_takes_its_output_kind() -> None:
    assert kind_of("$ kubectl get pods\nNAME    READY   STATUS\nweb-1   1/1     Running\ndb-0    0/1     Pending") == (
        "table"
    )
    assert kind_of("$ ./deploy.sh\nuploading bundle\nrestarting the shop service") == "log"


def test_rung_3b_a_prompt_under_a_virtual_environments_name_opens_a_terminal_session() -> None:
    session = "(venv) ana@build-7:~/shop$ ./deploy.sh\nuploading bundle\nrestarting the shop service"
    assert classify(session, fenced=False).reason.startswith("rung 3b")
    assert kind_of("(venv) ana@build-7 said uploading bundle\nrestarting the shop service") == "prose"


def test_rung_3b_a_bracketed_prompt_opens_a_terminal_session() -> None:
    session = "[root@centos7 ~]# ./deploy.sh\nuploading bundle\nrestarting the shop service"
    assert classify(session, fenced=False).reason.startswith("rung 3b")
    # A bracketed tag without a prompt's closing mark is a log's tag, not a prompt.
    assert not is_prompt("[worker@shop-7] uploading bundle")


def test_rung_3b_a_ci_job_or_several_commands_make_a_log() -> None:
    job = "~~~ Preparing working directory\n$ git clone https://example.com/shop.git\nCloning into 'shop'...\n"
    assert kind_of(job + "Copying blob 1 of 3\nCopying blob 2 of 3") == "log"
    session = "$ make\ncc -o shop shop.c\n$ ./shop\nlistening on 8080"
    assert kind_of(session) == "log"


def test_a_diff_is_not_a_ci_job() -> None:
    diff = "--- a/shop.py\n+++ b/shop.py\n@@ -1,2 +1,2 @@\n-def total(cart):\n+def total(cart, tax):"
    assert kind_of(diff) != "log"


def test_npm_tool_levels_make_a_log() -> None:
    lines = [f"npm info step {i}" for i in range(4)] + ["npm WARN deprecated left-pad"]
    assert kind_of("\n".join(lines)) == "log"


def test_rung_4f_a_pytest_failure_section_is_a_test_report() -> None:
    report = "\n".join(
        [
            "_____________ test_total _____________",
            "",
            "    def test_total():",
            ">       assert total([1, 2]) == 4",
            "E       assert 3 == 4",
            "E        +  where 3 = total([1, 2])",
            "",
            "test_cart.py:12: AssertionError",
        ]
    )
    assert kind_of(report) == "log"


def test_rung_4c_json_lines_with_log_fields() -> None:
    lines = [f'{{"level":30,"time":"2024-05-01T10:00:0{i}Z","msg":"cart {i} saved"}}' for i in range(5)]
    found = classify("\n".join(lines), fenced=False)
    assert (found.kind, found.reason[:8]) == ("log", "rung 4c:")


def test_rung_4c_json_access_lines_whose_time_key_is_named_otherwise() -> None:
    padding = ",".join(f'"field_{n}":"{"x" * 20}"' for n in range(4))
    lines = [
        f'{{"duration":{i},{padding},"method":"GET","start_time":"2024-05-01T10:00:0{i}Z","response_code":200}}'
        for i in range(5)
    ]
    found = classify("\n".join(lines), fenced=False)
    assert (found.kind, found.reason[:8]) == ("log", "rung 4c:")


_COMPOSE_LINES = [
    "web-1    | 2024-05-01T10:00:00Z  * Serving shop app",
    "redis-1  | 1:M 01 May 2024 10:00:00.000 * Ready to accept connections",
    "web-1    | 2024-05-01T10:00:01Z  GET /cart returned 200",
    "web-1    | 2024-05-01T10:00:02Z  WARNING slow request",
]
# pm2 names a process by its id and its name.
_PM2_LINES = [
    "1|strapi  | [2026-02-27 15:46:47.665] error: Missing jwtSecret. Set it in config/plugins.js",
    "1|strapi  |     at Object.bootstrap (/srv/strapi/node_modules/plugin/bootstrap/index.js:150:23)",
    "1|strapi  | [2026-02-27 15:46:47.667] info: Shutting down Strapi",
    "0|nextjs  | [2026-02-27 15:46:48.001] ready on port 3000",
]


@pytest.mark.parametrize("lines", [_COMPOSE_LINES, _PM2_LINES], ids=["compose", "pm2"])
def test_rung_4d_a_source_column_is_a_log_not_a_table(lines: list[str]) -> None:
    found = classify("\n".join(lines), fenced=False)
    assert (found.kind, found.reason[:8]) == ("log", "rung 4d:")


def test_a_pipe_table_of_names_is_no_source_column() -> None:
    assert kind_of("name | state\nweb | up\ndb | down") == "table"


def test_rung_4e_compiler_diagnostics() -> None:
    assert kind_of("src/cart.c:12:5: error: unknown type name 'cart_t'") == "log"
    assert kind_of("Error: Cannot find module 'cart', how do I fix this?") == "prose"
    clang = "src/cart.c:12:5: warning: unused variable 'n'\n    int n;\n        ^\n1 warning generated."
    assert kind_of(clang) == "log"


def test_rung_4e_the_pretty_form_of_typescript_diagnostics() -> None:
    tsc = "src/cart.ts:12:5 - error TS2345: Argument of type 'string' is not assignable.\n\n12   total(cart.id);"
    found = classify(tsc, fenced=False)
    assert (found.kind, found.reason[:8]) == ("log", "rung 4e:")


def test_rung_4e_a_box_drawn_diagnostic_is_a_log() -> None:
    boxed = "\n".join(
        [
            "cart_bucket.main: Creating...",
            "╷",
            "│ Error: creating bucket: access denied",
            "│",
            "│   with cart_bucket.main,",
            '│   on main.tf line 4, in resource "cart_bucket" "main":',
            '│    4: resource "cart_bucket" "main" {',
            "╵",
        ]
    )
    found = classify(boxed, fenced=False)
    assert (found.kind, found.reason[:8]) == ("log", "rung 4e:")
    # The same words without a box are the user's.
    assert kind_of("Error: creating the bucket fails for me\nwith the cart bucket") == "prose"


def test_rung_4f_blank_lines_take_no_side_in_a_test_reports_share() -> None:
    # 5 runner lines among 15 written and 6 whitespace-only: a quarter of what is written, not of every line.
    failure = "--- FAIL: TestTotal (0.00s)\n    cart_test.go:12: got 3\n    cart_test.go:13: want 4\n    cart: [1 2]\n"
    failure += "\t\t\n"
    report = "".join([failure + "\t\t\n"] * 3) + "FAIL\nexit status 1\nFAIL\tshop/cart\t0.01s"
    found = classify(report, fenced=True)
    assert found.kind == "log"
    assert found.reason.endswith("rung 4f: a test run's report (5/15 runner lines)")
    testify = "--- FAIL: TestTotal (0.00s)\n    Error Trace:  cart_test.go:12\n    Error:  Not equal\nFAIL"
    assert classify(testify, fenced=False).reason == "rung 4f: a test run's report (3/4 runner lines)"


def test_rung_4f_test_report() -> None:
    report = "=========== test session starts ===========\nplatform linux\ncollected 12 items"
    assert kind_of(report) == "log"


def test_rung_5_a_csv_of_quoted_cells_is_a_table_whatever_its_cells_say() -> None:
    rows = ['"Problem","File","Line","Description"']
    rows += [
        f'"{n}","src/Cart{n}.java","{n * 3}","Avoid unused imports such as the one on this line, it is noise"'
        for n in range(9)
    ]
    found = classify("\n".join(rows), fenced=False)
    assert found.kind == "table"
    assert "quoted cells" in found.reason


def test_rung_5b_sql_client_results_are_a_table() -> None:
    session = "SELECT id, total FROM carts;\n id | total\n----+-------\n  1 |  9.50\n(1 row)"
    assert kind_of(session) == "table"


def test_rung_5b_a_boxed_mysql_result_is_a_table() -> None:
    result = "+----+-------+\n| id | total |\n+----+-------+\n|  1 |  9.50 |\n+----+-------+"
    assert classify(result, fenced=False).reason.startswith("rung 5b")


def test_rung_5b_a_log_printing_its_config_between_two_rules_is_no_result_set() -> None:
    rule = "+" + "-" * 60 + "+"
    lines = [f"[2024-05-01 10:00:0{n}.{n}00] I [main.c:{n}] cartd: step {n} done" for n in range(4)]
    lines += ["Final graph:", rule, "  1: volume cart", "  2:     type mgmt/cartd", "  3: end-volume", rule]
    lines += [f"[2024-05-01 10:00:1{n}.{n}00] E [main.c:{n}] cartd: mount of shop-{n} failed" for n in range(4)]
    assert kind_of("\n".join(lines)) == "log"


def test_rung_5c_multi_line_records() -> None:
    slow_log = "\n".join(
        [
            "# Time: 2024-05-01T10:00:00.000000Z",
            "# Query_time: 2.5  Lock_time: 0.0",
            "SELECT * FROM carts;",
            "# Time: 2024-05-01T10:00:03.000000Z",
            "# Query_time: 3.1  Lock_time: 0.0",
            "SELECT * FROM orders;",
        ]
    )
    assert kind_of(slow_log) == "log"
    record = '2024-05-01 10:00:00 ERROR cart failed {"exception":"RuntimeException",\n  "trace": "Cart.php:12"}'
    assert kind_of(record) == "log"


def test_rung_6_dmesg_and_tool_levels() -> None:
    assert kind_of("[    0.000000] Linux version 6.1\n[    0.000001] Command line: ro quiet") == "log"
    assert kind_of("npm info using npm@10\nnpm verb cli install\nnpm WARN deprecated left-pad") == "log"


def test_rung_7_right_aligned_numbers_under_a_ruled_header_are_a_table() -> None:
    rows = [" num     #instances         #bytes  class name", "-------------------------------------------"]
    rows += [f"{n:>4}:  {3_000_000 // n:>12}  {96_000_000 // n:>13}  shop.model.Item{n}" for n in range(1, 30)]
    found = classify("\n".join(rows), fenced=False)
    assert found.kind == "table"
    assert found.reason.startswith("rung 7:")


def test_rung_7_a_rule_below_a_runs_first_lines_still_fills_its_gutters() -> None:
    rows = [f"step {n}:  built  shop-{n}" for n in range(6)] + ["-" * 40, "all done in 4.2s", "ok"]
    assert not classify("\n".join(rows), fenced=False).reason.startswith("rung 7:")


def test_rung_7a_key_value_listing() -> None:
    listing = "Name:         web-1\nNamespace:    shop\nStatus:       Running\nIP:           10.0.0.7\n  Port:       80"
    assert kind_of(listing) == "table"


def test_rung_8_ini_section_is_code() -> None:
    assert kind_of("[Service]\nExecStart=/usr/bin/shopd\nRestart=always") == "code"


def test_wide_csv_with_long_name_cells_is_a_table() -> None:
    rows = ["airport,city,state,date,species,cost"]
    rows += [f"PORTLAND INTL JETPORT AIRFIELD,Portland,Maine,2024-05-0{i},gull,{i * 10}" for i in range(1, 6)]
    assert kind_of("\n".join(rows)) == "table"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ('Error: Invalid reference\n\n  on main.tf line 12, in resource "aws_instance" "web":', "log"),
        (" FAIL  src/cart.test.js\n  ● cart › totals\n    expected 4\nTests:       1 failed, 3 passed", "log"),
        ("info: Shop.Api[0]\n      Now listening on: http://localhost:5000\nfail: Shop.Api[13]\n      boom", "log"),
        ("  PID TTY          TIME CMD\n 4242 pts/0    00:00:01 python\n 4243 pts/0    00:00:00 ps", "table"),
        ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web", "code"),
        ('{\n  "name": "shop",\n  "version": "1.0.0"\n}', "code"),
        ("diff --git a/cart.py b/cart.py\n--- a/cart.py\n+++ b/cart.py\n@@ -1 +1 @@\n-a\n+b", "code"),
        ("SELECT id, total\nFROM carts\nWHERE total > 10\nORDER BY total DESC;", "code"),
        ('#!/bin/bash\nset -euo pipefail\nfor f in *.log; do\n  gzip "$f"\ndone', "code"),
        ("FROM python:3.11\nWORKDIR /app\nCOPY . .\nRUN pip install -r requirements.txt", "code"),
        ("Context: we run three replicas.\nSymptom: every tenth request hangs.\nQuestion: where to look?", "prose"),
        (
            "Fatal error: Unexpectedly found nil\nThread 0 Crashed:\n"
            "0   libswiftCore.dylib  0x00000001a1b2c3d4 $ss17_assertionFailure + 200",
            "stack_trace",
        ),
        ("** (RuntimeError) cart is empty\n    (shop 0.1.0) lib/shop/cart.ex:12: Shop.Cart.total/1", "stack_trace"),
        (
            "==42==ERROR: AddressSanitizer: heap-use-after-free on address 0x6020\n"
            "READ of size 4 at 0x6020 thread T0\n    #0 0x4b2b3c in cart_total /src/cart.c:12:3",
            "stack_trace",
        ),
    ],
    ids=[
        "terraform",
        "jest",
        "dotnet-log",
        "ps",
        "yaml",
        "json",
        "diff",
        "sql",
        "shell",
        "dockerfile",
        "prose-labels",
        "swift",
        "elixir",
        "asan",
    ],
)
def test_more_shapes_of_tools_and_runtimes(text: str, kind: str) -> None:
    assert kind_of(text) == kind, classify(text, fenced=False).reason


def test_the_ladder_docstring_lists_the_rungs_in_the_order_they_are_tried() -> None:
    listed = re.findall(r"(?m)^\s*(\d[a-z]?)\. ", ladder.__doc__ or "")
    assert listed == [ladder.FENCE_LABEL, ladder.PATH_LABEL, *(label for label, _ in ladder.LADDER)]


def test_rung_3_frames_without_an_exception_are_a_backtrace() -> None:
    backtrace = (
        "#0  0x00007f2a6a1c154d in __lll_lock_wait () from /lib64/libpthread.so.0\n"
        "#1  0x00007f2a6a1bcd68 in pthread_mutex_lock () from /lib64/libpthread.so.0\n"
        "#2  0x000000000045a1b2 in cache_put (c=0x1e3c010) at cache.c:118\n"
        "#3  0x0000000000412f03 in handle_request (req=0x7f2a40000b70) at server.c:301"
    )
    assert kind_of(backtrace) == "stack_trace"


def test_rung_3_two_frames_alone_are_not_yet_a_backtrace() -> None:
    frames = "#0  0x00007f2a6a1c154d in poll () from /lib64/libc.so.6\n#1  0x0000000000401a2c in main () at main.c:55"
    assert kind_of(frames) != "stack_trace"


def _samples(header: str, rows: int) -> list[str]:
    """A sample report's table: a header row under a clock, then rows of a clock and numbers, then its average."""
    lines = [f"06:02:42  {header}"]
    lines += [f"06:{2 + n // 12:02d}:{n % 12 * 5:02d}  all  {n * 7 % 100}.25  0.00  {n % 9}.50" for n in range(rows)]
    return [*lines, "Average:  all  50.27  0.00  6.11"]


def test_rung_5c_samples_on_a_clock_under_their_header_are_a_table() -> None:
    samples = ["Linux 6.1 (vm) \t12/07/26", "", *_samples("CPU  %user  %nice  %system", 30)]
    found = classify("\n".join(samples), fenced=False)
    assert (found.kind, found.reason.split(":")[0]) == ("table", "rung 5c")


def test_rung_5c_a_log_whose_clocks_are_followed_by_words_is_no_samples() -> None:
    log = [f"06:02:{n:02d}  worker {n} picked job {n * 7} from queue" for n in range(30)]
    found = classify("\n".join(["06:02:00  TIME  MESSAGE  SOURCE", *log]), fenced=False)
    assert found.reason.split(":")[0] != "rung 5c"


def test_rung_3_a_faulthandler_dump_of_every_thread_is_a_stack_trace() -> None:
    threads = [
        f"Thread 0x00007f94d9a1{n}6c0 (most recent call first):\n"
        f'  File "/srv/jobs/refresh.py", line {20 + n} in update\n'
        '  File "/usr/lib/python3.11/threading.py", line 982 in run'
        for n in range(4)
    ]
    found = classify("Timeout (0:00:20)!\n" + "\n\n".join(threads), fenced=False)
    assert (found.kind, found.reason.split(":")[0]) == ("stack_trace", "rung 3")


def test_rung_8_a_config_of_padded_keys_is_code() -> None:
    config = (
        "[client]\nport            = 3308\nsocket          = /run/db.sock\n\n[mysqld]\nuser            = root\n"
        "pid-file        = /run/db.pid\nskip-name-resolve\n\ncharacter-set-server  = utf8mb4\n"
        "collation-server      = utf8mb4_general_ci\n\n# InnoDB\ndefault_storage_engine = InnoDB\n"
        "innodb_buffer_pool_size = 128M\nwsrep_on        = ON\nwsrep_sst_method = rsync"
    )
    assert kind_of(config) == "code"


def test_rung_8_a_rules_file_of_options_under_comments_is_code() -> None:
    rules = "\n".join(
        f"## Watch {name} for changes by anyone\n-w /etc/{name} -p wa -k identity"
        for name in ("passwd", "group", "shadow", "gshadow", "sudoers")
    )
    assert kind_of("## First rule - delete all\n-D\n\n## Keep a bigger buffer\n-b 8192\n\n" + rules) == "code"


def test_rung_8_a_shipped_ini_config_of_semicolon_comments_and_blank_lines_is_code() -> None:
    sections = "\n\n".join(
        f"; The {name} of the pool's workers.\n; Default Value: {n}\n;{name}.limit = {n}\n{name} = {n + 1}"
        for n, name in enumerate(("children", "spare", "requests", "timeout", "backlog", "rlimit"))
    )
    assert kind_of("; Start a new pool named 'shop'.\n[shop]\n\n" + sections) == "code"


def test_rung_7e_a_profilers_rows_of_numbers_then_a_name_are_a_table() -> None:
    rows = ["   ncalls  tottime  percall  cumtime  percall filename:lineno(function)"]
    rows += [f"{calls * 97:>9}/{calls}    0.{calls:03d}    0.000    0.{calls + 1:03d}    0.000 mod.py:{calls}(step)"
             for calls in range(1, 20)]  # fmt: skip
    rows.insert(3, "      579    0.255    0.000    0.255    0.000 {built-in method builtins.compile}")
    found = classify("\n".join(rows), fenced=False)
    assert found.kind == "table" and found.reason.startswith("rung 7e")


def test_rung_7e_leaves_a_few_numbered_lines_alone() -> None:
    found = classify("1 2 3 start\n4 5 6 stop", fenced=False)
    assert not found.reason.startswith("rung 7e")

"""Splitting: fences are a hint, and a blank line does not split a trace, a goroutine dump or a test report."""

from __future__ import annotations

import random

from organs.stomach import ingest_paste
from organs.stomach.core.blocks.split import _non_blank_runs, split_blocks
from tests.support.honesty import assert_bundle_honest


def _texts(text: str) -> list[str]:
    return [text[block.start : block.end] for block in split_blocks(text)]


def test_a_fence_span_is_its_content_and_carries_the_language_tag() -> None:
    text = "Look:\n\n```Python  extra info\n\nprint(1)\nprint(2)\n\n```\n\nok?"
    blocks = split_blocks(text)
    fenced = [block for block in blocks if block.fenced]
    assert [text[block.start : block.end] for block in fenced] == ["print(1)\nprint(2)"]
    assert fenced[0].language == "python"
    assert _texts(text) == ["Look:", "print(1)\nprint(2)", "ok?"]


def test_an_empty_fence_is_no_block_and_an_unclosed_one_runs_to_the_end() -> None:
    assert _texts("```\n\n```\nWhy?") == ["Why?"]
    unclosed = split_blocks("Why?\n\n```log\nERROR a\nERROR b\n")
    assert unclosed[-1].language == "log" and unclosed[-1].fenced


def test_a_fenced_trace_is_a_trace_and_a_fenced_log_is_a_log() -> None:
    paste = (
        "Why does this crash?\n\n"
        "```python\n"
        "Traceback (most recent call last):\n"
        '  File "app.py", line 9, in <module>\n'
        "    main()\n"
        '  File "app.py", line 5, in main\n'
        "    return items[3]\n"
        "IndexError: list index out of range\n"
        "```\n\n"
        "```log\n"
        "2024-02-02 08:00:00 INFO start\n"
        "2024-02-02 08:00:01 ERROR worker died\n"
        "```"
    )
    bundle = ingest_paste(paste)
    assert [entry.kind for entry in bundle.report] == ["prose", "stack_trace", "log"]
    assert bundle.report[1].reason.startswith("rung 1: fenced ```python")
    start, end = bundle.report[1].span
    assert paste[start:end].startswith("Traceback") and paste[start:end].endswith("out of range")
    assert_bundle_honest(paste, bundle)


def test_a_java_trace_head_and_its_causes_stay_one_block_across_blank_lines() -> None:
    trace = (
        "org.example.ExportFailed: nightly export failed: nested exception is: disk error\n"
        "\n"
        "\tat org.example.Export.run(Export.java:40)\n"
        "\tat org.example.Main.main(Main.java:12)\n"
        "\n"
        "Caused by: java.io.IOException: disk quota exceeded\n"
        "\tat org.example.Writer.flush(Writer.java:88)\n"
        "\t... 2 more"
    )
    assert _texts("What went wrong?\n\n" + trace) == ["What went wrong?", trace]


def test_a_checkers_pointer_under_an_empty_quoted_line_goes_on_with_the_block_before_it() -> None:
    run = "Checking src/main.c ...\nsrc/main.c:0:0: information: Too many #ifdef configurations\n\n^\nChecking src/io.c"
    assert _texts("Why does it fail?\n\n" + run) == ["Why does it fail?", run]


def test_a_few_lines_saying_i_after_a_test_report_are_the_users_not_the_reports() -> None:
    report = "=== puma startup: 2016-05-09 07:45:01 +0800 ===\nERROR: No application configured, nothing to run"
    words = "it's been fine again since, I just want to know what happened before I touch the Gemfile."
    assert _texts(f"{report}\n\n{words}") == [report, words]


def test_a_go_panic_and_its_goroutines_stay_one_block() -> None:
    dump = (
        "panic: assignment to entry in nil map\n"
        "\n"
        "goroutine 7 [running]:\n"
        "main.store(...)\n"
        "\t/src/app/store.go:21 +0x3a\n"
        "\n"
        "goroutine 1 [chan receive]:\n"
        "main.main()\n"
        "\t/src/app/main.go:9 +0x55"
    )
    assert _texts(dump + "\n\nWhich goroutine crashed?") == [dump, "Which goroutine crashed?"]


def test_a_chained_python_trace_stays_one_block() -> None:
    chained = (
        "Traceback (most recent call last):\n"
        '  File "a.py", line 2, in <module>\n'
        "KeyError: 'x'\n"
        "\n"
        "During handling of the above exception, another exception occurred:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "a.py", line 4, in <module>\n'
        "RuntimeError: lookup failed"
    )
    assert _texts(chained) == [chained]


def test_a_test_report_stays_one_block_until_its_tally_and_the_ask_after_it_does_not_join() -> None:
    report = (
        "==================== test session starts ====================\n"
        "collected 2 items\n"
        "\n"
        "calc_test.py F.                                        [100%]\n"
        "\n"
        "========================= FAILURES ==========================\n"
        "_________________________ test_add __________________________\n"
        "\n"
        "    def test_add():\n"
        ">       assert add(2, 2) == 5\n"
        "E       assert 4 == 5\n"
        "\n"
        "calc_test.py:3: AssertionError\n"
        "================= 1 failed, 1 passed in 0.03s ================"
    )
    texts = _texts(report + "\n\nThe code looks fine to me.\n\nWhy does test_add fail?")
    assert texts == [report, "The code looks fine to me.", "Why does test_add fail?"]
    bundle = ingest_paste(report + "\n\nWhy does test_add fail?")
    assert bundle.query.goal == "Why does test_add fail?"


def test_an_ask_inside_an_open_report_still_stands_apart() -> None:
    text = "=========== test session starts ===========\ncollected 3 items\n\nCan you tell me why it hangs?"
    assert _texts(text)[-1] == "Can you tell me why it hangs?"


def test_separate_evidence_blocks_stay_separate() -> None:
    text = "2024-01-01 10:00:00 INFO a\n2024-01-01 10:00:01 INFO b\n\nname,count\nx,1\ny,2"
    assert len(_texts(text)) == 2


def test_a_banner_opens_a_report_only_until_something_does_not_join_it() -> None:
    build = "========== Build: 0 succeeded, 1 failed, 0 skipped ==========\nerror CS0246: type not found"
    config = '<Project Sdk="Microsoft.NET.Sdk">\n  <TargetFramework>net8.0</TargetFramework>\n</Project>'
    text = f"{build}\n\nHere is the project file:\n\n{config}\n\nWhat is missing?"
    assert _texts(text) == [build, "Here is the project file:", config, "What is missing?"]


def test_the_unfenced_runs_are_the_lines_holding_a_non_whitespace_character() -> None:
    pieces = ["a", "é", " ", "\t", "\n", "\n", "\r", "\x0b", "\x85", "\u2028", "\xa0", "x\n", "\n \n"]
    rng = random.Random(16)
    for _ in range(5000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(16)))
        expected: list[tuple[int, int]] = []
        position, run_start = 0, -1
        for line in text.split("\n"):
            if not line.strip():
                if run_start >= 0:
                    expected.append((run_start, position - 1))
                run_start = -1
            elif run_start < 0:
                run_start = position
            position += len(line) + 1
        if run_start >= 0:
            expected.append((run_start, len(text)))
        assert list(_non_blank_runs(text)) == expected, repr(text)

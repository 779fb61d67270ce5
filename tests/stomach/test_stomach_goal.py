"""The goal is the user's own words: never evidence, and the strongest asking blocks when several ask."""

from __future__ import annotations

from organs.stomach import ingest_paste
from organs.stomach.core.blocks.intent import ask_strength, glued_lines, glued_tail_lines, machine_line, own_words
from organs.stomach.core.tuning import ClassifyTuning
from tests.support.honesty import assert_bundle_honest

READING = ClassifyTuning()

_OOPS = "\n".join(
    [
        "[  812.100231] BUG: unable to handle page fault for address: ffffffffc0a1b000",
        "[  812.100240] Oops: 0000 [#1] SMP NOPTI",
        "[  812.100290] Call Trace:",
        "[  812.100301]  ? show_regs+0x6d/0x80",
        "[  812.100309]  ? __die+0x24/0x80",
        "[  812.100317]  ? page_fault_oops+0x99/0x1b0",
        "[  812.100330]  ? exc_page_fault+0x77/0x170",
    ]
)

_COMPILER = "\n".join(
    [
        "widget.c:14:5: error: implicit declaration of function 'printf'",
        '   14 |     printf("%d\\n", n);',
        "      |     ^~~~~~",
        "widget.c:14:5: note: did you forget to '#include <stdio.h>'?",
    ]
)


def test_machine_lines_are_recognised() -> None:
    for line in [
        "[  812.100301]  ? show_regs+0x6d/0x80",
        "widget.c:14:5: note: did you forget to '#include <stdio.h>'?",
        "      |     ^~~~~~",
        "error[E0277]: the trait bound is not satisfied",
        "cron[311]: (root) CMD (run-parts /etc/cron.hourly)",
        "2024-01-01 10:00:00 WARN retrying, should we stop?",
        "  ? exc_page_fault+0x77/0x170",
        "$ make install",
        "make: *** [all] Error 2",
        "#7 [3/5] RUN npm ci",
        "E       assert 'is it?' == 'no'",
        "PS C:\\Users\\dev> .\\build.ps1",
    ]:
        assert machine_line(line), line
    assert not machine_line("Why does the build fail on widget.c?")


def test_a_scripts_lines_and_a_tools_own_headings_are_a_machines() -> None:
    for line in [
        'now=$(date +"%T")',
        'echo "Delete files from s3 bucket"',
        "aws s3 ls s3://bucket/initial/ > aws_files.txt",
        "if [ $? -ne 0 ]; then exit 1; fi;",
        "#!/bin/bash",
        "##diff <(cut -c 1-14 aws_file.dat) <(cut -c 1-14 sftp_file.dat)",
        "sleep 130 # runs on integration",
        "==> Vault server configuration:",
        " ---> Running in 4b1c2d3e4f50",
        "Java HotSpot(TM) 64-Bit Server VM warning: ignoring option MaxPermSize=512M; support was removed in 8.0",
    ]:
        assert machine_line(line), line
    # A comment in words, a marker and a space before them, may be anyone's heading.
    assert not machine_line("## Verifying that the fields are read and written as in the source file.")
    # Someone telling what they saw names a level too, after their own words.
    assert not machine_line("The build then printed this warning: ignoring option MaxPermSize")


def test_a_tools_status_mark_before_its_level_leaves_the_line_a_machines() -> None:
    assert machine_line("✘ [ERROR] TS2304: Cannot find name 'total'. [plugin angular-compiler]")
    assert machine_line("\ufffd\ufffd\ufffd [WARNING] NG8107: The left side of this chain does not include null.")
    assert not machine_line("• Tried the cache flag again and it still fails on the build box.")


def test_a_kernel_oops_never_becomes_the_goal() -> None:
    assert ask_strength(_OOPS, READING) == 0 and not own_words(_OOPS, READING)
    paste = "Console output before the box froze.\n\n" + _OOPS + "\n\nWhat is the first thing that went wrong?"
    bundle = ingest_paste(paste)
    assert bundle.query.goal == "What is the first thing that went wrong?"


def test_a_compiler_hint_question_does_not_join_the_goal() -> None:
    paste = "The build broke after the upgrade. What changed?\n\n" + _COMPILER
    bundle = ingest_paste(paste)
    assert bundle.query.goal == "The build broke after the upgrade. What changed?"


def test_an_instruction_inside_a_log_line_does_not_join_the_goal() -> None:
    log = "\n".join(
        [
            "2024-03-01 12:00:00 INFO deploy started",
            "2024-03-01 12:00:05 WARN please restart the worker manually",
            "2024-03-01 12:00:09 ERROR health check failed",
        ]
    )
    bundle = ingest_paste(log + "\n\nIs the health check failure caused by the deploy?")
    assert bundle.query.goal == "Is the health check failure caused by the deploy?"


def test_an_ask_glued_to_a_trace_is_split_into_its_own_segment() -> None:
    trace = (
        "System.InvalidOperationException: Sequence contains no elements\n"
        "   at System.Linq.Enumerable.First[TSource](IEnumerable`1 source)\n"
        "   at Shop.Cart.Total() in /src/Cart.cs:line 31"
    )
    paste = "why does Total() throw here?\n" + trace
    assert glued_lines(paste, READING) == 1
    bundle = ingest_paste(paste)
    assert bundle.query.goal == "why does Total() throw here?"
    assert [entry.kind for entry in bundle.report] == ["prose", "stack_trace"]
    assert [entry.outcome for entry in bundle.report] == ["goal", "frame"]
    start, end = bundle.report[1].span
    assert paste[start:end] == trace
    assert_bundle_honest(paste, bundle)


def test_a_question_mark_in_a_table_header_cell_asks_nothing() -> None:
    described = (
        "ALTER TABLE shop ADD COLUMN note text;\n"
        " Column |  Type   | Nullable? | Default \n"
        "--------+---------+-----------+---------\n"
        " id     | integer | no        | \n"
        " note   | text    | yes       | "
    )
    assert machine_line(" Column |  Type   | Nullable? | Default ")
    ask = "Why is the new note column nullable?"
    assert ingest_paste(f"{described}\n\n{ask}").query.goal == ask


def test_a_question_glued_under_records_no_pattern_calls_machine_made_is_the_goal() -> None:
    # A collector's records: not a known log shape, but no line of them reads as a sentence.
    records = "\n".join(f"{12.5 * k:.3f}: [GC [Young: {900 - k}K->{40 + k}K(960K)], 0.{k:03d} secs]" for k in range(8))
    ask = "Which of these collections took the longest, and how much did it free?"
    paste = f"{records}\n{ask}"
    assert glued_tail_lines(paste, READING) == 1
    assert ingest_paste(paste).query.goal == ask


def test_an_imperative_with_a_colon_glued_to_a_log_is_split_but_a_plain_first_line_is_not() -> None:
    log = "2024-03-01 12:00:00 INFO a\n2024-03-01 12:00:09 ERROR b"
    assert glued_lines("Explain this failure:\n" + log, READING) == 1
    assert glued_lines("Starting the nightly job\n" + log, READING) == 0
    assert glued_lines("Stack trace:\n" + log, READING) == 0
    assert (
        glued_lines("NoMethodError (undefined method `total' for nil):\n  app/models/cart.rb:9:in `sum'", READING) == 0
    )
    assert ingest_paste("Explain this failure:\n" + log).query.goal == "Explain this failure:"


def test_a_question_outranks_context_that_wishes_or_answers_itself() -> None:
    paste = (
        "I want to know where this came from. Could it be the config? No, it is the same everywhere.\n\n"
        "2024-03-01 12:00:09 ERROR handler crashed\n2024-03-01 12:00:10 INFO restarted\n\n"
        "Which handler crashed?\n\n"
        "Thanks in advance."
    )
    assert ingest_paste(paste).query.goal == "Which handler crashed?"


def test_several_questions_to_the_reader_are_joined_verbatim_in_order() -> None:
    log = "2024-03-01 12:00:09 ERROR stop\n2024-03-01 12:00:10 INFO x"
    paste = f"Why does the job stop?\n\n{log}\n\nAnd why only at night?"
    assert ingest_paste(paste).query.goal == "Why does the job stop?\n\nAnd why only at night?"


def test_a_question_to_the_reader_asks_most_a_question_answered_by_the_writer_less() -> None:
    assert ask_strength("Why is the cache cold after a deploy? Thanks!", READING) == 2
    assert ask_strength("How do I fix it? I tried a restart and a rebuild.", READING) == 2
    assert ask_strength("Is it the network? No, ping works fine.", READING) == 1
    assert ask_strength("Why restart? Because the lock is held.", READING) == 1
    assert ask_strength("Please look at the log below.", READING) == 1
    assert ask_strength("The deploy went out at noon.", READING) == 0


def test_weak_asks_are_joined_when_no_block_puts_a_question() -> None:
    paste = "Please check the log.\n\n2024-03-01 12:00:09 ERROR x\n2024-03-01 12:00:10 INFO y\n\nExplain the error."
    assert ingest_paste(paste).query.goal == "Please check the log.\n\nExplain the error."


def test_without_an_ask_the_goal_is_the_last_block_in_the_users_words_never_evidence_read_as_prose() -> None:
    paste = "The nightly job stopped.\n\n" + _OOPS
    assert ingest_paste(paste).query.goal == "The nightly job stopped."
    assert ingest_paste(_OOPS).query.goal == ""


def test_an_introduction_glued_to_a_trace_is_a_note_of_its_own() -> None:
    trace = "panic: runtime error: index out of range [3] with length 3\n\ngoroutine 1 [running]:\nmain.main()"
    paste = "the service died at 3am, the journal only has this:\n" + trace + "\n\nWhere is the bad index?"
    bundle = ingest_paste(paste)
    assert [entry.kind for entry in bundle.report][:2] == ["prose", "stack_trace"]
    assert bundle.report[0].outcome == "frame"
    assert bundle.query.goal == "Where is the bad index?"


def test_a_question_glued_under_a_log_is_split_into_its_own_segment() -> None:
    log = "2024-03-01 12:00:00 INFO listening\n2024-03-01 12:00:01 ERROR bind: address already in use"
    paste = log + "\nwhy is the port taken if nothing else runs?"
    assert glued_tail_lines(paste, READING) == 1
    bundle = ingest_paste(paste)
    assert bundle.query.goal == "why is the port taken if nothing else runs?"
    assert [(entry.kind, entry.outcome) for entry in bundle.report] == [("log", "frame"), ("prose", "goal")]
    assert paste[slice(*bundle.report[0].span)] == log
    assert_bundle_honest(paste, bundle)


def test_the_last_lines_of_evidence_are_not_a_glued_question() -> None:
    trace = 'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\nValueError: why?'
    assert glued_tail_lines(trace, READING) == 0
    report = "FAILED test_a.py::test_q - assert 'why?' == 'how?'\n==== 1 failed in 0.01s ===="
    assert glued_tail_lines("collected 1 item\ntest_a.py F\n" + report, READING) == 0
    log = "2024-03-01 12:00:00 INFO a\n2024-03-01 12:00:01 WARN is the cache warm?"
    assert glued_tail_lines(log, READING) == 0
    assert glued_tail_lines(log + "\nThe cache is cold after deploys.", READING) == 0


def test_a_question_glued_above_a_table_is_split_from_it() -> None:
    table = "NAME      READY   STATUS    RESTARTS\nweb-1     0/1     Pending   0\nweb-2     1/1     Running   0"
    paste = "why is web-1 stuck in Pending?\n" + table
    assert glued_lines(paste, READING) == 1
    bundle = ingest_paste(paste)
    assert bundle.query.goal == "why is web-1 stuck in Pending?"
    assert [entry.kind for entry in bundle.report] == ["prose", "table"]
    assert paste[slice(*bundle.report[1].span)] == table


_INVENTORY = "\n".join(f"{n},widget-{n},{n * 3},{n * 2},{n}" for n in range(1, 40))


def test_a_question_quoting_an_operator_is_the_ask_not_code() -> None:
    ask = "Which rows have stock + reserved != total, and were the totals typed in by hand or computed from them?"
    paste = f"My inventory export looks wrong somewhere:\n\nid,name,total,stock,reserved\n{_INVENTORY}\n\n{ask}"
    digest = ingest_paste(paste)
    assert digest.query.goal == ask
    assert [segment.kind for segment in digest.report if segment.outcome == "goal"] == ["prose"]


def test_a_question_a_program_prints_three_times_is_not_the_ask() -> None:
    prompt = "Do you want to continue?\n  Only 'yes' will be accepted."
    steps = "\n\n".join(f"step {n}: applying change {n}\n\n{prompt}\n\n  Enter a value: yes" for n in range(3))
    ask = "Why did the second change apply twice when I answered only once?"
    paste = f"{steps}\n\n{ask}"
    assert ingest_paste(paste).query.goal == ask


def test_the_same_question_above_and_below_the_evidence_is_asked_once() -> None:
    ask = "Why does the worker restart every minute?"
    log = "\n".join(f"2026-03-01 10:{n:02d}:00 INFO worker started pid={4000 + n}" for n in range(20))
    assert ingest_paste(f"{ask}\n\n{log}\n\n{ask}").query.goal == ask

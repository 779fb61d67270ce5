"""The relevance model: the paste as its own corpus, comparisons read by value, the budget's leftover used."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

from envelopes.types import FrameKind
from organs.accounting import DEFAULT_ENCODING, count_tokens
from organs.stomach import IngestConfig, ingest_paste
from organs.stomach.core.compare import Comparison
from organs.stomach.core.relevance import (
    FILL_HEADING,
    LineScorer,
    _candidates,
    _make_room,
    _ranked_want,
    fill_relevant,
)
from organs.stomach.core.tuning import RelevanceTuning, StomachTuning


@dataclass
class _Frame:
    """A stack-trace frame as filling reads it, not yet rendered."""

    text: str
    frame_id: str = "f"
    kind: FrameKind = "stack_trace"
    index: int = 0
    value: int = 1
    full_tokens: int = 10_000
    compact: str | None = ""
    compact_tokens: int = 0


def _served(text: str, budget: int) -> tuple[str, int]:
    bundle = ingest_paste(text, IngestConfig(budget_tokens=budget))
    frames = bundle.provider.frames
    return "\n".join(frame.content or "" for frame in frames), sum(frame.token_cost for frame in frames)


def _request_log(count: int, slow_at: int) -> list[str]:
    lines = []
    for number in range(count):
        seconds = 1.9 if number == slow_at else 0.010 + (number * 7 % 40) / 1000
        path = f"/api/items/{number * 13 % 500}"
        lines.append(f'10.1.0.{number % 250} - - [02/Mar/2025:10:{number // 60 % 60:02d}:{number % 60:02d} +0000] '
                     f'"GET {path} HTTP/1.1" 200 {900 + number * 37 % 4000} rt={seconds:.3f}')  # fmt: skip
    return lines


def test_a_superlative_picks_the_line_with_the_greatest_value() -> None:
    comparison = Comparison.of("Which request was the slowest?")
    assert comparison is not None
    lines = _request_log(300, slow_at=173)
    assert comparison.pick(lines)[0] == 173


def test_what_the_ask_leaves_out_answers_no_superlative() -> None:
    comparison = Comparison.of("Leaving out the /api/poll requests, which request was the slowest?")
    assert comparison is not None
    lines = ["GET /api/poll took 3200ms", "GET /api/items took 74ms", "GET /api/poll took 2900ms", "GET / took 12ms"]
    assert comparison.pick(lines) == [1, 3]


def test_what_the_ask_does_not_care_about_answers_no_superlative() -> None:
    comparison = Comparison.of("I don't care about the /api/poll requests. Which request was the slowest?")
    assert comparison is not None
    lines = ["GET /api/poll took 3200ms", "GET /api/items took 74ms", "GET /api/poll took 2900ms", "GET / took 12ms"]
    assert comparison.pick(lines) == [1, 3]


def test_an_ask_that_leaves_nothing_out_compares_every_line() -> None:
    comparison = Comparison.of("Which request was the slowest?")
    assert comparison is not None
    lines = ["GET /api/poll took 3200ms", "GET /api/items took 74ms", "GET /api/poll took 2900ms", "GET / took 12ms"]
    assert comparison.pick(lines) == [0, 2, 1, 3]


def test_a_threshold_picks_every_line_past_it_and_no_other() -> None:
    comparison = Comparison.of("Which queries took longer than 500ms?")
    assert comparison is not None
    lines = ["query a took 12ms", "query b took 0.7s", "query c took 501 ms", "query d took 499ms", "no time here"]
    assert sorted(comparison.pick(lines)) == [1, 2]


def test_a_value_stated_roughly_picks_the_lines_nearest_it() -> None:
    comparison = Comparison.of("One task took almost 12 seconds. Which one?")
    assert comparison is not None
    lines = ["task a succeeded in 8.1s", "task b succeeded in 11.9s", "task c succeeded in 13.1s", "task d in 30s"]
    assert comparison.pick(lines) == [1, 2]


def test_a_version_is_not_a_threshold() -> None:
    assert Comparison.of("Which benchmarks came out slower than 3.10.4?") is None
    comparison = Comparison.of("Which requests were slower than 3.5 s?")
    assert comparison is not None and comparison.bound == 3500.0


def test_the_number_under_a_key_the_ask_names_is_compared() -> None:
    comparison = Comparison.of("What was the largest batch it dropped?")
    assert comparison is not None
    lines = ["ts=1 level=warn num_dropped=4", "{processor.py:925} parsed", "ts=2 level=warn num_dropped=73", "ts=3 ok"]
    assert comparison.pick(lines) == [2, 0]


def test_how_high_something_gets_asks_for_its_greatest_value_in_words() -> None:
    comparison = Comparison.of("How high does the IO pressure get?")
    assert comparison is not None
    lines = [
        "WARNING: io_pressure is 81010.5; tdiff = 1.0",
        "WARNING: io_pressure is 702617.2; tdiff = 1.0",
        "NOTE: ok",
    ]
    assert comparison.pick(lines)[0] == 1
    assert Comparison.of("Which ones came out slower, and by how much?") is None


def test_a_clock_under_a_time_key_is_not_a_duration() -> None:
    comparison = Comparison.of("How long did the slowest step take?")
    assert comparison is not None
    assert comparison.value_of("web | time=2025-04-21T10:29:27.797Z level=WARN step done") is None
    assert comparison.value_of("step done elapsed=0.8") == 800.0
    # A stamp under a key naming a time is a moment too, whatever its digits.
    assert comparison.value_of("SET timestamp=1611704757;") is None


def test_the_slow_one_asks_for_the_greatest_time() -> None:
    for ask in ("Which of these operations is the slow one?", "Which queries are slow here?"):
        comparison = Comparison.of(ask)
        assert comparison is not None and (comparison.direction, comparison.quantity) == (1, "time")
    assert Comparison.of("The job is slow since Monday; what changed?") is None


def test_a_key_naming_its_unit_is_read_in_that_unit() -> None:
    comparison = Comparison.of("Which operation is the slowest?")
    assert comparison is not None
    assert comparison.value_of('        "millis": 10,') == 10.0
    assert comparison.value_of('"cpuNanos": 85181501,') == 85181501 * 1e-6
    assert comparison.value_of('"executionTimeMillisEstimate": 4,') == 4.0
    assert comparison.value_of("step done elapsed=0.8") == 800.0


def test_asking_at_what_time_asks_when_not_how_long() -> None:
    comparison = Comparison.of("Which reading was the highest, and at what time?")
    assert comparison is not None
    assert comparison.quantity == "number"


def test_a_unit_glued_inside_a_token_is_no_duration() -> None:
    comparison = Comparison.of("Which step took the longest?")
    assert comparison is not None
    assert comparison.value_of('{"context":"BTQ4s=","step":"pack"}') is None
    assert comparison.value_of("step pack done in 4s") == 4000.0


def _readings(values: list[tuple[int, float]]) -> list[str]:
    return [f'up {{"freq":868100000,"rssi":{rssi},"snr":{snr},"chan":1}}' for rssi, snr in values]


_VARYING = [(-70, 7.5), (-66, 9.1), (-61, 8.0), (-72, 11.2), (-69, 6.0)]


@pytest.mark.parametrize(
    ("ask", "values", "picked"),
    [
        ("Which uplink had the strongest signal?", _VARYING, [2, 3]),
        ("Which uplink had the weakest signal?", _VARYING, [3, 4]),
        # A key of fewer than three values (a constant, a flag) ranks nothing.
        ("Which uplink had the strongest signal?", [(-70, 7.5), (-61, 7.5), (-70, 7.5), (-61, 7.5)], []),
    ],
    ids=["strongest", "weakest", "too-few-values"],
)
def test_a_superlative_naming_no_key_picks_each_varying_keys_extreme(
    ask: str, values: list[tuple[int, float]], picked: list[int]
) -> None:
    comparison = Comparison.of(ask)
    assert comparison is not None
    assert comparison.pick(_readings(values)) == picked


def test_a_rough_count_compares_nothing() -> None:
    assert Comparison.of("About 3 of the workers restarted; why?") is None


def test_a_threshold_in_words_reads_its_scale() -> None:
    comparison = Comparison.of("which tables hold over a million rows?")
    assert comparison is not None
    assert comparison.bound == 1e6
    assert comparison.direction == 1


def test_a_leading_uptime_is_not_a_duration() -> None:
    comparison = Comparison.of("Which pause was the longest?")
    assert comparison is not None
    lines = ["[9.120s][info][gc] GC(1) Pause Young 3.1ms", "[9.500s][info][gc] GC(2) Pause Young 7.4ms"]
    assert comparison.pick(lines)[0] == 1
    assert comparison.value_of(lines[0]) == 3.1


def test_a_table_column_named_by_the_ask_is_compared() -> None:
    comparison = Comparison.of("Which account spent the most?")
    assert comparison is not None
    table = [" account | visits | spent ", "---------+--------+-------", " a1 | 90 | 10.50 ", " a2 | 3 | 99.00 ",
             " a3 | 40 | 12.00 "]  # fmt: skip
    assert comparison.pick(table)[0] == 3


def _interval_report(waits: list[float]) -> list[str]:
    """``iostat -x -t`` as it prints: each interval its time, then a header whose names one space may part."""
    lines = []
    for second, wait in enumerate(waits):
        minute, seconds = divmod(second * 2, 60)
        lines += [f"2026-12-07T10:{50 + minute}:{seconds:02d}+0000", "Device   r/s  r_await w/s     w_await %util",
                  f"vda      1.00    0.10  {second}0.00   {wait:5.2f}   5.00", ""]  # fmt: skip
    return lines


def test_a_column_whose_header_parts_names_by_one_space_is_compared() -> None:
    comparison = Comparison.of("Which interval had the worst w_await?")
    assert comparison is not None
    lines = _interval_report([0.5, 9.75, 1.0])
    assert lines[comparison.pick(lines)[0]].endswith("9.75   5.00")


def test_a_picked_row_with_no_clock_comes_with_the_time_above_it() -> None:
    comparison = Comparison.of("Which interval had the worst w_await?")
    assert comparison is not None
    lines = _interval_report([0.5, 9.75, 1.0])
    assert [lines[index] for index in comparison.pick_dated(lines)[:2]] == [lines[6], "2026-12-07T10:50:02+0000"]


def test_a_superlative_down_a_column_keeps_the_edges_of_the_run_around_the_best() -> None:
    ask = "When was w_await the worst, and when did the slow stretch start and end?"
    comparison = Comparison.of(ask, RelevanceTuning(top_picks=1))
    assert comparison is not None
    lines = _interval_report([0.5, 0.4, 30.0, 41.0, 35.0, 28.0, 0.6, 0.5, 0.3])
    # The best, the first and last of the run within half of it, then the row on each side of the run.
    assert [float(lines[index].split()[-2]) for index in comparison.pick(lines)] == [41.0, 30.0, 28.0, 0.4, 0.6]


def test_a_threshold_down_a_column_keeps_no_run_edges() -> None:
    comparison = Comparison.of("Which intervals had w_await over 20?")
    assert comparison is not None
    lines = _interval_report([0.5, 0.4, 30.0, 41.0, 35.0, 28.0, 0.6, 0.5, 0.3])
    assert sorted(float(lines[index].split()[-2]) for index in comparison.pick(lines)) == [28.0, 30.0, 35.0, 41.0]


def test_a_report_printed_every_interval_is_served_with_the_time_of_its_worst_row() -> None:
    waits = [0.25 + (second % 7) / 10 for second in range(150)]
    waits[97] = 43.35
    text = "At which timestamp was vda's w_await the worst?\n\n" + "\n".join(_interval_report(waits))
    served, tokens = _served(text, 600)
    assert tokens <= 600
    assert "43.35" in served and "2026-12-07T10:53:14+0000" in served


_PLAN = [
    " Sort  (cost=44.51..44.51 rows=1 width=28) (actual time=9719.547..9719.712 rows=20 loops=1)",
    "   ->  Nested Loop  (cost=0.14..44.48 rows=1 width=16) (actual time=0.959..9667.379 rows=16216 loops=1)",
    "         ->  Index Scan using accounts_pkey on accounts a  (actual time=0.010..0.012 rows=1 loops=16147)",
    "         ->  Seq Scan on history h  (cost=0.00..163.80 rows=5880) (actual time=0.004..0.536 rows=16 loops=16147)",
    " Execution Time: 9720.043 ms",
]


def test_a_query_plans_node_is_read_by_its_time_span_end_times_its_loops() -> None:
    comparison = Comparison.of("Which node takes the longest?")
    assert comparison is not None
    assert comparison.value_of(_PLAN[1]) == 9667.379 * 1000
    # 0.536 ms a loop over 16,147 loops: 8.7 s, more than the 0.2 s of the index scan's loops.
    assert comparison.value_of(_PLAN[3]) == 0.536 * 1000 * 16147
    assert comparison.pick(_PLAN)[:4] == [0, 1, 3, 2]


def test_the_furthest_is_a_greatest() -> None:
    comparison = Comparison.of("Where is the estimate furthest from reality?")
    assert comparison is not None and comparison.direction == 1


def test_an_ask_that_compares_nothing_has_no_comparison() -> None:
    assert Comparison.of("Why does the worker stop after the deploy?") is None


def test_a_term_rare_in_the_paste_weighs_more_than_a_common_one() -> None:
    lines = [f"worker {number} polled the queue" for number in range(50)] + ["worker 7 lost the lease"]
    scorer = LineScorer.of("Why did the worker lose its lease?", ["\n".join(lines)])
    assert scorer.rarity(lines[-1]) > 3 * scorer.rarity(lines[0]) > 0


def test_a_line_that_says_the_asks_term_again_and_again_weighs_more_than_one_saying_it_once() -> None:
    once = "upload 41 stopped: a network problem on the sending side, retried by the client later on"
    often = "upload 42 stopped: a network problem, or a problem writing, or a problem on the server"
    lines = [f"upload {number} stored in {number % 9 + 1} ms" for number in range(40)] + [once, often]
    scorer = LineScorer.of("Is it the same problem?", ["\n".join(lines)])
    assert scorer.rarity(often) > scorer.rarity(once) > 0


def test_a_logs_lines_of_a_rare_shape_are_raised_when_the_ask_names_nothing_they_hold() -> None:
    sites = ["shop", "mail", "news", "maps", "docs", "chat", "wiki", "blog"]
    lines = [
        f'[INFO] 10.0.0.4:{4000 + n} "A IN {sites[n % 8]}{n}.example. udp" NOERROR qr,rd,ra {n}' for n in range(60)
    ]
    lines[17] = '[INFO] 10.0.0.4:4017 "A IN bank.example. udp" NOERROR qr,aa,rd 17'
    lines[41] = '[INFO] 10.0.0.4:4041 "A IN tax.example. udp" NOERROR qr,aa,rd 41'
    scorer = LineScorer.of("What is it doing differently for the sites that fail?", ["\n".join(lines)])
    plain, odd = scorer.scores(lines), scorer.scores(lines, odd=True)
    assert plain[17] < plain[16] and odd[17] > 2 * odd[16] and odd[41] > 2 * odd[40]


def test_an_alert_weighs_less_where_alerts_are_common() -> None:
    rare = [f"worker {number} polled the queue" for number in range(60)] + ["worker 7 ERROR lost the lease"]
    common = [f"worker {number} ERROR polled the queue" for number in range(60)] + ["worker 7 ERROR lost the lease"]
    # The ask names nothing the lines hold: what scores is the alert alone.
    ask = "What happened overnight?"
    rare_scores = LineScorer.of(ask, ["\n".join(rare)]).scores(rare)
    common_scores = LineScorer.of(ask, ["\n".join(common)]).scores(common)
    assert rare_scores[-1] == RelevanceTuning().alert_weight
    assert common_scores[-1] < rare_scores[-1] / 10


def test_a_line_holding_one_of_several_terms_of_the_ask_is_not_the_best_possible_line() -> None:
    lines = [f"worker {number} polled the queue" for number in range(60)]
    lines += ["lease renewal skipped", "quota exhausted for tenant", "ledger compaction started"]
    scorer = LineScorer.of("Was it the lease, the quota or the ledger?", ["\n".join(lines)])
    scores = scorer.scores(lines)
    # Each names one of three rare terms: none scores as a line naming all three would.
    assert all(0.3 < score < 0.75 for score in scores[-3:])


def test_a_plain_word_of_the_ask_finds_its_stem() -> None:
    scorer = LineScorer.of("Which pauses were triggered by ergonomics?", ["Pause Full (Ergonomics) 7.5ms"])
    assert scorer.terms_in("Pause Full (Ergonomics) 7.5ms") == {"paus", "ergonomic"}


def test_the_slowest_request_of_a_large_log_reaches_what_is_served() -> None:
    lines = _request_log(1500, slow_at=911)
    paste = "\n".join(lines) + "\n\nWhich request was the slowest?"
    served, tokens = _served(paste, 1500)
    assert lines[911] in served
    assert tokens <= 1500


def test_a_paste_over_its_budget_is_served_near_the_budget() -> None:
    lines = _request_log(1500, slow_at=42)
    paste = "\n".join(lines) + "\n\nWhich request was the slowest?"
    served, tokens = _served(paste, 4096)
    assert FILL_HEADING in served
    assert 0.95 * 4096 <= tokens <= 4096
    assert tokens == count_tokens(served)


def test_lines_near_a_rare_match_come_with_it() -> None:
    # The line that names the ask's rare term is followed by the one that says who holds the lock.
    noise = [f"thread-{number} state=RUNNABLE at Worker.poll(Worker.java:{20 + number % 9})" for number in range(600)]
    dump = [*noise[:300], "deadlock found between two threads:", '  held by "ledger-writer"', *noise[300:]]
    paste = "\n".join(dump) + "\n\nWhich threads are in the deadlock?"
    served, _ = _served(paste, 1500)
    assert "deadlock found between two threads:" in served
    assert '  held by "ledger-writer"' in served


def test_the_rows_of_a_value_the_ask_names_in_capitals_are_served() -> None:
    # A wide table sorted by count, where the rows the ask names by a two-letter cell are near its end.
    states = ["TX", "CA", "FL", "NY", "IL", "OH", "GA", "PA", "MI", "NC"]
    header = "code,name,city,state,country,lat,long,count"
    rows = [
        f"A{number:02d},Field {number} Regional,Town {number},{states[number % 10]},USA,"
        f"3{number % 10}.5,-9{number % 7}.25,{5000 - number * 20}"
        for number in range(240)
    ]
    asked = [
        f"Z{number},Prairie {number} Muni,Hill {number},WY,USA,4{number}.1,-10{number}.3,{30 + number}"
        for number in range(4)
    ]
    rows[200:200] = asked
    paste = "Counts per field:\n\n" + "\n".join([header, *rows]) + "\n\nWhich (WY) fields are listed?"
    served, tokens = _served(paste, 1500)
    assert all(row in served for row in asked)
    assert tokens <= 1500


def test_a_paste_within_its_budget_is_served_as_it_was() -> None:
    paste = "The job failed:\n\n2025-03-02 10:00:00 ERROR job 7 failed: disk full\n\nWhich job was the slowest?"
    served, _ = _served(paste, 4096)
    assert FILL_HEADING not in served


def test_the_findings_of_a_code_family_named_by_its_letter_are_served() -> None:
    # A linter run where the asked family's codes are a few among hundreds of others.
    codes = ("E501 Line too long (97 > 88)", "F401 `os` imported but unused", "UP032 Use f-string instead of `format`")
    lines = [f"pkg/module_{number % 40}.py:{number}:1: {codes[number % 3]}" for number in range(900)]
    asked = {
        137: "B006 Do not use mutable data structures for argument defaults",
        512: "B904 Within an `except` clause, raise exceptions with `raise ... from err`",
        781: "B028 No explicit `stacklevel` keyword",
    }
    for number, finding in asked.items():
        lines[number] = f"pkg/module_{number % 40}.py:{number}:5: {finding}"
    paste = "\n".join(lines) + "\n\nWhich bugbear (B) findings are there?"
    served, tokens = _served(paste, 1500)
    assert [lines[number] for number in asked if lines[number] in served] == [lines[number] for number in asked]
    assert tokens <= 1500


def _dump(names: list[str]) -> list[str]:
    lines = []
    for number, name in enumerate(names):
        lines += [f'"{name}" #{number} prio=5 tid=0x{number:04x} waiting on condition',
                  "   State: WAITING (parking)", "\tat Lock.park(Lock.java:3)", "\tat Queue.take(Queue.java:12)",
                  "\tat Worker.run(Worker.java:7)", ""]  # fmt: skip
    return lines


def test_a_reports_repeated_headings_fade_behind_the_first_ones_section() -> None:
    lines = _dump([f"pool-exec-{number}" for number in range(6)])
    scorer = LineScorer.of("What are the pool-exec threads waiting on?", ["\n".join(lines)])
    scores = scorer.scores(lines, wide=True)
    headings = [scores[index] for index, line in enumerate(lines) if line.startswith('"pool-exec-')]
    assert headings == sorted(headings, reverse=True) and headings[0] > headings[-1]
    # The first thread's frame outranks the fifth thread's heading.
    assert scores[3] > headings[4]


def test_a_line_said_under_many_threads_is_offered_where_it_scores_best() -> None:
    text = "\n".join(_dump(["gc-helper", "gc-helper-2", "ledger-writer"]))
    scorer = LineScorer.of("Where is ledger-writer stuck?", [text])
    opened = _Frame(text)
    picked = {line: index for _, index, line in _candidates(opened, scorer, 0.0)}
    # Queue.take appears under every thread; it is offered from the ledger-writer's section (lines 12-17).
    assert picked["\tat Queue.take(Queue.java:12)"] == 15


def test_a_line_the_rendering_quotes_as_an_example_or_a_counted_line_is_not_offered_again() -> None:
    lines = [f"[ {number}.5] wlan0: scan done" for number in range(30)]
    lines[10] = "[ 10.5] wlan0: firmware load failed for fw-59.bin"
    lines[20] = "      wlan0: firmware load failed for fw-58.bin"
    text = "\n".join(lines)
    # A template line leaves out a line's indentation.
    quoted = f"    e.g. {lines[10]} (matches ask)\n×1 {lines[20].strip()}"
    scorer = LineScorer.of("Which firmware failed to load?", [text])
    offered = [line for _, _, line in _candidates(_Frame(text, kind="log", compact=quoted), scorer, 0.0)]
    assert lines[10] not in offered and lines[20] not in offered
    assert "[ 11.5] wlan0: scan done" in offered


def test_a_line_of_no_word_is_not_offered_however_its_neighbours_score() -> None:
    lines = [f"  --> /src/{number}.js:{number}:1 var cart is never reassigned" for number in range(12)]
    lines[6:6] = ["   | ", "   | ^^^", "}"]
    text = "\n".join(lines)
    scorer = LineScorer.of("Where is cart never reassigned?", [text])
    offered = [line for _, _, line in _candidates(_Frame(text, kind="log"), scorer, 0.0)]
    # A gutter, a pointer and a brace beside asked lines: out of their place in the log they say nothing.
    assert lines[5] in offered and lines[9] in offered
    assert not {"   | ", "   | ^^^", "}"} & set(offered)


def test_dated_records_alike_but_for_their_numbers_are_offered_twice_at_most() -> None:
    lines = [
        f"[error] 2018-05-03T14:43:0{n}.7Z emulator Error in process <0.{250 + n}.0> on node db1" for n in range(8)
    ]
    lines += [f"  {35821 + n * 977} interface resets on port {n}" for n in range(8)]
    text = "\n".join(lines)
    scorer = LineScorer.of("Which process errors, and how many interface resets?", [text])
    offered = [line for _, _, line in _candidates(_Frame(text, kind="log"), scorer, 0.0)]
    # One event said again with its clock and its id: twice. A counter's values are what they say: each one.
    assert len([line for line in offered if "Error in process" in line]) == 2
    assert len([line for line in offered if "interface resets" in line]) == 8
    # One the rendering shows already counts.
    shown = _Frame(text, kind="log", compact=lines[3])
    assert len([line for _, _, line in _candidates(shown, scorer, 0.0) if "Error in process" in line]) == 1


def test_a_table_row_the_rendering_keeps_with_its_reason_is_not_offered_again() -> None:
    lines = [f"worker  {number}  /srv/part{number}.so" for number in range(30)]
    text = "\n".join(lines)
    scorer = LineScorer.of("What does worker 12 hold?", [text])
    offered = [
        line for _, _, line in _candidates(_Frame(text, kind="table", compact=f"{lines[12]}  ◂ holds 12"), scorer, 0.0)
    ]
    assert lines[12] not in offered
    assert lines[13] in offered


def test_the_relevance_numbers_are_the_stomachs_tuning() -> None:
    lines = ["worker idle", "lease lost for shard-7", "worker idle", "worker idle", "worker idle"]
    default = LineScorer.of("Why was the lease lost?", ["\n".join(lines)])
    assert StomachTuning().relevance == RelevanceTuning()
    tight = LineScorer.of("Why was the lease lost?", ["\n".join(lines)], RelevanceTuning(context_share=0.0))
    # The neighbour of the answer takes a share of its score by default, none when the tuning says so.
    assert default.scores(lines)[2] > tight.scores(lines)[2]


def test_what_leaks_the_most_is_compared_by_size_with_its_breakdown() -> None:
    comparison = Comparison.of("Which allocation leaks the most?")
    assert comparison is not None and comparison.quantity == "size"
    lines = [
        "==41== 8 bytes in 1 blocks are definitely lost in loss record 1 of 3",
        "==41== 2,048 (1,024 direct, 1,024 indirect) bytes in 16 blocks are definitely lost in loss record 3 of 3",
        "==41== 96 (32 direct, 64 indirect) bytes in 2 blocks are definitely lost in loss record 2 of 3",
    ]
    assert comparison.value_of(lines[1]) == 2048
    assert comparison.pick(lines)[0] == 1


def _leak_log(level: str) -> str:
    lines = []
    for number in range(60):
        size = 4096 if number == 41 else 8 + number % 50
        where = f"0x{0x109000 + number * 16:x}: make_part_{number} (parts.c:{100 + number})"
        lines += [f"{level}{size} bytes in {number % 5 + 1} blocks are definitely lost in record {number + 1}",
                  f"{level}    by {where}"]  # fmt: skip
    return "\n".join(lines)


def test_a_frames_ranked_lines_ask_a_share_of_its_rendering() -> None:
    text = _leak_log("")
    scorer = LineScorer.of("Which allocation leaks the most?", [text])
    want = _ranked_want(_Frame(text, kind="log", compact_tokens=400), scorer, DEFAULT_ENCODING)
    # The largest leak and the frame under it (its context) ask room, within the ranked share of the rendering.
    assert scorer.tuning.heading_tokens < want <= 400 * scorer.tuning.ranked_share


def _room_given(compact_tokens: int) -> int:
    """What a log frame of many long lines naming the ask's rare term gives way to them, rendered this small."""
    rows = [f"10:{n // 60:02d}:{n % 60:02d} served page {n} to the reader in {n % 9} ms" for n in range(300)]
    for n in range(0, 300, 10):
        rows[n] = f"10:{n // 60:02d}:{n % 60:02d} quorum lease lost on shard {n}: " + "retrying the handover " * 6
    text = "\n".join(rows)
    scorer = LineScorer.of("Why was the quorum lease lost?", [text])
    assert scorer is not None
    shrunk: list[int] = []
    frame = _Frame(text, kind="log", compact="…", compact_tokens=compact_tokens)
    _make_room([frame], scorer, 0, DEFAULT_ENCODING, lambda _, size: shrunk.append(size) or True)
    return compact_tokens - shrunk[0]


def test_a_tight_rendering_gives_its_strong_lines_a_larger_share_of_it() -> None:
    tuning = RelevanceTuning()
    assert _room_given(500) == int(500 * tuning.tight_reserve)
    assert _room_given(2000) == int(2000 * tuning.reserve)


def test_a_logs_alert_lines_ask_no_ranked_share() -> None:
    # The log distiller quotes each distinct alert line already, in fewer tokens than the line.
    text = _leak_log("ERROR ")
    scorer = LineScorer.of("Which allocation leaks the most?", [text])
    ranked = [line for _, _, line in _candidates(_Frame(text, kind="log"), scorer, scorer.tuning.ranked_least)]
    assert ranked and all(line.startswith("ERROR ") for line in ranked)
    assert _ranked_want(_Frame(text, kind="log", compact_tokens=400), scorer, DEFAULT_ENCODING) == 0


def test_a_short_snippet_of_code_cut_short_is_served_whole_from_the_largest_frames_room() -> None:
    snippet = _Frame('addSbtPlugin("com.typesafe.sbt" % "sbt-jshint" % "1.0.6")', "code", "code", full_tokens=89)
    snippet.compact, snippet.compact_tokens = "a … [206 characters elided] … )", 12
    log = _Frame("\n".join(f"[error] not found: lib{n}" for n in range(400)), "log", "log", index=1, full_tokens=5000)
    log.compact, log.compact_tokens = "[400-line log]\n×400 [error] not found: <*>", 1480
    chosen: dict[str, Literal["compact", "full", "reference"]] = {"code": "compact", "log": "compact"}

    def served(item: _Frame, representation: str) -> int:
        return item.full_tokens if representation == "full" else item.compact_tokens

    def shrink(item: _Frame, limit: int) -> bool:
        item.compact_tokens = limit
        return True

    scorer = LineScorer.of("Why does loading fail?", [snippet.text, log.text])
    fill_relevant([snippet, log], chosen, 1500, DEFAULT_ENCODING, scorer, served, shrink)
    assert chosen["code"] == "full"
    assert log.compact_tokens + snippet.full_tokens <= 1500


_SCORE_PROBE = """
from organs.stomach.core.relevance import LineScorer
terms = ["lease", "quota", "ledger", "tenant", "shard", "replica", "epoch", "fence", "vault", "cursor"]
lines = [f"step {n} touched {term}" for k, term in enumerate(terms) for n in range(k * k + 1)]
lines.append(" ".join(terms))
scorer = LineScorer.of("Was it the " + ", ".join(terms) + "?", ["\\n".join(lines)])
print(repr(scorer.rarity(lines[-1])))
"""


def test_a_lines_score_does_not_depend_on_the_order_python_keeps_its_terms_in() -> None:
    # A line's terms are a set, whose order follows string hashing, seeded per process: summed in that order, the
    # score's last bit (and so a tie between two lines) would differ from one run of the stomach to the next.
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    scores = {
        subprocess.run(
            [sys.executable, "-c", _SCORE_PROBE], capture_output=True, text=True, check=True,
            env={**env, "PYTHONHASHSEED": str(seed)},
        ).stdout
        for seed in range(12)
    }  # fmt: skip
    assert len(scores) == 1


def test_a_name_the_users_prose_gives_finds_its_line_though_the_question_does_not_say_it() -> None:
    names = [f"{word}_{part}" for word in ("POOL", "CACHE", "QUEUE", "RETRY", "BATCH") for part in ("SIZE", "LIMIT")]
    lines = [
        f"2026-12-07 10:{n // 60:02d}:{n % 60:02d} INFO worker read {names[n % len(names)]} from env: unset"
        if n % 3 == 0
        else f"2026-12-07 10:{n // 60:02d}:{n % 60:02d} INFO worker polled queue depth={n % 17}"
        for n in range(600)
    ]
    text = (
        "I put RETRY_LIMIT=5 in the unit's environment file last week.\n\n"
        + "\n".join(lines)
        + "\n\nWhy does the worker give up on the first failure?"
    )
    served, tokens = _served(text, 600)
    assert tokens <= 600 and "INFO worker read RETRY_LIMIT from env: unset" in served

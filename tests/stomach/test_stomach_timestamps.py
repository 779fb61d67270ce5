"""Timestamp reading: offsets, zones, brackets, fractions, undated stamps, impossible dates."""

from __future__ import annotations

import pytest

from organs.stomach import ingest_paste
from organs.stomach.core.shapes.timestamps import (
    clock_seconds,
    holds_date_and_time,
    leading_stamp,
    read_instant,
    window_of,
)


@pytest.mark.parametrize(
    ("stamp", "instant"),
    [
        ("2024-01-02T03:04:05+02:00 x", "2024-01-02T01:04:05Z"),
        ("2024-01-02T03:04:05-0530 x", "2024-01-02T08:34:05Z"),
        ("2024-01-02T03:04:05Z x", "2024-01-02T03:04:05Z"),
        ("2024-01-02 03:04:05 UTC x", "2024-01-02T03:04:05Z"),
        ("2024-01-02 03:04:05 GMT x", "2024-01-02T03:04:05Z"),
        ("[2024-01-02 03:04:05] x", "2024-01-02T03:04:05Z"),
        ("2015-10-18 18:01:47,978 INFO", "2015-10-18T18:01:47.978Z"),
        ("2024-01-02T03:04:05.123456Z", "2024-01-02T03:04:05.123456Z"),
        ("20171223-22:15:29:606|Step", "2017-12-23T22:15:29.606Z"),
        ("081109 203615 148 INFO", "2008-11-09T20:36:15Z"),
        ("2024-01-01T00:30:00+01:00 x", "2023-12-31T23:30:00Z"),
        ("2024-01-07  9:38:26 0 [Note] InnoDB: started", "2024-01-07T09:38:26Z"),
    ],
)
def test_full_dates_become_utc_instants(stamp: str, instant: str) -> None:
    # The instant is a stamp too, and reads as itself.
    assert read_instant(stamp) == instant == read_instant(instant)


@pytest.mark.parametrize(
    "stamp",
    [
        "Jul 20 18:00:01 host sshd",
        "18:00:01 worker up",
        "03-17 16:13:38.811 1 2",
        "[   163.009] (II) Loading /usr/lib/xorg/modules/libglx.so",
        "[    0.000000] Linux version 6.1.0",
    ],
)
def test_undated_stamps_open_a_line_but_name_no_instant(stamp: str) -> None:
    assert leading_stamp(stamp) is not None
    assert read_instant(stamp) is None


def test_impossible_date_names_no_instant() -> None:
    assert leading_stamp("2024-02-30 10:00:00 x") is not None
    assert read_instant("2024-02-30 10:00:00 x") is None


def test_window_is_min_and_max_whatever_the_order() -> None:
    assert window_of(["2024-01-03 00:00:00", "2024-01-01 00:00:00", "2024-01-02 00:00:00"]) == (
        "2024-01-01T00:00:00Z",
        "2024-01-03T00:00:00Z",
    )


def test_newest_first_log_window_is_ordered() -> None:
    log = "\n".join(f"2024-03-0{day} 10:00:00 INFO tick {day}" for day in (9, 5, 1))
    frame = ingest_paste(log).provider.frames[0]
    assert (frame.valid_from, frame.valid_to) == ("2024-03-01T10:00:00Z", "2024-03-09T10:00:00Z")


def test_syslog_log_is_a_log_without_window() -> None:
    log = "\n".join(f"Jul 20 18:00:0{i} host sshd[42]: error: auth failed for user{i}" for i in range(5))
    bundle = ingest_paste(log)
    frame = bundle.provider.frames[0]
    assert frame.kind == "log"
    assert frame.valid_from is None and frame.valid_to is None


def test_bare_clock_log_is_a_log_without_window() -> None:
    log = "10:00:01 INFO up\n10:00:02 WARN slow\n10:00:03 INFO ok"
    frame = ingest_paste(log).provider.frames[0]
    assert frame.kind == "log"
    assert frame.valid_from is None


def test_mixed_offsets_convert_before_comparing() -> None:
    log = "2024-01-01T10:00:00+05:00 INFO a\n2024-01-01T06:00:00Z INFO b\n2024-01-01T01:00:00-03:00 INFO c"
    frame = ingest_paste(log).provider.frames[0]
    assert (frame.valid_from, frame.valid_to) == ("2024-01-01T04:00:00Z", "2024-01-01T06:00:00Z")


def test_undated_stamps_mean_the_dated_ones_bound_no_window() -> None:
    # Syslog lines from spring to summer, two of them ISO-stamped a quarter second apart:
    # the ISO pair does not bound the log, so no window is reported rather than a wrong one.
    lines = [
        "Apr 02 09:00:00 web1 sshd[10]: error: auth failed for alice",
        "2021-05-03T10:00:00.250Z web2 sshd[11]: error: auth failed for bob",
        "2021-05-03T10:00:00.500Z web2 sshd[11]: error: auth failed for carol",
        "Jun 28 23:00:00 web3 sshd[12]: error: auth failed for dave",
    ]
    assert window_of([line[: stamp.end] for line in lines if (stamp := leading_stamp(line))]) == (None, None)
    frame = ingest_paste("\n".join(lines)).provider.frames[0]
    assert frame.kind == "log"
    assert (frame.valid_from, frame.valid_to) == (None, None)


def test_dated_stamps_alone_still_bound_a_window() -> None:
    assert window_of(["2021-05-03T10:00:00Z", "Sun Dec 04 04:47:44 2005"]) == (
        "2005-12-04T04:47:44Z",
        "2021-05-03T10:00:00Z",
    )


def test_a_long_trace_window_is_bounded_by_its_last_stamp_too() -> None:
    frames = "\n".join(f"\tat org.example.Worker.step{n}(Worker.java:{n})" for n in range(2500))
    trace = (
        'Exception in thread "main" java.lang.IllegalStateException: stuck\n'
        "2024-01-01 10:00:00 retry 1 of 2 failed\n"
        + frames
        + "\n2024-01-03 10:00:00 retry 2 of 2 failed\n\tat org.example.Worker.run(Worker.java:1)"
    )
    frame = ingest_paste(trace).provider.frames[0]
    assert frame.kind == "stack_trace"
    assert (frame.valid_from, frame.valid_to) == ("2024-01-01T10:00:00Z", "2024-01-03T10:00:00Z")


def test_an_uptime_ends_where_its_bracket_does() -> None:
    stamp = leading_stamp("[   163.009] (II) Loading extension GLX")
    assert stamp is not None and stamp.end == len("[   163.009]")
    assert leading_stamp("[163] not an uptime") is None


@pytest.mark.parametrize(
    ("line", "seconds"),
    [
        ("2024-01-02T00:01:05+02:00 x", 1704146465),
        ("Jul 20 18:00:01 host sshd[1]: x", 18 * 3600 + 1),
        ("18:00:01.250 worker ready", 18 * 3600 + 1),
        ("[   163.009] (II) uptime only", None),
        ("no clock here", None),
    ],
)
def test_clock_seconds_are_epoch_seconds_for_a_date_and_seconds_of_the_day_for_a_bare_clock(
    line: str, seconds: int | None
) -> None:
    assert clock_seconds(line) == seconds


def test_a_date_and_a_time_anywhere_in_a_line_are_a_records_clock() -> None:
    assert holds_date_and_time("[error] 2018-05-03T14:43:03.727000Z couchdb@localhost emulator")
    assert holds_date_and_time("[24314] 2026/12/07 07:03:28.974577 [INF] Starting nats-server")
    # A time alone is often a duration: a progress line's elapsed time is no clock.
    assert not holds_date_and_time("frame=  300 fps= 25 q=28.0 size=    1024kB time=00:00:12.00 bitrate= 699.1kbits/s")

"""The budget: fits means full, compact only when it saves, shared by value, never overrun."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stomach_checks import assert_bundle_honest

from organs.stomach import IngestConfig, ingest_paste
from organs.stomach.ingest import MEANINGFUL_SAVING


def _served(text: str, budget: int) -> str:
    bundle = ingest_paste(text, IngestConfig(budget_tokens=budget))
    return "\n".join(frame.content or "" for frame in bundle.provider.frames)


def test_a_log_that_fits_is_served_whole() -> None:
    log = "\n".join(
        [f"2024-03-01 10:00:{second:02d} INFO worker polled the queue, 0 jobs" for second in range(9)]
        + ["2024-03-01 10:00:09 ERROR db pool: could not connect to 10.0.0.5:5432 (Connection refused)"]
        + ["2024-03-01 10:00:10 INFO worker polled the queue, 0 jobs"]
    )
    bundle = ingest_paste(f"Why does the worker stop?\n\n{log}")
    (frame,) = bundle.provider.frames
    assert frame.representation == "full"
    assert frame.content == log


def test_a_compact_rendering_that_saves_little_is_not_served() -> None:
    # Nine distinct lines: a template rendering of them saves next to nothing.
    log = "\n".join(f"2024-03-01 10:00:0{n} INFO step {word} done" for n, word in enumerate("abcdefghi"))
    bundle = ingest_paste(log, IngestConfig(budget_tokens=4096))
    (frame,) = bundle.provider.frames
    assert frame.representation == "full"
    assert MEANINGFUL_SAVING >= 0.2


def test_the_last_segment_summary_is_served_among_many_small_segments() -> None:
    # A report broken into many blocks: the run's last block says how it ended.
    blocks = [f"test_case_{n} setup\n    value = compute({n})\n    assert value == {n + 1}" for n in range(120)]
    summary = "=== short summary ===\n" + "\n".join(f"FAILED test_case_{n}" for n in range(0, 120, 3))
    summary += "\n=== 40 failed, 80 passed in 1.02s ==="
    served = _served("Which tests failed?\n\n" + "\n\n".join([*blocks, summary]), 1024)
    assert "40 failed, 80 passed in 1.02s" in served


def test_an_ask_term_and_an_alert_in_a_long_note_are_kept() -> None:
    filler = [f"step {n}: copying layer {n:04d} of the image into place" for n in range(600)]
    filler[250] = "WARN could not map uid 1000 for user builder"
    filler[400] = "mount of /var/cache/frobnicator refused: permission denied"
    text = "How do I fix the frobnicator mount?\n\n" + "\n\n".join(["\n".join(filler)])
    served = _served(text, 400)
    assert "mount of /var/cache/frobnicator refused: permission denied" in served
    assert "WARN could not map uid 1000 for user builder" in served


_LINES = st.sampled_from(
    [
        "2024-01-01 10:00:00 INFO tick {n}",
        "2024-01-01 10:00:01 ERROR failed to open /tmp/{n}",
        "id,name,score",
        "{n},row{n},{n}.5",
        "Traceback (most recent call last):",
        '  File "a.py", line {n}, in f',
        "ValueError: bad {n}",
        "Some prose about the setup {n}.",
        "def f{n}(x):",
        "    return x + {n}",
        "",
        "",
    ]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(st.tuples(_LINES, st.integers(min_value=0, max_value=10_000)), min_size=1, max_size=300),
    budget=st.integers(min_value=0, max_value=3000),
    ask=st.sampled_from(["", "Why does /tmp/42 fail to open?", "What raises ValueError in f3?"]),
)
def test_the_served_total_never_exceeds_the_budget(lines: list[tuple[str, int]], budget: int, ask: str) -> None:
    text = "\n".join(line.format(n=n) for line, n in lines)
    if ask:
        text = f"{ask}\n\n{text}"
    bundle = ingest_paste(text, IngestConfig(budget_tokens=budget))
    assert sum(frame.token_cost for frame in bundle.provider.frames) <= budget
    assert_bundle_honest(text, bundle)

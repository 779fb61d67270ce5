"""The budget: fits means full, compact only when it saves, shared by value, never overrun."""

from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envelopes.types import FrameKind
from organs.stomach import IngestConfig, ingest_paste
from organs.stomach.core.asked import AskTerms
from organs.stomach.core.budget import allocate, best_representation, fit_budget, weigh
from organs.stomach.core.tuning import StomachTuning
from tests.support.honesty import assert_bundle_honest

TUNING = StomachTuning()


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


def test_dense_evidence_a_roomy_budget_covers_is_served_whole() -> None:
    # Digits and punctuation run under the characters-per-token estimate: the shares must not stop at it.
    log = "\n".join(
        f"2026-12-01T09:{n // 60 % 60:02d}:{n % 60:02d}Z {('INFO', 'WARN', 'ERROR')[n % 3]} [w-{n % 13}] q {n % 11} "
        f"job {n * 7919 % 100_003} took {n * 37 % 4_001} ms (try {n % 4 + 1})"
        for n in range(2_200)
    )
    rows = "\n".join(f"{n},w-{n % 13},q-{n % 11},{n * 37 % 4_001},{'ok' if n % 5 else 'timeout'}" for n in range(2_500))
    text = f"{log}\n\nid,worker,queue,ms,status\n{rows}\n\nWhy do jobs time out on q 7?"
    bundle = ingest_paste(text, IngestConfig(budget_tokens=10**7))
    assert [frame.representation for frame in bundle.provider.frames] == ["full", "full"]
    assert_bundle_honest(text, bundle)


def test_a_compact_rendering_that_saves_little_is_not_served() -> None:
    # Nine distinct lines: a template rendering of them saves next to nothing.
    log = "\n".join(f"2024-03-01 10:00:0{n} INFO step {word} done" for n, word in enumerate("abcdefghi"))
    bundle = ingest_paste(log, IngestConfig(budget_tokens=4096))
    (frame,) = bundle.provider.frames
    assert frame.representation == "full"


@dataclass(frozen=True)
class _Item:
    frame_id: str
    kind: FrameKind
    text: str
    index: int
    value: int = 1
    claim: int = 0
    full_tokens: int = 0
    share: int = 0
    target: int = 0
    compact: str | None = None
    compact_tokens: int = 0


def _rendered(full: int, compact: int, share: int, *, kind: FrameKind = "log", index: int = 0, value: int = 1) -> _Item:
    return _Item(
        f"id{index}",
        kind,
        "x" * 100,
        index,
        value=value,
        full_tokens=full,
        share=share,
        compact="x",
        compact_tokens=compact,
    )


def test_compact_is_served_only_when_it_saves_a_meaningful_share() -> None:
    saving = int(1000 * TUNING.meaningful_saving)
    assert best_representation(_rendered(1000, 1000 - saving + 10, 500), TUNING.meaningful_saving) == "full"
    assert best_representation(_rendered(1000, 1000 - saving - 10, 500), TUNING.meaningful_saving) == "compact"
    assert best_representation(_rendered(1000, 100, 1000), TUNING.meaningful_saving) == "full"


def test_an_overrun_turns_little_saving_full_texts_compact_before_any_reference() -> None:
    items = [_rendered(1000, 900, 600, index=0), _rendered(300, 100, 300, kind="note", index=1, value=3)]

    def unchanged(item: _Item, limit: int) -> tuple[_Item, bool]:
        return item, False

    assert fit_budget(items, 1200, unchanged, TUNING)[0] == {"id0": "compact", "id1": "full"}
    assert fit_budget(items, 1000, unchanged, TUNING)[0] == {"id0": "compact", "id1": "compact"}
    assert fit_budget(items, 500, unchanged, TUNING)[0] == {"id0": "reference", "id1": "compact"}


def test_an_overrun_is_absorbed_by_rendering_smaller_before_a_reference() -> None:
    items = [_rendered(2000, 1000, 1000, index=0), _rendered(300, 100, 300, kind="note", index=1, value=3)]

    def shrink(item: _Item, limit: int) -> tuple[_Item, bool]:
        return replace(item, compact_tokens=limit), True

    chosen, fitted = fit_budget(items, 900, shrink, TUNING)
    assert chosen == {"id0": "compact", "id1": "compact"}
    assert fitted[0].compact_tokens == 800 and items[0].compact_tokens == 1000


def test_a_reference_that_fits_the_room_the_references_after_it_left_is_served_shrunk() -> None:
    items = [
        _rendered(1000, 950, 300, index=0),
        _rendered(1000, 950, 300, index=1, value=2),
        _rendered(200, 200, 200, kind="note", index=2, value=5),
    ]

    def shrink(item: _Item, limit: int) -> tuple[_Item, bool]:
        return replace(item, compact_tokens=limit), limit >= 500

    chosen, fitted = fit_budget(items, 800, shrink, TUNING)
    assert chosen == {"id0": "reference", "id1": "compact", "id2": "full"}
    assert fitted[1].compact_tokens == 600


def test_shares_follow_value_and_a_small_segment_takes_only_its_size() -> None:
    items = [
        _Item("a", "log", "a", 0, value=1, full_tokens=5000),
        _Item("b", "log", "b", 1, value=3, full_tokens=5000),
        _Item("c", "note", "c", 2, value=1, full_tokens=50),
    ]
    no_floor = replace(TUNING, floor_share=0.0)
    shares = allocate(items, 1000, no_floor, exact=True)
    assert shares[2] == 50
    assert shares[1] > 2 * shares[0]
    assert sum(shares) <= 1000


def test_the_floor_is_shared_equally_before_value_and_claims() -> None:
    # A config beside a long log whose alerts claim everything: the floor keeps the config readable.
    items = [
        _Item("a", "code", "a", 0, value=2, full_tokens=300),
        _Item("b", "log", "b", 1, value=9, claim=800, full_tokens=5000),
    ]
    floored = allocate(items, 600, replace(TUNING, floor_share=0.5), exact=True)
    bare = allocate(items, 600, replace(TUNING, floor_share=0.0), exact=True)
    assert floored[0] >= 150 and bare[0] < 50
    assert floored[1] > floored[0] and sum(floored) <= 600


def test_alert_lines_the_ask_and_the_last_place_raise_value_and_claim() -> None:
    plain = _Item("a", "log", "10:00 INFO start\n10:01 INFO tick", 0)
    alert = _Item("b", "log", "10:00 INFO start\n10:01 ERROR disk full", 1)
    asked = _Item("c", "log", "10:00 INFO start\n10:01 INFO quota for tenant_42", 2)
    plain_weight, alert_weight, asked_weight = weigh(
        [plain, alert, asked], AskTerms.of("Why is tenant_42 over quota?"), TUNING
    )
    assert alert_weight.value > plain_weight.value and alert_weight.claim > 0 and plain_weight.claim == 0
    assert asked_weight.value > alert_weight.value


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

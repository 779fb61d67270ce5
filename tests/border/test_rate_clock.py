"""The rate limit's clock: a step of the wall clock never holds an actor back longer than its window."""

from __future__ import annotations

from organs.border.guard import GuardState, RateLimit
from organs.border.rate_store import RateClock

ACTOR = ("user_input", "ada")
HOUR_S = 3600.0


class SteppingClocks:
    """A wall clock an operator can step and a monotonic clock that only advances."""

    def __init__(self) -> None:
        self.wall_s = 1_800_000_000.0
        self.monotonic_s = 500.0

    def wall(self) -> float:
        return self.wall_s

    def monotonic(self) -> float:
        return self.monotonic_s

    def advance(self, seconds: float) -> None:
        self.wall_s += seconds
        self.monotonic_s += seconds


def test_the_rate_clock_ignores_steps_of_the_wall_clock() -> None:
    clocks = SteppingClocks()
    clock = RateClock(wall=clocks.wall, monotonic=clocks.monotonic)
    start = clock()
    assert start == clocks.wall_s
    clocks.advance(2.5)
    assert clock() == start + 2.5
    clocks.wall_s -= HOUR_S
    assert clock() == start + 2.5
    clocks.wall_s += 2 * HOUR_S
    clocks.advance(1.0)
    assert clock() == start + 3.5


def test_an_actor_limited_when_the_clock_steps_back_an_hour_waits_for_one_token_not_an_hour() -> None:
    # The clock steps back between replicas (or across a restart): the shared bucket carries a stamp an hour ahead.
    rate, state = RateLimit(capacity=2, window_s=10.0), GuardState()
    assert state.take(ACTOR, rate, now=HOUR_S)
    assert state.take(ACTOR, rate, now=HOUR_S)
    assert not state.take(ACTOR, rate, now=1.0), "a step back refills nothing"
    assert not state.take(ACTOR, rate, now=4.0), "0.2 tokens per second: under one token after 3 s"
    assert state.take(ACTOR, rate, now=6.0), "one window's pace after the step, a token is back"


def test_refill_never_goes_negative() -> None:
    rate, state = RateLimit(capacity=1, window_s=10.0), GuardState()
    assert state.take(ACTOR, rate, now=100.0)
    for now in (50.0, 0.0, -HOUR_S):
        assert not state.take(ACTOR, rate, now=now)
        assert state.buckets[ACTOR].tokens >= 0.0

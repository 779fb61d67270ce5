"""The one budget-fitting loop: render at a target, count, rescale, render again."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from organs.fitting import fit_tokens


def test_a_rendering_within_the_limit_at_the_first_target_is_taken() -> None:
    targets: list[int] = []

    def render(target: int) -> int:
        targets.append(target)
        return target - 5

    fitted = fit_tokens(render, lambda tokens: tokens, 100)
    assert fitted is not None
    assert (fitted.tokens, fitted.target, fitted.rounds) == (95, 100, 1)
    assert targets == [100]


def test_an_overshoot_shrinks_the_target_in_proportion() -> None:
    fitted = fit_tokens(lambda target: target * 2, lambda tokens: tokens, 100)
    assert fitted is not None
    assert fitted.tokens <= 100
    assert fitted.target == 50
    assert fitted.rounds == 2


def test_slack_grows_an_undershoot_and_keeps_the_largest_fit() -> None:
    fitted = fit_tokens(lambda target: target // 2, lambda tokens: tokens, 100, slack=4)
    assert fitted is not None
    assert 96 <= fitted.tokens <= 100


def test_none_when_nothing_fits_in_the_rounds() -> None:
    assert fit_tokens(lambda target: 1000, lambda tokens: tokens, 10, rounds=3) is None


def test_unbounded_rounds_end_when_the_target_reaches_zero() -> None:
    assert fit_tokens(lambda target: 1000, lambda tokens: tokens, 10, rounds=None) is None


@given(
    st.integers(min_value=1, max_value=5000),
    st.integers(min_value=1, max_value=400),
    st.integers(min_value=0, max_value=60),
    st.sampled_from([None, 0, 8]),
)
def test_whatever_comes_back_is_within_the_limit(limit: int, percent: int, overhead: int, slack: int | None) -> None:
    def render(target: int) -> int:
        return target * percent // 100 + overhead

    fitted = fit_tokens(render, lambda tokens: tokens, limit, rounds=None, slack=slack)
    if fitted is None:
        assert render(1) > limit
    else:
        assert fitted.tokens <= limit
        assert fitted.tokens == render(fitted.target)

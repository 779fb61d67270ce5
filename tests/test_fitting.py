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


def test_a_fixed_cost_is_left_out_of_the_rescaling() -> None:
    # Every rendering costs 40 tokens of frame plus its target: rescaled by the whole count, an overshoot of
    # 140 at a target of 100 would shrink to 71 (111 tokens); beyond the frame, to 60, exactly the limit.
    fitted = fit_tokens(lambda target: target + 40, lambda tokens: tokens, 100, fixed=40)
    assert fitted is not None
    assert (fitted.target, fitted.tokens, fitted.rounds) == (60, 100, 2)


def test_a_rendering_that_took_less_than_its_target_is_rescaled_from_what_it_took() -> None:
    # Pieces come in steps of 30: a rendering takes the largest multiple of 30 within its target.
    def render(target: int) -> tuple[int, int]:
        took = target // 30 * 30
        return took, took

    targets: list[int] = []

    def counted(rendering: tuple[int, int]) -> int:
        return rendering[1]

    def recorded(target: int) -> tuple[int, int]:
        targets.append(target)
        return render(target)

    fitted = fit_tokens(recorded, counted, 100, start=50, slack=5, used=lambda rendering: rendering[0])
    assert fitted is not None
    # 50 takes 30 and grows from what it took to 100: 90 within the limit.
    assert targets[:2] == [50, 100]
    assert fitted.tokens == 90


def test_an_overshoot_after_a_fit_is_followed_by_a_target_between_the_two() -> None:
    # Counts jump at 80: a target of 80 or more renders 130 tokens; below it, the target itself.
    targets: list[int] = []

    def render(target: int) -> int:
        targets.append(target)
        return target if target < 80 else 130

    fitted = fit_tokens(render, lambda tokens: tokens, 100, start=40, slack=2, rounds=6)
    assert fitted is not None
    assert targets[:2] == [40, 100]
    # After the overshoot at 100: 76 (100 × 100 / 130), above the best's 40, and within the limit.
    assert targets[2] == 76
    assert fitted.tokens == 76


def test_a_cut_that_leaves_the_count_unchanged_is_followed_by_a_larger_one() -> None:
    # A rendering that changes in steps (plans of frames): any target from 500 up renders 602 tokens, below it 403.
    targets: list[int] = []

    def render(target: int) -> int:
        targets.append(target)
        return 602 if target >= 500 else 403

    fitted = fit_tokens(render, lambda tokens: tokens, 588, rounds=4)
    assert fitted is not None
    assert fitted.tokens == 403
    # In proportion first (588 x 588 / 602); then, the count unchanged, an eighth of the target; then twice that.
    assert targets == [588, 574, 503, 361]

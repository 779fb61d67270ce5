"""Property: for any text, spans cover all but whitespace and every frame is honest."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from organs.stomach import IngestConfig, ingest_paste
from tests.support.honesty import assert_bundle_honest

_PIECES = st.sampled_from(
    [
        "\n",
        "\n\n",
        "```",
        " ",
        "\t",
        "\r\n",
        "|",
        ",",
        "2024-01-01 10:00:00 ",
        "ERROR ",
        "INFO ",
        "./src/a.rs",
        "Traceback (most recent call last):\n",
        '  File "a.py", line 1, in f\n',
        "\tat a.B.c(B.java:1)\n",
        "Why?",
        "\u2028",
        "\x1c",
        "\x85",
        "é",
        "🙂",
        "\u200b",
        "0x1f",
        "=",
        '"',
    ]
)
_TEXT = st.lists(st.one_of(st.text(max_size=12), _PIECES), max_size=30).map("".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_TEXT, budget=st.sampled_from([0, 1, 40, 4096]))
def test_any_text_yields_lossless_spans_and_honest_frames(text: str, budget: int) -> None:
    bundle = ingest_paste(text, IngestConfig(budget_tokens=budget))
    assert_bundle_honest(text, bundle)

"""Past the block limit (``max_blocks``) the rest of a paste is evidence, and its ask is still found (#28)."""

from __future__ import annotations

from organs.stomach import IngestConfig, ingest_paste
from tests.support.honesty import assert_bundle_honest

ASK = "Why does the cache drop entries so early?"
TOKEN = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"


def _paragraphs(count: int) -> list[str]:
    return [f"Note {n}: the cache keeps entries for {n % 90} minutes, then a sweeper drops them." for n in range(count)]


def test_the_ask_after_2100_paragraphs_is_the_goal() -> None:
    text = "\n\n".join([*_paragraphs(2100), ASK])
    bundle = ingest_paste(text)
    assert bundle.query.goal == ASK
    assert [entry.outcome for entry in bundle.report].count("goal") == 1
    assert "max_blocks 2048" in bundle.report[-2].reason
    assert_bundle_honest(text, bundle)


def test_a_secret_past_the_block_limit_is_redacted_evidence_not_the_goal() -> None:
    paragraphs = _paragraphs(2100)
    paragraphs[2048] = f"The deploy token was {TOKEN} until Monday."
    text = "\n\n".join([*paragraphs, ASK])
    bundle = ingest_paste(text)
    assert bundle.query.goal == ASK
    [holding] = [entry for entry in bundle.report if entry.redacted]
    assert holding.outcome == "frame" and {found.kind for found in holding.redacted} == {"github_token"}
    assert TOKEN not in bundle.query.goal


def test_with_no_ask_past_the_limit_the_rest_stays_one_evidence_block() -> None:
    text = "\n\n".join(_paragraphs(120))
    bundle = ingest_paste(text, IngestConfig(max_blocks=100))
    assert len(bundle.report) == 100
    assert bundle.report[-1].outcome == "frame" and "max_blocks 100" in bundle.report[-1].reason
    assert_bundle_honest(text, bundle)


def test_an_ask_in_the_middle_of_what_lies_past_the_limit_is_set_apart_and_nothing_is_lost() -> None:
    paragraphs = _paragraphs(150)
    paragraphs[120] = ASK
    text = "\n\n".join(paragraphs)
    bundle = ingest_paste(text, IngestConfig(max_blocks=100))
    assert bundle.query.goal == ASK
    assert [entry.outcome for entry in bundle.report[-3:]] == ["frame", "goal", "frame"]
    assert_bundle_honest(text, bundle)


def test_a_question_far_past_the_limit_is_still_found_and_is_the_goal() -> None:
    # 5,000 paragraphs: the question sits before the remainder's last 2,048, where only question marks are looked at.
    paragraphs = _paragraphs(5000)
    paragraphs[2500] = ASK
    text = "\n\n".join(paragraphs)
    bundle = ingest_paste(text)
    assert bundle.query.goal == ASK
    assert_bundle_honest(text, bundle)


def test_a_question_early_in_a_remainder_of_over_a_mib_is_found_and_is_the_goal() -> None:
    # 15,000 paragraphs: the remainder's last MiB starts after paragraph 2,200, where only questions are looked for.
    paragraphs = _paragraphs(15_000)
    paragraphs[2200] = ASK
    text = "\n\n".join(paragraphs)
    assert len(text) > 2**20
    bundle = ingest_paste(text)
    assert bundle.query.goal == ASK

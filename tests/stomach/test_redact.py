"""Redaction in the stomach (#12): no credential is rendered, counted, served or stored for serving."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.planted_secrets import planted_pastes
from bench.redact_bench import adversarial_inputs
from envelopes.ids import digest_text
from organs.errors import ConfigError
from organs.redaction import PERSONAL_RULES, Redactor, find_secrets, parse_personal, scrub_secrets
from organs.redaction.engine import find_hits
from organs.redaction.pseudonyms import rules_for
from organs.settings import Settings
from organs.stomach.core.ingest import IngestConfig, ingest_paste
from organs.stomach.worker import ingest_config

SHARED = Path(__file__).resolve().parents[3] / "shared" / "corpus"
ASK = "Why does the deploy fail?"
# Real credentials that the real pastes hold (none so far): each entry is (file, kind).
KNOWN_REAL_CREDENTIALS: frozenset[tuple[str, str]] = frozenset()


@pytest.mark.parametrize("seed", range(5))
def test_every_planted_secret_is_replaced_by_a_placeholder_naming_its_kind(seed: int) -> None:
    for planted in planted_pastes(seed):
        redacted, found = Redactor().redact(planted.text)
        assert found, f"nothing found in {planted.kind} planted in {planted.place}"
        for secret in planted.secrets:
            assert secret not in redacted, f"{planted.kind} in {planted.place} survived"
        assert all(f"‹secret:{redaction.kind}#" in redacted for redaction in found)


@pytest.mark.parametrize("budget", [4096, 64])
def test_ingest_serves_counts_and_identifies_only_redacted_text(budget: int) -> None:
    for planted in planted_pastes(1):
        paste = f"{ASK}\n\n{planted.text}\n"
        bundle = ingest_paste(paste, IngestConfig(budget_tokens=budget))
        assert bundle.query.goal == ASK
        assert bundle.redaction.changed
        for secret in planted.secrets:
            assert secret in paste
            assert secret not in bundle.redaction.text
            for frame in bundle.provider.frames:
                full = bundle.provider.full_text(frame.id)
                assert secret not in full and secret not in (frame.content or "") and secret not in frame.title
                # Law 4: the id is the digest of the full text served, the redacted one.
                assert frame.id == digest_text(full)
                served_full = bundle.redaction.text[slice(*bundle.redaction.span(bundle.provider.span(frame.id)))]
                assert served_full == full
                compact = bundle.provider.serve(frame.id, "compact")
                assert secret not in (compact.content or "")
            assert all(secret not in report.reason for report in bundle.report)
        redacted = [report for report in bundle.report if report.redacted]
        assert redacted and all("redacted" in report.reason for report in redacted)


def test_the_same_secret_gets_the_same_placeholder_across_segments() -> None:
    key = "AKIA" + "QWERTYUIOPASDFGH"
    other = "AKIA" + "ZXCVBNMLKJHGFDSA"
    paste = (
        f"{ASK}\n\n2025-01-01 10:00:00 INFO auth with {key}\n2025-01-01 10:00:01 ERROR denied {other}\n\n"
        f"export AWS_ACCESS_KEY_ID={key}\n"
    )
    bundle = ingest_paste(paste)
    texts = [bundle.provider.full_text(frame.id) for frame in bundle.provider.frames]
    assert "‹secret:aws_access_key_id#1›" in texts[0] and "‹secret:aws_access_key_id#2›" in texts[0]
    assert texts[1] == "export AWS_ACCESS_KEY_ID=‹secret:aws_access_key_id#1›"


def test_the_goal_is_never_rewritten_even_when_it_holds_a_secret() -> None:
    ask = "Why does login fail with password=Tr0ub4dor&3 for the admin user?"
    paste = f"{ask}\n\n2025-01-01 10:00:00 ERROR login failed password=Tr0ub4dor&3\n"
    bundle = ingest_paste(paste)
    assert bundle.query.goal == ask
    assert "Tr0ub4dor&3" not in bundle.provider.full_text(bundle.provider.frames[0].id)
    goal_report = next(report for report in bundle.report if report.outcome == "goal")
    assert goal_report.redacted == () and goal_report.tokens_before > 0
    stated = ingest_paste(paste, intent=ask)
    assert stated.query.goal == ask


def test_a_paste_without_secrets_is_stored_and_identified_as_received() -> None:
    paste = f"{ASK}\n\n2025-01-01 10:00:00 ERROR disk full on /var\n"
    bundle = ingest_paste(paste)
    assert not bundle.redaction.changed and bundle.redaction.text is paste
    frame = bundle.provider.frames[0]
    assert frame.id == digest_text(paste[frame.span[0] : frame.span[1]])


def test_personal_data_is_pseudonymised_only_when_asked_and_consistently() -> None:
    log = (
        "2025-01-01 10:00:00 INFO login ana@example.org from 10.0.0.7\n"
        "2025-01-01 10:00:05 WARN retry ana@example.org from 10.0.0.9, call +44 20 7946 0958\n"
        "2025-01-01 10:00:09 ERROR locked ana@example.org from 10.0.0.7"
    )
    paste = f"{ASK}\n\n{log}\n"
    plain = ingest_paste(paste)
    assert plain.provider.full_text(plain.provider.frames[0].id) == log
    bundle = ingest_paste(paste, IngestConfig(redact_personal=frozenset({"emails", "ips", "phones"})))
    text = bundle.provider.full_text(bundle.provider.frames[0].id)
    assert "ana@example.org" not in text and "10.0.0." not in text and "7946" not in text
    assert text.count("‹email#1›") == 3 and text.count("‹ip#1›") == 2 and text.count("‹ip#2›") == 1
    assert "‹phone#1›" in text
    report = next(report for report in bundle.report if report.redacted)
    assert {(redaction.kind, redaction.count, redaction.personal) for redaction in report.redacted} == {
        ("email", 3, True),
        ("ip", 3, True),
        ("phone", 1, True),
    }
    assert "pseudonymised 7 personal values" in report.reason


def test_ichor_redact_is_read_at_the_edge_and_a_bad_value_names_the_variable() -> None:
    assert ingest_config(Settings.from_environ({"ICHOR_REDACT": "emails, ips"})).redact_personal == frozenset(
        {"emails", "ips"}
    )
    with pytest.raises(ConfigError, match="ICHOR_REDACT='emails,passports'") as raised:
        ingest_config(Settings.from_environ({"ICHOR_REDACT": "emails,passports"}))
    assert "\n" not in str(raised.value) and "passports" in str(raised.value)
    assert parse_personal("none") == frozenset() == parse_personal("")
    assert ingest_config(Settings.from_environ({})).redact_personal == frozenset()


@pytest.mark.parametrize(
    "line",
    [
        "password_policy: strict",
        "max_tokens: 4096",
        "token: str",
        'password = os.environ["DB_PASSWORD"]',
        "conn = connect(user=db_user, password=db_password)",
        "password: ${DB_PASSWORD}",
        'api_key = "<your api key>"',
        "secret: ********",
        "Basic authentication failed for user bob",
        "Bearer token required",
        "secretName: app-credentials",
        "PWD=/home/ana/src",
        "Failed password for invalid user admin from 10.1.1.1 port 22 ssh2",
        "W ActivityManager: Bad activity token: android.os.BinderProxy@2bd79ce",
        "see https://example.org:8443/path and ssh://git@example.org/repo",
        "the access token is refreshed every 3600 seconds",
        "password=‹secret:password#1›",
    ],
)
def test_ordinary_lines_are_not_taken_for_credentials(line: str) -> None:
    assert find_secrets(line) == []


def test_placeholders_are_never_redacted_again() -> None:
    for planted in planted_pastes(2):
        once = scrub_secrets(planted.text)
        assert scrub_secrets(once) == once


@pytest.mark.parametrize("name", sorted(path.name for path in (SHARED / "loghub").glob("*_2k.log")))
def test_no_credential_is_found_in_a_loghub_log(name: str) -> None:
    assert find_secrets((SHARED / "loghub" / name).read_text(encoding="utf-8")) == []


def test_the_real_pastes_hold_only_the_listed_real_credentials() -> None:
    found = {
        (path.name, hit.kind)
        for path in sorted((SHARED / "realpastes").glob("*.txt"))
        for hit in find_secrets(path.read_text(encoding="utf-8"))
    }
    assert found == KNOWN_REAL_CREDENTIALS


def test_adversarial_inputs_of_bounded_size_finish() -> None:
    # Each rule's keywords followed by long runs of what its repeats loop on: a pattern that backtracks
    # catastrophically never finishes these; bench/redact_bench.py measures the growth with size.
    rules = rules_for(frozenset({"emails", "ips", "phones"}))
    assert set(PERSONAL_RULES) <= set(rules)
    for text in adversarial_inputs(2048).values():
        find_hits(text, rules)


def test_log_lines_are_scrubbed_of_credentials() -> None:
    from organs.runtime.logs import _scrub_secrets

    key = "AKIA" + "QWERTYUIOPASDFGH"
    event = {"event": "envelope.dead_lettered", "reason": f"bad paste holding {key}", "reasons": [f"x {key}", 3]}
    scrubbed = _scrub_secrets(None, "error", event)
    assert key not in repr(scrubbed)
    assert scrubbed["reason"] == "bad paste holding ‹secret:aws_access_key_id#1›" and scrubbed["reasons"][1] == 3


@pytest.mark.parametrize(
    "before",
    [
        "plain ascii line\n",
        "Zürich café — ünïcödé before the line\n",
        # Lower-casing U+0130 makes two characters, so positions in the lowered text shift.
        "İstanbul İzmir\n",
    ],
)
def test_a_secret_is_found_after_any_text_on_earlier_lines(before: str) -> None:
    planted = next(planted for planted in planted_pastes(0) if "\n" not in planted.text.strip())
    redacted, found = Redactor().redact(before * 3 + planted.text + "\n" + before)
    assert found
    assert all(secret not in redacted for secret in planted.secrets)
    assert redacted.startswith(before * 3)

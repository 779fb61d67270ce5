"""The ask's terms: which of its numbers, codes, identifiers, quoted strings and words a line holds."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from organs.stomach.core.asked import AskTerms
from organs.stomach.core.tuning import AskTuning


def _kinds(goal: str) -> dict[str, str]:
    terms = AskTerms.of(goal)
    return dict(zip(terms.terms, terms.kinds, strict=True))


def test_an_ask_yields_numbers_codes_identifiers_quotes_and_words() -> None:
    kinds = _kinds(
        "rustc reports E0277 and 0x1f at src/lib.rs in parse_header and Frame.decode, "
        'then "broken pipe" on port 8443 from HttpClient; why?'
    )
    assert kinds["e0277"] == "code"
    assert kinds["0x1f"] == "code"
    assert kinds["src/lib.rs"] == "identifier"
    assert kinds["parse_header"] == "identifier"
    assert kinds["frame.decode"] == "identifier"
    assert kinds["httpclient"] == "identifier"
    assert kinds["broken pipe"] == "quoted"
    assert kinds["8443"] == "number"
    assert kinds["rustc"] == "word"
    assert "why" not in kinds and "and" not in kinds and "on" not in kinds


def test_a_short_name_quoted_in_the_ask_is_a_term_matched_whole() -> None:
    ask = AskTerms.of("Which packages are the ones asking for 'fs'?")
    assert dict(zip(ask.terms, ask.kinds, strict=True))["fs"] == "quoted"
    assert ask.named("Can't resolve 'fs' in node_modules/etag") != ()
    assert "fs" not in ask.named("fsync of the offsets file took 3s")


def test_generic_and_short_words_are_not_terms() -> None:
    assert not AskTerms.of("Why is it failing? Please help, what is wrong with this error log?")
    assert not AskTerms.of("")
    assert AskTerms.of("").hits("anything at all") == 0


def test_hits_counts_distinct_terms_case_blind() -> None:
    terms = AskTerms.of("Why does the gateway return 502 for /api/orders?")
    assert terms.hits("10.0.0.7 - - GET /api/orders HTTP/1.1 502 0") == 2
    assert terms.hits("Gateway timeout on upstream") == 1
    assert terms.hits("GET /health 200") == 0


def test_numbers_and_codes_respect_their_boundaries() -> None:
    terms = AskTerms.of("what does E0308 mean and why 404?")
    assert terms.hits("error[E0308]: mismatched types") == 1
    assert terms.hits("error[E03081]: something else") == 0
    assert terms.hits("GET /x 404 12") == 1
    assert terms.hits("request id 140451 took 1.404s") == 0


def test_words_match_at_a_word_start_only() -> None:
    terms = AskTerms.of("Can the worker connect to the broker?")
    assert terms.named("connection refused by broker") == ("connect", "broker")
    assert terms.hits("disconnected") == 0


def test_an_identifier_does_not_match_a_longer_identifier() -> None:
    terms = AskTerms.of("What is err() supposed to be here?")
    assert terms.hits("    let x = err();") == 1
    assert terms.hits("an error happened") == 0


@given(st.text(max_size=200), st.text(max_size=200))
def test_hits_never_fails_and_is_bounded_by_the_terms(goal: str, line: str) -> None:
    terms = AskTerms.of(goal)
    assert 0 <= terms.hits(line) <= len(terms.terms)
    assert bool(terms) == bool(terms.terms)


def test_a_huge_goal_is_read_only_so_far_and_yields_no_huge_term() -> None:
    terms = AskTerms.of("a" * 2_000_000 + " parse_header")
    assert all(len(term) <= 120 for term in terms.terms)
    assert AskTerms.of("look at parse_header " + "b" * 50_000).hits("in parse_header()") == 1


def test_a_code_family_named_by_its_letter_finds_its_codes() -> None:
    terms = AskTerms.of("Which bugbear (B) findings are there, and any E ones?")
    assert _kinds("Which bugbear (B) findings are there, and any E ones?") == {
        "finding": "word", "bugbear": "word", "b": "family", "e": "family", "ones": "word",
    }  # fmt: skip
    assert terms.named("src/app.py:12:5: B028 No explicit `stacklevel`") == ("b",)
    assert terms.named("src/app.py:9:1: E501 Line too long") == ("e",)
    # A family's letter alone, inside a word, or before too few digits names nothing.
    assert terms.named("B is for bravo; Bob wrote b7 and abc123") == ()


def test_letters_of_two_or_more_also_find_themselves_as_a_value() -> None:
    terms = AskTerms.of("Which of the (NV) rows had the most visits?")
    assert terms.named("LAS,McCarran International,Las Vegas,NV,USA,8523") == ("nv",)
    assert terms.named("NV12 tripped") == ("nv",)
    # Only as a whole word: not inside another word or code.
    assert terms.named("nvme0n1: p1 p2, NVX and envoy") == ()


def test_a_lone_article_is_a_family_only_in_brackets() -> None:
    assert "i" not in _kinds("I think A is the one that leaks")
    assert _kinds("What does rule family (A) flag?")["a"] == "family"


def test_a_word_of_the_ask_is_looked_for_by_its_stem() -> None:
    terms = AskTerms.of("Were the deletions deferred?")
    assert terms.named("Deferring deletion of range [1, 2)") == ("deletion", "deferr")


def test_a_word_ending_in_e_or_y_finds_its_inflections() -> None:
    terms = AskTerms.of("Which sessions did the server expire, and did any retry?")
    assert terms.named("Expiring session 0x157e, timeout of 5000ms exceeded") == ("session", "expir")
    assert terms.named("3 retries left") == ("retr",)
    assert terms.named("session expired") == ("session", "expir")
    assert terms.named("deleted the range") == ()


def test_a_plural_in_ies_finds_its_singular() -> None:
    assert AskTerms.of("Do the failure policies match?").named("disk_failure_policy: stop") == ("polic",)


def test_a_compound_of_words_matches_its_words_written_apart_and_a_code_is_not_split() -> None:
    ask = AskTerms.of("Did the day-mode unit run, and why is x86-64 listed?")
    assert ask.named("Finished apply-transition@day.service: Apply day Mode Transition.") == ("mode", "day")
    assert ask.named("set day-mode on display 0") == ("day-mode", "mode", "day")
    assert "x86" not in ask.terms and "64" not in ask.terms


def test_what_the_ask_opens_a_clause_by_setting_aside_gives_no_terms() -> None:
    ask = AskTerms.of("Ignoring the override ones (TS4114) and anything under src/testing, which files fail on strict?")
    assert ask.named("src/testing/Scheduler.ts(46,10): error TS4114: needs an override modifier") == ()
    assert ask.named("src/util/pipe.ts(89,5): error TS2322: not assignable under strict") == ("strict",)


def test_a_cue_inside_a_clause_is_a_verb_of_the_question_not_a_setting_aside() -> None:
    ask = AskTerms.of("Why is the service ignoring my override?")
    assert ask.named("skipped override /etc/unit/override.conf") == ("overrid",)


def test_an_alerts_terms_are_its_words_and_names_not_its_numbers() -> None:
    echo = AskTerms.echoed(["2026-12-07 WARN failed to publish member 63a89b00 (caller=etcdserver/server.go:2098) 7s"])
    assert {"publish", "member", "etcdserver/server.go:2098"} <= set(echo.terms)
    assert not {"2026-12-07", "63a89b00", "7s", "failed"} & set(echo.terms)


def test_the_users_prose_lends_the_ask_its_identifiers_and_codes_not_its_words() -> None:
    ask = AskTerms.of("Why does the nightly job run single-threaded?")
    prose = "From my shell it uses every core: I export XZ_OPT=-T0 in my profile, and error E0432 never shows."
    lent = ask.with_context([prose])
    assert set(lent.terms) - set(ask.terms) == {"xz_opt", "-t0", "e0432"}


def test_the_terms_the_users_prose_lends_are_capped() -> None:
    prose = " ".join(f"OPT_{number}" for number in range(40))
    lent = AskTerms.of("Which option is wrong?").with_context([prose], AskTuning(context_terms=3))
    assert {term for term in lent.terms if term.startswith("opt_")} == {"opt_0", "opt_1", "opt_2"}

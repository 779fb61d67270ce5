"""The fast paths of the stomach give the same answers as the plain ones, and the header-field rule."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from organs.accounting import (
    DEFAULT_ENCODING,
    additive_chunks,
    count_tokens,
    count_tokens_exact,
    count_tokens_joined,
    joins_additively,
)
from organs.counting import ENCODINGS
from organs.stomach.core.blocks.split import _blocks_by_line, _unfenced_blocks
from organs.stomach.core.distill.log import distill_log, mask_variables
from organs.stomach.core.distill.log.masking import mask_by_words
from organs.stomach.core.distill.text import TIMES
from organs.stomach.core.shapes.signals import _LEVEL, level_of
from organs.stomach.core.shapes.timestamps import window_of
from organs.stomach.core.tuning import ClassifyTuning, LogConfig

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "loghub"
PREFIX = LogConfig().mask_prefix

_LOGGY = st.sampled_from(
    [
        "\n",
        "\n\n",
        " ",
        "  ",
        "\t",
        "\r\n",
        "\r",
        ".",
        ":",
        "'",
        '"',
        "'s",
        "ERROR",
        "a",
        "Z",
        "9",
        "123",
        "0x1f",
        "é",
        "🙂",
        "\u2028",
        "\x85",
        "\x1c",
        "\u200b",
        "/",
        "-",
        "=",
        "[",
        "]",
        "(x)",
        "!",
        "?",
        ",",
        "<|endoftext|>",
    ]
)
_TEXT = st.lists(st.one_of(st.text(max_size=6), _LOGGY), max_size=80).map("".join)


@pytest.mark.parametrize("encoding", list(ENCODINGS))
@settings(max_examples=300, deadline=None)
@given(text=_TEXT, size=st.integers(min_value=1, max_value=40))
def test_additive_chunks_join_back_and_their_counts_add_up(encoding: str, text: str, size: int) -> None:
    chunks = additive_chunks(text, size)
    assert "".join(chunks) == text
    assert sum(count_tokens(chunk, encoding) for chunk in chunks) == count_tokens(text, encoding)


# Printable ASCII other than the space: what joins_additively wants on both sides of the newline.
_SOLID_CHARACTER = st.characters(min_codepoint=0x21, max_codepoint=0x7E)


@settings(max_examples=500, deadline=None)
@given(
    left=_TEXT,
    before=_SOLID_CHARACTER,
    indent=st.sampled_from(["", " ", "  ", "\t", " \t "]),
    after=_SOLID_CHARACTER,
    right=_TEXT,
)
def test_a_join_said_to_be_additive_is(left: str, before: str, indent: str, after: str, right: str) -> None:
    # Built to be additive in every example (random text almost never is), so the sum is checked 500 times,
    # in every encoding; a ``/`` right after the newline is the one opening the rule leaves out.
    head, tail = f"{left}{before}\n", f"{indent}{after}{right}"
    assert joins_additively(head, tail) is not (not indent and after == "/")
    for encoding in ENCODINGS:
        if joins_additively(head, tail, encoding):
            assert count_tokens(head + tail, encoding) == count_tokens(head, encoding) + count_tokens(tail, encoding)


@pytest.mark.parametrize(
    ("left", "right", "additive"),
    [
        ("[frame a]\n", "ERROR x", True),
        ("[frame a]\n", "  indented", True),
        ("[frame a]\n", "  ", False),  # whitespace to the end joins the newline's token
        ("[frame a] \n", "x", False),
        ("[frame a]\n", "é", False),  # outside the proven ASCII neighbours
        ("[frame a].\n", "/usr/bin", False),  # o200k_base's punctuation runs take the newline and the slash
        ("[frame a].\n", " /usr/bin", True),
        ("\n", "x", False),
        ("[frame a]", "x", False),
    ],
)
def test_joins_additively_needs_solid_neighbours_around_a_newline(left: str, right: str, additive: bool) -> None:
    assert joins_additively(left, right) is additive


@pytest.mark.skipif(not CORPUS.exists(), reason="Loghub corpus not present")
def test_additive_chunks_add_up_over_the_whole_corpus() -> None:
    corpus = "\n\n".join(path.read_text(encoding="utf-8") for path in sorted(CORPUS.glob("*_2k.log")))
    chunks = additive_chunks(corpus, 4096)
    assert len(chunks) > 500 and "".join(chunks) == corpus
    for encoding in ENCODINGS:
        whole = count_tokens(corpus, encoding)
        assert count_tokens_exact([corpus], encoding, 2) == [whole]
        assert sum(count_tokens(chunk, encoding) for chunk in chunks) == whole


@settings(max_examples=300, deadline=None)
@given(body=_TEXT.map(lambda text: text.replace("\n", " ")))
def test_masking_word_by_word_equals_masking_the_line(body: str) -> None:
    assert mask_by_words(body, {}, PREFIX) == mask_variables(body, PREFIX)


_QUOTE_HEAVY = st.lists(
    st.sampled_from(['"', "'", " ", "  ", "a", "Ab", "7", "x=", "=1", "/p", "/q/r", ":", "-", "_", ".", "é", "don't"]),
    max_size=60,
).map("".join)


@settings(max_examples=500, deadline=None)
@given(body=_QUOTE_HEAVY)
def test_masking_around_quoted_values_equals_masking_the_line(body: str) -> None:
    # Quoted values are found first and the words between them masked one at a time: the same as the line.
    assert mask_by_words(body, {}, PREFIX) == mask_variables(body, PREFIX)


def test_masking_keeps_a_leading_slash_and_trailing_punctuation() -> None:
    assert mask_variables("src: /10.250.19.102:54106 dest: /10.0.0.1:50010", PREFIX) == "src: /<*> dest: /<*>"
    assert (
        mask_variables("Received disconnect from 139.59.209.18: 11: Bye", PREFIX)
        == "Received disconnect from <*>: <*>: Bye"
    )
    assert mask_variables("moved /var/lib/x/1 to /srv", PREFIX) == "moved <*> to /srv"


def test_long_constant_fields_stay_masked_in_template_lines() -> None:
    log = "\n".join(f"2024-05-01 10:00:{k:02d} INFO job 5f3a9c2e7d1b4a60 step {k} port 22" for k in range(30))
    rendering = distill_log(log, 300, DEFAULT_ENCODING).rendering
    assert f"{TIMES}30 INFO job <*> step <*> port 22" in rendering


def _host_log() -> str:
    hosts = ["alpha", "bravo", "charlie-7", "delta"]
    events = [
        f"daemon[{pid}]: session {verb} for user {user}"
        for pid, verb, user in [
            (1, "opened", "root"),
            (2, "closed", "root"),
            (3, "opened", "bob"),
            (4, "closed", "bob"),
        ]
    ]
    events += [f"daemon[9]: disk {name} is {state}" for name in ("sda", "sdb") for state in ("ok", "degraded")]
    rows = []
    for index in range(400):
        level = "WARN" if index % 7 == 0 else "INFO"
        rows.append(
            f"Jul  1 10:{index // 60 % 60:02d}:{index % 60:02d} {hosts[index % 4]} {level} "
            f"{events[(index // 4) % len(events)]}"
        )
    return "\n".join(rows)


def test_interchangeable_leading_fields_leave_the_template_lines_and_are_stated() -> None:
    digest = distill_log(_host_log(), 3000, DEFAULT_ENCODING)
    lines = digest.rendering.split("\n")
    assert lines[1].startswith("template lines leave out the first 1 space-separated field after the clock")
    assert "alpha|bravo|charlie-<*>|…" in lines[1]
    templates = [line for line in lines if line.startswith(TIMES)]
    # Hosts no longer split one event into four templates; the level stays in every template line.
    assert len(templates) == digest.templates <= 16
    assert all(" INFO " in line or " WARN " in line for line in templates)
    assert not any("alpha" in line or "bravo" in line for line in templates)
    # The examples are real lines, with their host.
    assert any(line.strip().startswith("e.g. Jul  1 10:00:00 alpha") for line in lines)


def test_a_field_that_tells_events_apart_stays() -> None:
    rows = [f"2024-05-01 10:00:{k % 60:02d} {('Accepted', 'Failed', 'Started')[k % 3]} job {k}" for k in range(300)]
    rendering = distill_log("\n".join(rows), 2000, DEFAULT_ENCODING).rendering
    assert "leave out" not in rendering
    assert f"{TIMES}100 Accepted job <*>" in rendering


def test_window_of_reads_two_digit_years_and_skips_undated_shapes() -> None:
    stamps = ["081109 203615", "081110 101010", "081109 203518"]
    assert window_of(stamps) == ("2008-11-09T20:35:18Z", "2008-11-10T10:10:10Z")
    # Across the 1970 pivot text order is not time order: every stamp is read.
    assert window_of(["691231 000000", "700101 000000"]) == ("1970-01-01T00:00:00Z", "2069-12-31T00:00:00Z")
    assert window_of(["Jul 20 18:00:01", "Jul 21 18:00:01"]) == (None, None)


def test_space_padded_header_columns_are_fields_not_empty_words() -> None:
    rows = []
    for index in range(300):
        pid, tid = (17, 2395) if index % 2 else (1702, 8)
        rows.append(f"03-17 16:13:{index % 60:02d}.811 {pid:>5} {tid:>5} D Power: acquire lock={index} flags=0x1")
    digest = distill_log("\n".join(rows), 2000, DEFAULT_ENCODING)
    assert "leave out the first 2 space-separated fields after the clock" in digest.rendering
    assert f"{TIMES}300 D Power: acquire lock=<*> flags=0x1" in digest.rendering


def test_a_word_that_is_the_whole_message_is_not_merged_away() -> None:
    events = ["closeQs", "instantCollapse", "onExpandingStarted", "onExpandingFinished", "cancelAutohide"]
    log = "\n".join(f"2024-05-01 10:00:{k:02d} D StatusBar: {events[k % len(events)]}" for k in range(40))
    rendering = distill_log(log, 2000, DEFAULT_ENCODING).rendering
    assert all(f"D StatusBar: {event}" in rendering for event in events)


def test_a_varying_address_keeps_its_port_colon() -> None:
    log = "\n".join(f"2024-05-01 10:00:{k:02d} INFO Accepted connection from /10.0.{k}.7:{5000 + k}" for k in range(30))
    rendering = distill_log(log, 300, DEFAULT_ENCODING).rendering
    assert f"{TIMES}30 INFO Accepted connection from /<*>:<*>" in rendering


def test_templates_sharing_a_tag_are_grouped_under_it_when_space_is_short() -> None:
    tags = ["kernel[0]:", "sshd[7]:", "cron[9]:"]
    # Each event differs from every other in two words, so no two merge into one template.
    words = [f"{chr(97 + k % 26)}{chr(97 + k // 26 % 8)}" for k in range(208)]
    rows = [
        f"2024-05-01 10:00:{k % 60:02d} {tags[k % 3]} event {word} kind {word}x seen" for k, word in enumerate(words)
    ]
    digest = distill_log("\n".join(rows * 2), 400, DEFAULT_ENCODING)
    lines = digest.rendering.split("\n")
    assert any(f"§ {tag}" in lines for tag in tags)
    assert "§ T heads the templates that begin with the tag T" in digest.rendering
    grouped = [line for line in lines if line.startswith(f" {TIMES}")]
    assert grouped and all(tag not in line for line in grouped for tag in tags)
    assert all(line.startswith(f" {TIMES}2 event ") for line in grouped)
    shown = len(grouped)
    assert f"{digest.templates - shown:,} templates (" in digest.rendering
    assert digest.tokens is not None and digest.tokens <= 400
    # With room for everything, the log is served whole.
    roomy = distill_log("\n".join(rows[:20]), 4000, DEFAULT_ENCODING).rendering
    assert roomy == "\n".join(rows[:20])


def test_a_masked_field_keeps_its_shape_and_its_named_pieces() -> None:
    rows = [
        f"2024-05-01 10:00:{k:02d} INFO took {k}.{k * 7 % 10}5 s in IO80211PeerManager::setMode at /srv/run{k}/x.log "
        f"reason 'lost{k}' domain com.example.errors"
        for k in range(30)
    ]
    rendering = distill_log("\n".join(rows), 300, DEFAULT_ENCODING).rendering
    # A decimal keeps its point, a method of a numbered class its name, a path its slash, a quoted value its
    # quotes; a constant without a digit is a name and is shown.
    assert f"{TIMES}30 INFO took <*>.<*> s in <*>::setMode at /<*> reason '<*>' domain com.example.errors" in (
        rendering
    )


def test_a_long_constant_with_a_digit_stays_masked_but_a_digit_free_one_is_shown() -> None:
    rows = [f"2024-05-01 10:00:{k:02d} INFO job 5f3a9c2e7d1b4a60 in /var/lib/service/state step {k}" for k in range(30)]
    rendering = distill_log("\n".join(rows), 300, DEFAULT_ENCODING).rendering
    assert f"{TIMES}30 INFO job <*> in /var/lib/service/state step <*>" in rendering


def test_a_template_making_up_much_of_the_log_is_shown_with_an_example_however_long() -> None:
    # Many short rare events and one long event that is a third of the log: a tight budget shows the long
    # one with a real line before it shows every rare one, and the omission note counts what it left out.
    # Each rare event differs from every other in two words, so no two merge into one template.
    words = [f"{chr(97 + k % 26)}{chr(97 + k // 26 % 8)}" for k in range(200)]
    rare = [
        f"2024-05-01 10:{k // 60:02d}:{k % 60:02d} INFO event {word} kind {word}x seen" for k, word in enumerate(words)
    ]
    long_event = (
        "2024-05-01 11:00:{:02d} INFO replication of the volume to the standby site finished after the checksum "
        "verification pass and the catalogue update for every shard of the primary cluster, seq {}"
    )
    rows = rare + [long_event.format(k % 60, k) for k in range(100)]
    digest = distill_log("\n".join(rows), 600, DEFAULT_ENCODING)
    lines = digest.rendering.split("\n")
    assert any(line.startswith(f"{TIMES}100 INFO replication of the volume") for line in lines)
    assert any(line.startswith("    e.g. 2024-05-01 11:00:00 INFO replication") for line in lines)
    shown = sum(1 for line in lines if line.startswith(f"{TIMES}1 INFO event "))
    assert 0 < shown < 200
    assert f"… [{200 - shown} templates ({200 - shown} lines) not shown] …" in digest.rendering
    assert digest.tokens is not None and digest.tokens <= 600


_LEVELLED = st.lists(
    st.one_of(
        _LOGGY,
        st.sampled_from(
            ["INFO", "Warn", "[error]", "level=debug", ": error:", " W Act:", "1 E x:", "İ", "K", "| Fatal |"]
        ),
    ),
    max_size=60,
).map("".join)


@settings(max_examples=500, deadline=None)
@given(line=_LEVELLED)
def test_the_level_prefilter_never_changes_the_answer(line: str) -> None:
    match = _LEVEL.search(line, 0, 160)
    unfiltered = None if match is None else next(group for group in match.groups() if group is not None).lower()
    assert level_of(line) == unfiltered


_BLANKISH = st.lists(
    st.sampled_from(
        ["\n", " ", "\t", "\r", "x", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u3000", "\xa0", "y z", "é"]
    ),
    max_size=40,
).map("".join)


@settings(max_examples=500, deadline=None)
@given(text=_BLANKISH, max_blocks=st.sampled_from([None, 1, 2, 3]))
def test_unfenced_text_splits_the_same_by_regex_as_line_by_line(text: str, max_blocks: int | None) -> None:
    assert _unfenced_blocks(text, max_blocks) == _blocks_by_line(text, max_blocks, ClassifyTuning())


@settings(max_examples=400, deadline=None)
@given(parts=st.lists(st.tuples(_TEXT, st.booleans()), max_size=6))
def test_a_joined_count_from_known_parts_is_the_count_of_the_joined_text(parts: list[tuple[str, bool]]) -> None:
    known = [(text, count_tokens(text) if is_known else None) for text, is_known in parts]
    assert count_tokens_joined(known) == count_tokens("".join(text for text, _ in parts))


@pytest.mark.skipif(not CORPUS.exists(), reason="Loghub corpus not present")
def test_a_joined_count_over_corpus_logs_skips_their_middles_and_stays_exact() -> None:
    logs = [path.read_text(encoding="utf-8")[:20_000] for path in sorted(CORPUS.glob("*_2k.log"))]
    parts: list[tuple[str, int | None]] = []
    for log in logs:
        parts += [(f"[frame · log · {len(log)} chars]\n", None), (log, count_tokens(log)), ("\n\n", None)]
    joined = "".join(text for text, _ in parts)
    assert count_tokens_joined(parts) == count_tokens(joined)
    assert count_tokens_joined([(text, None) for text, _ in parts]) == count_tokens(joined)

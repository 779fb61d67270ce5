"""The normal form: what a terminal shows, served to the model; the received bytes stay the frame's full text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from organs.accounting import digest_text
from organs.stomach import ingest_paste
from organs.stomach.core.blocks.normal import normal_form, normalize
from organs.stomach.core.blocks.segments import cut_blocks, segment_texts
from tests.support.honesty import assert_bundle_honest


@pytest.mark.parametrize(
    ("received", "shown"),
    [
        ("plain text\nstays", "plain text\nstays"),
        ("one\r\ntwo\r\n", "one\ntwo\n"),
        ("\x1b[1;31mERROR\x1b[0m disk full", "ERROR disk full"),
        ("\x9b32mok\x9b0m", "ok"),
        # OSC (window title) ended by BEL, APC (CI timing mark) ended by BEL, DCS ended by ST.
        ("\x1b]0;build: step 3\x07$ make", "$ make"),
        ("\x1b_bk;t=1700000000000\x07--- running tests", "--- running tests"),
        ("\x1bPq#0;2;0;0;0\x1b\\after", "after"),
        ("\x1b(Bcharset\x1b7saved\x1b8", "charsetsaved"),
        # A redraw shorter than the line before it leaves the longer tail on screen.
        ("fetching 10%\rdone", "donehing 10%"),
        ("fetching 10%\r\x1b[Kdone", "done"),
        ("fetching 10%\x1b[2K\rdone", "done"),
        ("[#####     ] 50%\r[##########] 100%\r\n", "[##########] 100%\n"),
        ("abc\x08\x08X", "aXc"),
        ("ab\x1b[1Kc", "  c"),
        ("line\r", "line"),
    ],
)
def test_the_normal_form_is_what_a_terminal_shows(received: str, shown: str) -> None:
    assert normal_form(shown) is shown, "what a terminal shows holds no controls left to apply"
    assert normal_form(received) == shown


def test_a_text_without_controls_is_its_own_normal_form() -> None:
    text = "2024-01-01 10:00:00 INFO up\nno controls here"
    assert normal_form(text) is text
    assert not normalize(text).changed


_CONTROL_PIECES = st.sampled_from(["\r", "\r\n", "\n", "\x1b[31m", "\x1b[K", "\x1b[2K", "\x1b]0;t\x07", "\x08", "ab"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=8), _CONTROL_PIECES), max_size=30).map("".join))
def test_the_normal_form_is_line_local_and_controls_free(text: str) -> None:
    shown = normal_form(text)
    assert shown.count("\n") == text.count("\n")
    assert "\x1b" not in shown and "\r" not in shown and "\x08" not in shown
    assert shown.split("\n") == [normal_form(line) for line in text.split("\n")]
    assert normal_form(shown) == shown


def test_a_progress_log_is_served_as_its_last_state_with_received_spans_and_id() -> None:
    progress = "".join(f"\rdownloading layer {n}/40" for n in range(1, 41))
    log = (
        "\x1b[90m2024-05-01 10:00:00\x1b[0m INFO pulling image\r\n"
        f"2024-05-01 10:00:01 INFO{progress}\r\n"
        "\x1b[31m2024-05-01 10:00:02 ERROR pull failed: manifest unknown\x1b[0m\r\n"
    )
    paste = "Why did the pull fail?\r\n\r\n" + log
    bundle = ingest_paste(paste)
    assert bundle.query.goal == "Why did the pull fail?"
    [frame] = bundle.provider.frames
    start, end = frame.span
    received = paste[start:end]
    assert received.startswith("\x1b[90m2024") and received.endswith("manifest unknown\x1b[0m")
    assert frame.id == digest_text(received)
    assert frame.normal_form
    assert frame.content is not None
    assert "\x1b" not in frame.content and "\r" not in frame.content
    assert "downloading layer 40/40" in frame.content and "layer 39/40" not in frame.content
    fetched = bundle.provider.serve(frame.id, "full")
    assert fetched.content == received and fetched.content_digest == frame.id and not fetched.normal_form
    assert_bundle_honest(paste, bundle)


def test_lines_that_only_hold_escapes_are_blank_and_split_blocks() -> None:
    paste = "What failed?\n\x1b[0m\x1b_bk;t=1\x07\r\n2024-05-01 10:00:00 INFO a\n2024-05-01 10:00:01 ERROR b"
    bundle = ingest_paste(paste)
    assert [entry.kind for entry in bundle.report] == ["prose", "log"]
    assert bundle.query.goal == "What failed?"
    assert_bundle_honest(paste, bundle)


def test_an_unchanged_segment_is_served_as_received() -> None:
    paste = "2024-05-01 10:00:00 INFO a\n2024-05-01 10:00:01 ERROR b\n\nWhat failed?"
    frame = ingest_paste(paste).provider.frames[0]
    assert not frame.normal_form and frame.representation == "full" and frame.content_digest == frame.id


def test_spaces_that_blank_an_earlier_state_stay_in_the_span() -> None:
    # A progress line padded with spaces to wipe its longer earlier state: the span keeps the padding,
    # so the served line is what the terminal showed ("done"), not "doneloading 40%".
    pull = "2024-05-01 10:00:00 INFO pull\n"
    paste = pull + "2024-05-01 10:00:01 INFO downloading 40%\r2024-05-01 10:00:09 INFO done" + " " * 12 + "\r\n"
    bundle = ingest_paste(paste + "\nDid the pull finish?")
    frame = bundle.provider.frames[0]
    assert frame.content is not None and frame.content.endswith("INFO done")
    assert_bundle_honest(paste + "\nDid the pull finish?", bundle)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(" x\t", max_size=4), _CONTROL_PIECES), max_size=30).map("".join))
def test_a_block_is_served_the_form_of_its_received_span_read_from_the_paste(text: str) -> None:
    # The paste is drawn once: each block's form is read from it, and is the form of the block's received span.
    blocks, served = cut_blocks(text, 64)
    for block in blocks:
        received = text[block.start : block.end]
        assert segment_texts(received, served=served.get((block.start, block.end)), normal=block.normal) == (
            received,
            normal_form(received),
        )


def test_a_space_before_a_closing_escape_stays_in_the_block_served() -> None:
    # The received span ends before the spaces after the escape, so its last line draws the space before it; in
    # the paste's own form that space is trailing whitespace, past the block's end. The block is served the span's.
    paste = "first line\n\x1b[1mbold \x1b[0m   "
    blocks, served = cut_blocks(paste, 64)
    (block,) = blocks
    assert normalize(paste).text[block.start : len("first line\nbold")] == "first line\nbold"
    assert served[block.start, block.end] == normal_form(paste[block.start : block.end]) == "first line\nbold "

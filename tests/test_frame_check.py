"""A reader refuses a frame whose bytes do not hash to what it claims."""

from __future__ import annotations

import msgspec
import pytest

from envelopes.ids import digest_text
from organs.errors import FrameTampered
from organs.frame_check import verify_frame
from organs.runtime.stored_text import text_ref_of
from tests.support.envelopes import note_frame


def test_an_honest_frame_passes_unchanged() -> None:
    frame = note_frame("disk full on /var\nretrying in 5s\n")
    assert verify_frame(frame, frame.id) is frame


def test_a_frame_served_under_another_id_is_refused() -> None:
    frame = note_frame("disk full on /var\n")
    with pytest.raises(FrameTampered, match="asked for"):
        verify_frame(frame, digest_text("something else"))


def test_content_rewritten_behind_its_digest_is_refused() -> None:
    frame = note_frame("deploy failed: exit 2\n")
    forged = msgspec.structs.replace(frame, content="deploy succeeded\n")
    with pytest.raises(FrameTampered, match="hashes to"):
        verify_frame(forged, frame.id)


def test_a_full_frame_whose_bytes_are_not_its_id_is_refused_even_with_a_matching_digest() -> None:
    frame = note_frame("deploy failed: exit 2\n")
    forged_text = "deploy succeeded\n"
    forged = msgspec.structs.replace(
        frame, representation="full", content=forged_text, content_digest=digest_text(forged_text)
    )
    with pytest.raises(FrameTampered, match="not its id"):
        verify_frame(forged, frame.id)


def test_a_frame_by_reference_passes_and_is_checked_once_its_text_is_fetched_in() -> None:
    frame = note_frame("disk full on /var\nretrying in 5s\n")
    ref = text_ref_of((frame.content or "").encode())
    travelling = msgspec.structs.replace(frame, content="", content_ref=ref)
    # Left out, the reference stands for the text: the reader that fetches it checks it against the reference.
    assert verify_frame(travelling, frame.id) is travelling
    forged = msgspec.structs.replace(travelling, content="disk fine\n")
    with pytest.raises(FrameTampered, match="hashes to"):
        verify_frame(forged, frame.id)


def test_a_full_frame_by_reference_whose_reference_is_not_its_id_is_refused() -> None:
    frame = note_frame("deploy failed: exit 2\n")
    other = "deploy succeeded\n"
    forged = msgspec.structs.replace(
        frame,
        representation="full",
        content="",
        content_digest=digest_text(other),
        content_ref=text_ref_of(other.encode()),
    )
    with pytest.raises(FrameTampered, match="not its id"):
        verify_frame(forged, frame.id)

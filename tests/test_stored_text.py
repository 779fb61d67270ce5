"""A goal stored apart (``goal_ref``): signatures vouch for its reference, fetched in or left out, and only for it."""

from __future__ import annotations

import io

import msgspec
import pytest

from envelopes.codec import decode, encode
from envelopes.ids import digest_bytes, digest_text
from envelopes.types import Admitted, Digested, Envelope, Frame, Rejected, StoredText, Yield
from organs.absorption import yield_context
from organs.accounting import count_tokens
from organs.pills import render_outcome
from organs.runtime.stored_text import as_it_travels, text_ref_of
from organs.secretion import paste_envelope
from organs.signing import seal_paste, sign_last_step
from organs.stomach import ingest_paste
from organs.stomach.worker import digest_paste
from tests.support.envelopes import AT
from tests.test_signing import ANA, SIGNERS, decide

ASK = "Why does the sweeper drop entries early, and which lease timer decides when an entry counts as stale? " * 40


def _by_reference(digested: Envelope) -> tuple[Envelope, StoredText]:
    """The stomach's digest with its goal stored apart, signed again as the stomach signs one."""
    assert isinstance(digested.payload, Digested)
    ref = text_ref_of(digested.payload.goal.encode())
    payload = msgspec.structs.replace(digested.payload, goal="", goal_ref=ref)
    return msgspec.structs.replace(digested, payload=payload), ref


def _signed_yield_by_reference() -> tuple[Envelope, StoredText]:
    paste = seal_paste(paste_envelope(ASK, origin=ANA, source="test", instance="t", now=AT), SIGNERS["host"])
    unsigned = digest_paste(paste, ingest_paste(ASK), instance="s1", now=AT)
    slim, ref = _by_reference(unsigned)
    # The stomach signs the digest as it travels (goal left out); absorption works on the goal fetched in.
    digested = sign_last_step(slim, SIGNERS["stomach"])
    assert isinstance(digested.payload, Digested)
    fetched = msgspec.structs.replace(digested, payload=msgspec.structs.replace(digested.payload, goal=ASK))
    return yield_context(fetched, "a1", signer=SIGNERS["absorption"], now=AT), ref


def test_a_goal_by_reference_verifies_left_out_or_fetched_in() -> None:
    fetched, ref = _signed_yield_by_reference()
    travelling = msgspec.structs.replace(fetched, payload=as_it_travels(fetched.payload))
    # What the wire carries decodes to the same reference, with no goal.
    carried = decode(encode(travelling))
    assert carried.payload.goal == "" and carried.payload.goal_ref == ref
    # The border fetches the goal in before screening: every signature holds, and the ask is the goal.
    out = decide(fetched)
    assert isinstance(out.payload, Admitted), out.payload
    assert out.payload.goal == ASK and ASK.strip() in out.payload.prompt.text


def test_a_reference_swapped_for_another_texts_breaks_the_signatures() -> None:
    fetched, _ = _signed_yield_by_reference()
    other = "Drop every table now."
    forged = msgspec.structs.replace(
        fetched, payload=msgspec.structs.replace(fetched.payload, goal=other, goal_ref=text_ref_of(other.encode()))
    )
    out = decide(forged)
    assert isinstance(out.payload, Rejected)
    assert "signature.invalid" in {reason.code for reason in out.payload.reasons}


def test_a_stored_text_is_named_by_the_hex_of_its_digest_and_a_name_is_hex() -> None:
    ref = text_ref_of(b"an ask")
    assert (ref.name, ref.size, ref.digest) == (digest_bytes(b"an ask").removeprefix("blake3:"), 6, ref.digest)
    with pytest.raises(msgspec.ValidationError, match="name must be 64 lowercase hex digits"):
        msgspec.msgpack.decode(
            msgspec.msgpack.encode({"name": "../" + "0" * 61, "size": 6, "digest": ref.digest}), type=StoredText
        )


def test_an_older_reader_decodes_a_digest_by_reference_and_sees_no_goal() -> None:
    class OlderDigested(msgspec.Struct):
        """``Digested`` as a reader before ``goal_ref`` knew it: the same fields but the new one."""

        goal: str
        anchors: tuple[str, ...]
        source_ref: str

    paste = paste_envelope(ASK, origin=ANA, source="test", instance="t", now=AT)
    slim, _ = _by_reference(digest_paste(paste, ingest_paste(ASK), instance="s1", now=AT))
    older = msgspec.msgpack.decode(msgspec.msgpack.encode(slim.payload), type=OlderDigested)
    assert older.goal == "" and older.source_ref == slim.payload.source_ref


def test_a_prompt_stored_by_reference_has_no_messages_until_its_text_is_fetched() -> None:
    out = decide(_signed_yield_by_reference()[0])
    assert isinstance(out.payload, Admitted)
    prompt = out.payload.prompt
    stored = msgspec.structs.replace(prompt, text="", text_ref=text_ref_of(prompt.text.encode()))
    with pytest.raises(ValueError, match="stored by reference"):
        _ = stored.messages
    assert msgspec.structs.replace(stored, text=prompt.text).messages == prompt.messages


def test_a_refusal_shows_where_the_ask_it_refused_is_kept() -> None:
    fetched, ref = _signed_yield_by_reference()
    refused = decide(fetched, trusted={})
    assert isinstance(refused.payload, Rejected)
    shown = io.StringIO()
    render_outcome(
        msgspec.structs.replace(refused, payload=msgspec.structs.replace(refused.payload, goal_ref=ref)), shown
    )
    assert f"the ask: {ref.size:,} bytes stored as {ref.name}" in shown.getvalue()


def _signed_yield_with_a_frame_by_reference() -> tuple[Envelope, Frame]:
    """A yield whose first frame's content the stomach stored apart, each step signed on the envelope as it
    travels; returned with the frame's content fetched in, as the border reads it."""
    text = "2026-12-01T09:00:01Z ERROR [worker-3] queue 7 job 12 timed out after 30000 ms\n" * 30 + "\n" + ASK
    paste = seal_paste(paste_envelope(text, origin=ANA, source="test", instance="t", now=AT), SIGNERS["host"])
    unsigned = digest_paste(paste, ingest_paste(text), instance="s1", now=AT)
    assert isinstance(unsigned.payload, Digested)
    first, *rest = unsigned.payload.frames
    slim = msgspec.structs.replace(first, content="", content_ref=text_ref_of((first.content or "").encode()))
    travelling = msgspec.structs.replace(
        unsigned, payload=msgspec.structs.replace(unsigned.payload, frames=(slim, *rest))
    )
    digested = sign_last_step(travelling, SIGNERS["stomach"])
    yielded = yield_context(digested, "a1", signer=SIGNERS["absorption"], now=AT)
    assert isinstance(yielded.payload, Yield)
    fetched = (msgspec.structs.replace(slim, content=first.content), *yielded.payload.frames[1:])
    return msgspec.structs.replace(yielded, payload=msgspec.structs.replace(yielded.payload, frames=fetched)), first


def test_a_frame_by_reference_verifies_fetched_in_and_travels_without_its_text() -> None:
    fetched, first = _signed_yield_with_a_frame_by_reference()
    carried = decode(encode(msgspec.structs.replace(fetched, payload=as_it_travels(fetched.payload))))
    assert isinstance(carried.payload, Yield)
    assert carried.payload.frames[0].content == "" and carried.payload.frames[0].content_ref is not None
    out = decide(fetched)
    assert isinstance(out.payload, Admitted), out.payload
    assert (first.content or "").splitlines()[0] in out.payload.prompt.text


def test_a_frame_reference_swapped_for_another_texts_breaks_the_signatures() -> None:
    fetched, first = _signed_yield_with_a_frame_by_reference()
    assert isinstance(fetched.payload, Yield)
    other = "2026-12-01T09:00:01Z INFO [worker-3] all jobs done\n"
    swapped = msgspec.structs.replace(
        fetched.payload.frames[0],
        content=other,
        content_digest=digest_text(other),
        content_ref=text_ref_of(other.encode()),
        token_cost=count_tokens(other, first.encoding),
    )
    forged = msgspec.structs.replace(
        fetched, payload=msgspec.structs.replace(fetched.payload, frames=(swapped, *fetched.payload.frames[1:]))
    )
    out = decide(forged)
    assert isinstance(out.payload, Rejected)
    assert "signature.invalid" in {reason.code for reason in out.payload.reasons}

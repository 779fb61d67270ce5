"""A reader's check of a served frame against the digests it claims (law 4, honest frames).

Every reader of evidence (the stomach answering ``frames.get``, ``ichor frame``,
the MCP server) calls ``verify_frame`` before it shows a frame: the id asked for
is the id served, the content hashes to ``content_digest``, and a full frame of
the received bytes hashes to its id. A mismatch is ``FrameTampered``, never output.
"""

from __future__ import annotations

import msgspec

from envelopes.ids import digest_text
from envelopes.types import Frame
from organs.errors import FrameTampered

__all__ = ["verify_frame", "whole_frame"]


def verify_frame(frame: Frame, frame_id: str) -> Frame:
    """``frame`` unchanged if it is honestly the frame ``frame_id``; else ``FrameTampered``."""
    if frame.id != frame_id:
        raise FrameTampered(f"asked for frame {frame_id}, was served {frame.id}")
    if frame.content is None:
        return frame
    if frame.content_ref is not None and not frame.content:
        # By reference: the reader that fetches the content checks it against the reference, which names
        # ``content_digest`` (the Struct sees to that).
        actual = frame.content_digest
    else:
        actual = digest_text(frame.content)
        if actual != frame.content_digest:
            raise FrameTampered(f"frame {frame_id}: its content hashes to {actual}, not {frame.content_digest}")
    if frame.representation == "full" and not frame.normal_form and actual != frame.id:
        raise FrameTampered(f"frame {frame_id}: its full bytes hash to {actual}, not its id")
    return frame


def whole_frame(compact: Frame, text: str) -> Frame:
    """The frame ``compact`` stands for served whole: ``text`` is its bytes as the paste holds them (not a normal
    form), so they must hash to its id; ``FrameTampered`` if they do not."""
    full = msgspec.structs.replace(
        compact,
        representation="full",
        content=text,
        content_digest=compact.id,
        token_cost=compact.full_tokens,
        normal_form=False,
        content_ref=None,
    )
    return verify_frame(full, compact.id)

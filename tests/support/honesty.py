"""The one honesty check of a digest, shared by the stomach and fault suites: honest frames, lossless spans."""

from __future__ import annotations

from collections.abc import Callable

from envelopes.types import Frame
from organs.accounting import count_tokens, digest_text
from organs.stomach import IngestBundle
from organs.stomach.core.blocks.normal import normal_form

__all__ = ["TokenCounts", "assert_bundle_honest", "assert_frame_honest"]


class TokenCounts:
    """Token counts of one encoding, each distinct text counted once: a bundle's check compares the count of a
    frame's full text several times, and counting a 50 MB text takes seconds."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self._counted: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        if text not in self._counted:
            self._counted[text] = count_tokens(text, self.encoding)
        return self._counted[text]


def assert_frame_honest(
    frame: Frame, full_text: str, encoding: str, counted: Callable[[str], int] | None = None
) -> None:
    count = counted or TokenCounts(encoding)
    assert frame.id == digest_text(full_text)
    assert frame.full_tokens == count(full_text)
    assert frame.full_bytes == len(full_text.encode("utf-8", "surrogatepass"))
    assert frame.lines == full_text.count("\n") + 1
    if frame.representation == "reference":
        assert frame.content is None and frame.content_digest is None and frame.token_cost == 0
    else:
        assert frame.content is not None
        assert frame.content_digest == digest_text(frame.content)
        assert frame.token_cost == count(frame.content)
    # What is served whole is the normal form, and the frame says when that differs from the bytes.
    served_whole = normal_form(full_text)
    if frame.representation != "reference":
        assert frame.normal_form == (served_whole != full_text)
    if frame.representation == "full":
        assert frame.content == (served_whole if frame.normal_form else full_text)
    if frame.representation == "compact":
        assert frame.token_cost < count(served_whole)


def assert_bundle_honest(text: str, bundle: IngestBundle) -> None:
    provider = bundle.provider
    counted = TokenCounts(bundle.encoding)
    assert bundle.source_digest == digest_text(text)
    spans = sorted(segment.span for segment in bundle.report)
    runs: list[str] = []
    reached = 0
    for start, end in spans:
        assert 0 <= start <= end <= len(text)
        if start == end:
            continue
        assert start >= reached, "spans overlap"
        if start > reached:
            runs.append(text[reached:start])
        reached = end
    if reached < len(text):
        runs.append(text[reached:])
    for run in runs:
        for line in normal_form(run).split("\n"):
            assert not line.strip() or line.lstrip(" ").startswith("```"), (
                "only whitespace, escape sequences and fence lines may lie outside the spans"
            )
    served_ids = [frame.id for frame in provider.frames]
    assert len(served_ids) == len(set(served_ids))
    for frame in provider.frames:
        full_text = provider.full_text(frame.id)
        start, end = provider.span(frame.id)
        assert text[start:end] == full_text
        assert frame.tier == bundle.tier
        assert_frame_honest(frame, full_text, bundle.encoding, counted)
        full = provider.serve(frame.id, "full")
        assert full.representation == "full" and full.content == full_text and full.content_digest == frame.id
        assert not full.normal_form
        assert full.token_cost == frame.full_tokens
        assert_frame_honest(provider.serve(frame.id, "compact"), full_text, bundle.encoding, counted)
    for segment in bundle.report:
        if segment.outcome in ("frame", "duplicate"):
            assert segment.frame_id in served_ids
    assert sum(frame.token_cost for frame in provider.frames) <= max(bundle.query.budget_tokens, 0)

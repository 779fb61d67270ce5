"""One resolver of a short frame id (``FrameStore.resolve``): among a tenant's own frames, or among all of them."""

from __future__ import annotations

import pytest

from organs.errors import FrameNotFound
from organs.runtime.bus import Tract
from organs.stomach.frames_store import FrameStore

pytestmark = pytest.mark.bus

SHARED = "abcdef012345"
ALICES = f"blake3:{SHARED}{'0' * 52}"
BOBS = f"blake3:{SHARED}{'1' * 52}"
LONE = f"blake3:123456789abc{'2' * 52}"


async def _indexed(tract: Tract) -> FrameStore:
    """A frame index holding three frames (two sharing their first 12 hex digits), alice's and bob's marked."""
    index = await tract.js.key_value(tract.subjects.frame_index_bucket)
    for frame_id in (ALICES, BOBS, LONE):
        await index.put(frame_id.removeprefix("blake3:"), b"")
    store = FrameStore(tract)
    await store.own("alice", [ALICES])
    await store.own("bob", [BOBS])
    return store


async def test_among_all_frames_a_unique_prefix_resolves_and_a_shared_one_asks_for_more_digits(tract: Tract) -> None:
    store = await _indexed(tract)
    assert await store.resolve("123456789abc") == LONE
    assert await store.resolve(f"{SHARED}1") == BOBS
    with pytest.raises(FrameNotFound, match=f"^2 frames start with {SHARED} .*give more digits$"):
        await store.resolve(SHARED)
    with pytest.raises(FrameNotFound, match=r"^no frame starts with 0000000000000$"):
        await store.resolve("0000000000000")


async def test_a_tenant_resolves_among_its_own_frames_and_anothers_is_answered_as_no_frame(tract: Tract) -> None:
    store = await _indexed(tract)
    # Bob's frame shares alice's prefix yet does not make it ambiguous for her: she is not told it exists.
    assert await store.resolve(SHARED, owner="alice") == ALICES
    assert await store.resolve(SHARED, owner="bob") == BOBS
    answers = []
    for prefix in (f"{SHARED}1", "123456789abc", "0000000000000"):
        with pytest.raises(FrameNotFound) as raised:
            await store.resolve(prefix, owner="alice")
        answers.append(str(raised.value).replace(prefix, "<prefix>"))
    # Bob's, one no tenant handed in, and one that does not exist: the same words.
    assert answers == ["no frame starts with <prefix>"] * 3

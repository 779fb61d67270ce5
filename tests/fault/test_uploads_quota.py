"""Uploads have a byte limit (#28): each named sender's own bucket is its quota, refused past it with a named reason."""

from __future__ import annotations

import dataclasses

import pytest

from organs.client import store_blob, uploads_bucket_for
from organs.errors import UploadRefused
from organs.runtime.bus import Tract, provision
from organs.runtime.limits import MIB, StoreLimits
from organs.stomach.frames_store import FrameStore
from tests.support.secured import connect_as, secured

pytestmark = pytest.mark.bus

__all__ = ["secured"]

QUOTA = 1 * MIB
UPLOAD = b"2026-12-01T22:00:00Z INFO an uploaded paste line of evidence\n" * (600 * 1024 // 62)


async def _senders_with_quota(secured: object, errors: list[str]) -> tuple[Tract, Tract, Tract]:
    """The admin, having provisioned each sender a quota of ``QUOTA``, the upstream user and the host."""
    server, directory, _ = secured  # type: ignore[misc]
    admin = await connect_as(server.url, directory, "admin", errors)
    admin.settings = dataclasses.replace(admin.settings, limits=StoreLimits(uploads_sender_max_bytes=QUOTA))
    await provision(admin)
    return (
        admin,
        await connect_as(server.url, directory, "upstream", errors),
        await connect_as(server.url, directory, "host", errors),
    )


async def test_an_upload_past_its_senders_quota_is_refused_with_a_named_reason(secured) -> None:  # type: ignore[no-untyped-def]
    errors: list[str] = []
    admin, upstream, host = await _senders_with_quota(secured, errors)
    first = await store_blob(upstream, UPLOAD)
    with pytest.raises(UploadRefused) as refused:
        await store_blob(upstream, UPLOAD + b"one more line\n")
    info = await admin.js.stream_info(f"OBJ_{uploads_bucket_for(upstream)}")
    print(f"\n[fault:uploads_quota] quota={QUOTA} stored={info.state.bytes} refused={refused.value.reason}")
    assert refused.value.reason == "uploads.sender_quota"
    assert "ICHOR_UPLOADS_SENDER_MAX_BYTES" in str(refused.value)
    assert info.state.bytes < QUOTA, "the refused upload stored no chunk"
    stomach = await connect_as(secured[0].url, secured[1], "stomach", errors)
    assert (await FrameStore(stomach).get_paste(first)).encode() == UPLOAD
    assert not errors, errors
    for tract in (stomach, host, upstream, admin):
        await tract.nc.close()


async def test_one_senders_full_quota_leaves_anothers_untouched(secured) -> None:  # type: ignore[no-untyped-def]
    errors: list[str] = []
    admin, upstream, host = await _senders_with_quota(secured, errors)
    await store_blob(upstream, UPLOAD)
    with pytest.raises(UploadRefused):
        await store_blob(upstream, UPLOAD + b"again\n")
    assert (await store_blob(host, UPLOAD + b"from the host\n")).startswith("blake3:")
    assert uploads_bucket_for(host) != uploads_bucket_for(upstream)
    assert not errors, errors
    for tract in (host, upstream, admin):
        await tract.nc.close()

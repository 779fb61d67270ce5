"""A paste handed over to the digest (``HandedText``): digested exactly as one passed as a string, then let go."""

from __future__ import annotations

import gc
import weakref

import msgspec
import pytest

from bench.planted_secrets import planted_pastes
from envelopes.ids import digest_text
from organs.stomach.core.ingest import IngestConfig, ingest_paste
from organs.stomach.core.parts import digest_parts
from organs.text_views import HandedText

ASK = "Which requests failed?"


def _log(lines: int) -> str:
    return "\n".join(
        f"2026-11-29T10:{n // 60 % 60:02d}:{n % 60:02d}.{n % 1000:03d}Z {'ERROR' if n % 9 == 0 else 'INFO'} "
        f"[req-{n * 7919:08x}] handler {n % 5} answered in {n % 300} ms"
        for n in range(lines)
    )


class _Paste(str):
    """A str that a weak reference can watch (a plain str cannot be weakly referenced)."""


@pytest.mark.parametrize("tail", ["", "\n", "\n\n  \n"])
def test_a_handed_paste_digests_as_the_same_string_passed_whole(tail: str) -> None:
    paste = f"{ASK}\n\n{_log(400)}{tail}"
    config = IngestConfig(budget_tokens=700)
    kept, _ = digest_parts(paste, config, None, digest_text(paste))
    handed, redacted = digest_parts(HandedText(paste), config, None, digest_text(paste))
    assert redacted is None
    assert msgspec.json.encode(handed) == msgspec.json.encode(kept)


def test_a_handed_paste_with_a_secret_is_redacted_as_one_passed_whole() -> None:
    planted = next(iter(planted_pastes(2)))
    paste = f"{ASK}\n\n{planted.text}\n"
    kept = digest_parts(paste, IngestConfig(), None, digest_text(paste))
    handed = digest_parts(HandedText(paste), IngestConfig(), None, digest_text(paste))
    assert handed[1] is not None and handed[1] == kept[1]
    assert msgspec.json.encode(handed[0]) == msgspec.json.encode(kept[0])


def test_the_digest_lets_a_handed_paste_go_and_a_handle_gives_it_once() -> None:
    paste = _Paste(f"{ASK}\n\n{_log(50)}\n")
    watched = weakref.ref(paste)
    handle = HandedText(paste)
    del paste
    bundle = ingest_paste(handle, IngestConfig())
    gc.collect()
    assert watched() is None, "the bundle still holds the handed paste"
    assert bundle.redaction.text == "" and bundle.provider.frames
    with pytest.raises(ValueError, match="taken once"):
        handle.take()

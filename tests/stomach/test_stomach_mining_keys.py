"""Mining keys past the ones kept whole (a log of ids): numbered as if every key were kept."""

from __future__ import annotations

import pytest

from organs.stomach.core.distill.log import mining
from organs.stomach.core.distill.log.headers import Header
from organs.stomach.core.distill.log.masking import DIGITS_TO_ZERO
from organs.stomach.core.tuning import LogConfig
from organs.text_views import TextLines


def _log() -> str:
    lines = []
    for n in range(600):
        host = f"node-{n % 3}"
        if n % 50 == 7:
            lines.append(f"2026-11-29T10:00:{n % 60:02d}Z {host} ERROR [req-{n * 2654435761 % 2**32:08x}] status 503")
            lines.append("    at com.example.Handler.handle(Handler.java:42)")
        else:
            lines.append(f"2026-11-29T10:00:{n % 60:02d}Z {host} INFO [req-{n * 40503 % 2**16:04x}] took {n % 7} ms")
    return "\n".join(lines)


def _mined(text: str) -> tuple[list[list[int]], list[mining.Shape], Header]:
    records, heads, header = mining.records_of(TextLines(text), text, LogConfig())
    return (
        [list(column) for column in (records.start, records.end, records.stamp_end, records.body_start)],
        heads,
        header,
    )


def test_keys_past_those_kept_whole_are_numbered_as_kept_ones_are(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _log()
    whole = _mined(text)
    assert whole[2].columns, "the log's host field is a header column: the cut is judged key by key"
    monkeypatch.setattr(mining, "_KEYS_KEPT", 3)
    assert _mined(text) == whole


def test_keys_kept_by_hash_are_told_apart_when_their_hashes_collide(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _log().translate(DIGITS_TO_ZERO)
    monkeypatch.setattr(mining, "_KEYS_KEPT", 3)
    # Only the key numbering is run here: every key of one length shares a hash.
    monkeypatch.setattr(mining, "hash", lambda key: len(key) % 5, raising=False)
    keys = mining._KeyNumbers(TextLines(text))
    numbers = []
    for line, key in enumerate(text.split("\n")):
        number = keys.kept.get(key)
        numbers.append(keys.number(key, line) if number is None else number)
    first_seen: dict[str, int] = {}
    assert numbers == [first_seen.setdefault(key, len(first_seen)) for key in text.split("\n")]
    assert keys.colliding, "the collisions were told apart"
    assert all(keys.key(number) == key for key, number in first_seen.items())

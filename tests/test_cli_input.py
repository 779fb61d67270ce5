"""`ichor digest` reads the paste as bytes: a file, stdin and the bus give the same spans and digests."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import msgspec
import pytest

from organs.cli import main
from organs.stomach import ingest_paste

# CRLF line ends, a bare carriage-return redraw and colour codes: what text-mode reading would translate.
PASTE = (
    b"Why did the upload stop?\r\n\r\n"
    b"\x1b[32m2024-06-01 09:00:00 INFO upload started\x1b[0m\r\n"
    b"2024-06-01 09:00:01 INFO progress 10%\rprogress 90%\r\n"
    b"\x1b[31m2024-06-01 09:00:02 ERROR connection reset by peer\x1b[0m\r\n"
)


def _digest(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    assert main(["digest", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_file_and_stdin_give_the_bus_spans_and_digests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "paste.txt"
    path.write_bytes(PASTE)
    from_file = _digest(capsys, str(path))

    class _Stdin:
        buffer = io.BytesIO(PASTE)

    monkeypatch.setattr(sys, "stdin", _Stdin())
    from_stdin = _digest(capsys, "-")

    # The bus carries the bytes decoded as they are, with no newline translation.
    bundle = ingest_paste(PASTE.decode("utf-8"))
    expected = json.loads(msgspec.json.encode([entry.span for entry in bundle.report]))
    for document in (from_file, from_stdin):
        assert document["source_digest"] == bundle.source_digest
        assert [entry["span"] for entry in document["report"]] == expected
        assert [frame["id"] for frame in document["frames"]] == [frame.id for frame in bundle.provider.frames]
        assert document["goal"] == "Why did the upload stop?"
        assert all("\r" not in frame["content"] and "\x1b" not in frame["content"] for frame in document["frames"])

"""Counting beside the caller: a large paste's texts counted on the other CPU while the caller distills them.

The fast exact backends hold the GIL while they count, so a thread beside the
caller would only take turns with it, and tiktoken, which releases the GIL,
spends three times their CPU. So one long-lived child process counts with the
fast backend instead, on the other CPU: ``python -m organs.counting.beside``,
reading requests on its standard input and answering on its standard output,
in order, in length-prefixed frames: a request is a msgpack frame of the
encoding and the number of texts, then each text's UTF-8 in pieces ended by an
empty frame; an answer is a msgpack frame of the counts. A thread of the caller
writes the requests, so handing over a paste costs the caller a queue put. The
thread encodes a piece only as the pipe takes it: a request waiting behind one
still being counted (a paste's normal form behind the paste) holds one piece
encoded, not a copy of its texts. Counts are exact whichever process makes them:
the child chooses its backend as every process does (``counter_for``), checked
against the reference.

On one CPU there is nothing to run beside, so the caller counts when it needs
the counts. If the child cannot start or dies (killed, out of memory), the texts
it held are counted by the caller, the failure is logged, and the next paste
starts a new child. The child ends when its input closes, so it never outlives
the process that started it.
"""

from __future__ import annotations

import os
import queue
import signal
import struct
import subprocess
import sys
import threading
from typing import IO

import msgspec
import structlog

from envelopes.types import DEFAULT_ENCODING
from organs.counting import counter_for

__all__ = ["SharedCount", "count_in_this_process"]

_log = structlog.get_logger("ichor.counting")
_LENGTH = struct.Struct(">I")
# Characters per piece of a text on the pipe: what the feeding thread holds encoded at a time.
_PIECE_CHARS = 1 << 20
# Lone surrogates (a paste decoded with ``surrogatepass``) cross the pipe as they are.
_UTF8 = ("utf-8", "surrogatepass")


class _ChildGone(Exception):
    """The counting child is not there to answer: it died, or could not start."""


def count_in_this_process(texts: list[str], encoding: str) -> list[int]:
    """Exact counts of ``texts`` by this process's counter: what the counting child runs."""
    # Afresh: ``SharedCount`` already counts a text once per paste, and texts rarely recur between pastes.
    counter = counter_for(encoding)
    return [counter.count_afresh(text) for text in texts]


def _read_frame(stream: IO[bytes]) -> bytes | None:
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    (length,) = _LENGTH.unpack(head)
    body = stream.read(length)
    return body if len(body) == length else None


def _write_frame(stream: IO[bytes], body: bytes) -> None:
    # Written apart: a body as large as a piece is not copied to put its length in front of it.
    stream.write(_LENGTH.pack(len(body)))
    stream.write(body)


def _write_request(stream: IO[bytes], encoding: str, texts: list[str]) -> None:
    _write_frame(stream, msgspec.msgpack.encode((encoding, len(texts))))
    for text in texts:
        for start in range(0, len(text), _PIECE_CHARS):
            _write_frame(stream, text[start : start + _PIECE_CHARS].encode(*_UTF8))
        _write_frame(stream, b"")
    stream.flush()


def _read_request(stream: IO[bytes]) -> tuple[str, list[str]] | None:
    """A request written by ``_write_request``; None once the input ends (or breaks off)."""
    head = _read_frame(stream)
    if head is None:
        return None
    encoding, number = msgspec.msgpack.decode(head, type=tuple[str, int])
    texts: list[str] = []
    for _ in range(number):
        pieces: list[bytes] = []
        while piece := _read_frame(stream):
            pieces.append(piece)
        if piece is None:
            return None
        encoded = b"".join(pieces)
        pieces.clear()
        texts.append(encoded.decode(*_UTF8))
        del encoded
    return encoding, texts


class _CountingChild:
    """The child process, the thread that feeds it, and its answers in the order asked."""

    def __init__(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "organs.counting.beside"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        self._requests: queue.SimpleQueue[tuple[str, list[str]] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._asked = 0
        self._answered = 0
        self._answers: dict[int, list[int]] = {}
        self.alive = True
        threading.Thread(target=self._feed, name="ichor-count-feed", daemon=True).start()

    def _feed(self) -> None:
        stdin = self._process.stdin
        assert stdin is not None
        while (request := self._requests.get()) is not None:
            try:
                _write_request(stdin, *request)
            except OSError:
                self.alive = False
                return
            # A request's texts may be all that still holds them: let them go once written, not at the next request.
            del request

    def ask(self, texts: list[str], encoding: str) -> int:
        """Hand ``texts`` over; the ticket to redeem in ``answer``."""
        with self._lock:
            if not self.alive or self._process.poll() is not None:
                self.alive = False
                raise _ChildGone("the counting process has ended")
            self._asked += 1
            self._requests.put((encoding, texts))
            return self._asked

    def answer(self, ticket: int) -> list[int]:
        """The counts asked for with ``ticket``, read in order as the child writes them."""
        stdout = self._process.stdout
        assert stdout is not None
        with self._lock:
            while ticket not in self._answers:
                frame = _read_frame(stdout) if self.alive else None
                if frame is None:
                    self.alive = False
                    raise _ChildGone(f"the counting process ended (exit status {self._process.poll()})")
                self._answered += 1
                self._answers[self._answered] = msgspec.msgpack.decode(frame, type=list[int])
            return self._answers.pop(ticket)

    def close(self) -> None:
        self._requests.put(None)
        self._process.kill()
        self._process.wait()


_child_lock = threading.Lock()
_child: _CountingChild | None = None


def _counting_child() -> _CountingChild | None:
    """The long-lived counting child, started on first use (and again after one died); None on one CPU."""
    global _child
    if (os.cpu_count() or 1) < 2:
        return None
    with _child_lock:
        if _child is None or not _child.alive:
            _child = _CountingChild()
        return _child


class SharedCount:
    """Exact counts of texts, started beside the caller at once and collected in ``counts``.

    Texts can be added while it runs (``add``); a text is counted once however
    often it is added. ``beside=False`` counts in the caller, when it asks.
    """

    def __init__(self, texts: list[str], encoding: str = DEFAULT_ENCODING, *, beside: bool = True) -> None:
        self._encoding = encoding
        self._beside = beside
        self._counts: dict[str, int] = {}
        self._pending: list[tuple[list[str], _CountingChild | None, int]] = []
        self._queued: set[str] = set()
        self.add(texts)

    def add(self, texts: list[str]) -> None:
        """Count these texts too (any already added are not counted again)."""
        fresh = [text for text in dict.fromkeys(texts) if text not in self._queued]
        if not fresh:
            return
        self._queued.update(fresh)
        child, ticket = None, 0
        try:
            child = _counting_child() if self._beside else None
            if child is not None:
                ticket = child.ask(fresh, self._encoding)
        except (_ChildGone, OSError) as error:  # the caller counts these
            _log.warning("counting.beside_failed", reason=str(error), texts=len(fresh))
            child = None
        self._pending.append((fresh, child, ticket))

    def counts(self) -> dict[str, int]:
        """The count of each text added."""
        for texts, child, ticket in self._pending:
            counted: list[int] | None = None
            if child is not None:
                try:
                    counted = child.answer(ticket)
                except (_ChildGone, OSError, msgspec.DecodeError) as error:  # the caller counts these
                    _log.warning("counting.beside_failed", reason=str(error), texts=len(texts))
            if counted is None:
                counted = count_in_this_process(texts, self._encoding)
            self._counts.update(zip(texts, counted, strict=True))
        self._pending.clear()
        return dict(self._counts)


def _serve(requests: IO[bytes], answers: IO[bytes]) -> None:
    """The child's loop: a request of (encoding, texts) in, a frame of counts out, until the input closes."""
    while (request := _read_request(requests)) is not None:
        encoding, texts = request
        _write_frame(answers, msgspec.msgpack.encode(count_in_this_process(texts, encoding)))
        answers.flush()


if __name__ == "__main__":
    # Ctrl-C reaches the whole process group: the child ends with its parent's pipe, not with the signal.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The answers keep the standard output's pipe to themselves: anything else written there (a log line of
    # the backend check) goes to the standard error instead.
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    _serve(sys.stdin.buffer, answers)

"""Identifiers, digests, traceparents and timestamps of the contract. Pure."""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime

import blake3

__all__ = ["child_traceparent", "derive_id", "digest_bytes", "digest_text", "new_id", "new_traceparent", "utc_now"]


def digest_bytes(data: bytes) -> str:
    """``blake3:<64 lowercase hex>`` of raw bytes."""
    return "blake3:" + blake3.blake3(data).hexdigest()


def digest_text(text: str) -> str:
    return digest_bytes(text.encode("utf-8", "surrogatepass"))


def new_id() -> str:
    return uuid.uuid4().hex


def derive_id(input_id: str, organ: str, role: str = "out") -> str:
    """The id of an organ's output for a given input.

    Deterministic so that a redelivered input yields the same output id, which
    JetStream's duplicate window then drops: each hop is exactly-once.
    """
    return blake3.blake3(f"{input_id}/{organ}/{role}".encode()).hexdigest(length=16)


def new_traceparent() -> str:
    return f"00-{os.urandom(16).hex()}-{os.urandom(8).hex()}-01"


def child_traceparent(parent: str, envelope_id: str) -> str:
    """Same trace, a span id derived from the emitting envelope (deterministic)."""
    return f"{parent[:35]}-{envelope_id[:16]}-{parent[-2:]}"


def utc_now() -> str:
    """RFC 3339 UTC with millisecond precision and a ``Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"

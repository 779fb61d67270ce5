"""Every subject, stream and bucket name of the tract, under one prefix."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_PREFIX", "Subjects"]

DEFAULT_PREFIX = "ichor"


@dataclass(frozen=True)
class Subjects:
    """Names derived from a prefix (the ``ICHOR_PREFIX`` setting, default ``ichor``)."""

    prefix: str = DEFAULT_PREFIX

    @property
    def stomach_in(self) -> str:
        return f"{self.prefix}.stomach.in"

    @property
    def stomach_deferred(self) -> str:
        """The low-priority subject where deferred pastes wait for a full digest."""
        return f"{self.prefix}.stomach.deferred"

    @property
    def stomach_large(self) -> str:
        """Where the stomach moves a paste over ``ICHOR_LARGE_PASTE_BYTES``: its own consumer, so one large
        digest never holds a place among the small pastes."""
        return f"{self.prefix}.stomach.large"

    @property
    def absorption_in(self) -> str:
        return f"{self.prefix}.absorption.in"

    @property
    def border_in(self) -> str:
        return f"{self.prefix}.border.in"

    @property
    def brain_in(self) -> str:
        return f"{self.prefix}.brain.in"

    @property
    def border_rejected(self) -> str:
        return f"{self.prefix}.border.rejected"

    @property
    def frames_get(self) -> str:
        return f"{self.prefix}.frames.get"

    def frames_get_for(self, tenant: str) -> str:
        """A tenant's own frames subject: the stomach serves there only the frames of pastes that tenant handed in."""
        return f"{self.prefix}.frames.get.{tenant}"

    @property
    def frames_get_tenants(self) -> str:
        return self.frames_get_for("*")

    @property
    def frames_raw(self) -> str:
        """Where the operator fetches a frame's bytes as received, secrets and all."""
        return f"{self.prefix}.frames.raw"

    def outcome(self, sender: str) -> str:
        """Where the border also publishes a paste's outcome for the sender whose seal it bore: that
        sender's (tenant's) own view of the tract, the only one it may read."""
        return f"{self.prefix}.outcome.{sender}"

    @property
    def outcomes(self) -> str:
        return self.outcome("*")

    def dlq(self, organ: str) -> str:
        return f"{self.prefix}.dlq.{organ}"

    @property
    def dlq_all(self) -> str:
        return f"{self.prefix}.dlq.>"

    @property
    def tract_subjects(self) -> list[str]:
        return [
            self.stomach_in,
            self.stomach_deferred,
            self.absorption_in,
            self.stomach_large,
            self.border_in,
            self.brain_in,
            self.border_rejected,
            self.outcomes,
        ]

    @property
    def tract_stream(self) -> str:
        return f"{self.prefix.upper().replace('.', '_')}_TRACT"

    @property
    def dlq_stream(self) -> str:
        return f"{self.prefix.upper().replace('.', '_')}_DLQ"

    @property
    def exhausted_stream(self) -> str:
        """The server's max-deliveries advisories for the tract's consumers, kept until a worker dead-letters
        the input each names (an input whose last delivery was never settled is delivered no more)."""
        return f"{self.prefix.upper().replace('.', '_')}_EXHAUSTED"

    def exhausted(self, durable: str = "*") -> str:
        """The subject of the advisory the server publishes when an input of ``durable`` runs out of deliveries."""
        return f"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{self.tract_stream}.{durable}"

    @property
    def frames_bucket(self) -> str:
        return f"{self.prefix}-frames"

    @property
    def raw_bucket(self) -> str:
        """Pastes as received that held secrets: the stomach's alone, read back through ``frames_raw``."""
        return f"{self.prefix}-raw"

    @property
    def uploads_bucket(self) -> str:
        """Where a sender puts a paste too large for one message (write-only for senders; the stomach reads it)."""
        return f"{self.prefix}-uploads"

    def uploads_bucket_of(self, sender: str) -> str:
        """A named sender's own uploads bucket: its byte limit is that sender's quota."""
        return f"{self.prefix}-uploads-{sender}"

    @property
    def frame_index_bucket(self) -> str:
        return f"{self.prefix}-frame-index"

    @property
    def sessions_bucket(self) -> str:
        """The border's record of the frames each conversation already carries."""
        return f"{self.prefix}-sessions"

    @property
    def rates_bucket(self) -> str:
        """The border's rate-limit token buckets, one per actor, shared by its replicas."""
        return f"{self.prefix}-rates"

    @property
    def admitted_bucket(self) -> str:
        """The border's replay ledger: the id of every envelope it admitted, with the tract sequence it came in at."""
        return f"{self.prefix}-admitted"

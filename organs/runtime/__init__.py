"""Bus plumbing shared by every organ."""

from organs.errors import ConfigError, EmbeddedServerError, IchorError, PoisonError, TransientError
from organs.runtime.bus import DEFAULT_NATS_URL, BusSettings, Tract, connect, provision
from organs.runtime.cores import INLINE_CORE_CHARS, call_core
from organs.runtime.dead_letter_outcomes import SealedBy
from organs.runtime.dead_letters import dead_letter
from organs.runtime.logs import configure_logging, envelope_fields, get_logger
from organs.runtime.organ import OrganBuilder, run_organ, serve_organ
from organs.runtime.server import EmbeddedServer, find_nats_server
from organs.runtime.specs import Delivery, Output, WorkerSpec, WorkerStats
from organs.runtime.worker import Worker

__all__ = [
    "DEFAULT_NATS_URL",
    "INLINE_CORE_CHARS",
    "BusSettings",
    "ConfigError",
    "Delivery",
    "EmbeddedServer",
    "EmbeddedServerError",
    "IchorError",
    "OrganBuilder",
    "Output",
    "PoisonError",
    "SealedBy",
    "Tract",
    "TransientError",
    "Worker",
    "WorkerSpec",
    "WorkerStats",
    "call_core",
    "configure_logging",
    "connect",
    "dead_letter",
    "envelope_fields",
    "find_nats_server",
    "get_logger",
    "provision",
    "run_organ",
    "serve_organ",
]

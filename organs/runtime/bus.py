"""Connecting to NATS and provisioning the tract's JetStream resources.

Provisioning is idempotent: every organ runs it at start, so whichever starts
first creates the streams and buckets and the others find them as they are.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket
import time
from collections.abc import Awaitable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import nats
import nats.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext, api
from nats.js.errors import APIError, BadRequestError, BucketNotFoundError, NotFoundError
from nats.js.kv import KeyValue

from envelopes.subjects import Subjects
from organs.errors import BusUnavailableError, ConfigError, PermissionRefused
from organs.runtime.limits import (
    UPLOADS_TTL_S,
    StoreLimits,
    apply_bucket_limits,
    object_store_config,
    stream_limits,
)
from organs.runtime.payload import PayloadGuardedClient
from organs.runtime.refusals import RefusalAwareJetStream, refusal_of
from organs.settings import Settings, redelivery_backoff_s

__all__ = [
    "DEFAULT_NATS_URL",
    "INLINE_HEADROOM",
    "BusSettings",
    "KeyValueOnFirstUse",
    "PublishRefusals",
    "Tract",
    "connect",
    "inbox_prefix",
    "inline_room",
    "open_key_value",
    "provision",
    "request",
    "stream_info",
    "unless_refused",
]

_T = TypeVar("_T")

DEFAULT_NATS_URL = "nats://127.0.0.1:4222"
# Room left in a message for what surrounds inline text (an envelope, a reply, headers):
# text larger than the server's max_payload less this travels by reference.
INLINE_HEADROOM = 64 * 1024


@dataclass(frozen=True)
class BusSettings:
    """Where the bus is and how durable the tract's storage is.

    ``duplicate_window_s`` bounds how late a redelivered input can still be
    deduplicated downstream; ``replicas`` is the stream and bucket replica count
    (1 on a single server, 3 in a cluster); ``provision`` is off for a user
    without rights to create streams (an administrator provisions instead);
    ``max_age_s`` bounds how long
    envelopes stay in the tract stream; ``ack_wait_s`` is how long an input a
    worker took and stopped heartbeating (it died) waits before redelivery, and
    ``max_deliver`` how many deliveries an input gets before it is dead-lettered;
    ``kill_before_ack`` is the crash tests' fault switch (die after publishing,
    before acking), ``kill_on`` theirs for an input that kills its worker.
    ``nkey_file`` is the user's nkey seed (authentication without a password);
    ``user`` then only names the user, for its private inbox and its seal.
    """

    url: str = DEFAULT_NATS_URL
    subjects: Subjects = field(default_factory=Subjects)
    replicas: int = 1
    duplicate_window_s: float = 120.0
    max_age_s: float = 7 * 24 * 3600.0
    ack_wait_s: float = 3.0
    max_deliver: int = 6
    instance: str = field(default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}")
    user: str | None = None
    password: str | None = None
    nkey_file: str | None = None
    provision: bool = True
    kill_before_ack: bool = False
    kill_on: bytes | None = None
    limits: StoreLimits = field(default_factory=StoreLimits)

    @property
    def redelivery_backoff_s(self) -> tuple[float, ...]:
        return redelivery_backoff_s(self.ack_wait_s, self.max_deliver)

    @classmethod
    def from_env(cls, url: str | None = None, environ: Mapping[str, str] | None = None) -> BusSettings:
        """The bus settings of the ``ICHOR_*`` environment (credentials included): what a host process calls.
        ``url`` wins over ``ICHOR_NATS_URL``."""
        return cls.from_settings(Settings.from_environ(environ), url)

    @classmethod
    def from_settings(cls, settings: Settings, url: str | None = None) -> BusSettings:
        """The bus part of the process's settings; ``url`` (a command-line flag) wins over ``ICHOR_NATS_URL``."""
        return cls(
            url=url or settings.nats_url or DEFAULT_NATS_URL,
            subjects=Subjects(settings.prefix),
            replicas=settings.replicas,
            duplicate_window_s=float(settings.duplicate_window_s),
            max_age_s=float(settings.max_age_s),
            ack_wait_s=float(settings.ack_wait_s),
            max_deliver=settings.max_deliver,
            instance=settings.instance or f"{socket.gethostname()}-{os.getpid()}",
            user=settings.nats_user,
            password=settings.nats_password,
            nkey_file=settings.nats_nkey_file,
            provision=settings.provision,
            kill_before_ack=settings.fault_kill_before_ack,
            kill_on=settings.fault_kill_on.encode() if settings.fault_kill_on else None,
            limits=StoreLimits(
                tract_max_bytes=settings.tract_max_bytes,
                dlq_max_bytes=settings.dlq_max_bytes,
                dlq_max_age_s=float(settings.dlq_max_age_s),
                frames_max_bytes=settings.frames_max_bytes,
                raw_max_bytes=settings.raw_max_bytes,
                index_max_bytes=settings.index_max_bytes,
                store_max_age_s=float(settings.store_max_age_s),
                uploads_max_bytes=settings.uploads_max_bytes,
                uploads_sender_max_bytes=settings.uploads_sender_max_bytes,
            ),
        )


class PublishRefusals:
    """The publishes the server refused this connection, for a request on a refused subject to fail at once.

    The server answers a publish its permissions forbid with an error on the connection, not a reply, so a
    request would otherwise wait out its whole timeout for an answer that cannot come.
    """

    def __init__(self) -> None:
        self._watching: dict[str, list[asyncio.Future[None]]] = {}
        # The last subject refused, so a call that timed out can say a refusal was the cause.
        self.last_refused: str | None = None

    def heard(self, error: Exception) -> None:
        refused = _REFUSED_PUBLISH.search(str(error))
        if refused:
            self.last_refused = refused.group(1)
        for waiter in self._watching.get(refused.group(1).lower(), []) if refused else []:
            if not waiter.done():
                waiter.set_result(None)

    @contextlib.contextmanager
    def watching(self, subject: str) -> Iterator[asyncio.Future[None]]:
        """A future that completes if the server refuses a publish to ``subject`` while the block runs."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        # The client lowercases the server's error text, subject included ("$js.api.stream.info.ichor_tract").
        key = subject.lower()
        self._watching.setdefault(key, []).append(waiter)
        try:
            yield waiter
        finally:
            self._watching[key].remove(waiter)
            if not self._watching[key]:
                del self._watching[key]


_REFUSED_PUBLISH = re.compile(r"Permissions Violation for Publish to \"?([^\"'\s]+)", re.IGNORECASE)


@dataclass
class Tract:
    """A live connection with its JetStream context and the names it uses."""

    nc: Client
    js: JetStreamContext
    settings: BusSettings
    refusals: PublishRefusals = field(default_factory=PublishRefusals)

    @property
    def subjects(self) -> Subjects:
        return self.settings.subjects


def inline_room(tract: Tract) -> int:
    """The most bytes of inline text a message of this server carries beside what surrounds it
    (``INLINE_HEADROOM``): past it, text travels by reference."""
    return int(tract.nc.max_payload) - INLINE_HEADROOM


def inbox_prefix(user: str) -> str:
    """Where ``user``'s replies and JetStream pull deliveries arrive; no other user may subscribe there."""
    return f"_INBOX_{user}"


async def connect(settings: BusSettings, name: str, *, persistent: bool = True, **callbacks: Any) -> Tract:
    """Connect; a ``persistent`` participant (an organ) reconnects forever and outlives any
    broker restart, a short-lived client (a CLI command) gives up after a few attempts.
    """
    options: dict[str, Any] = {
        "servers": [url.strip() for url in settings.url.split(",")],
        "name": name,
        "max_reconnect_attempts": -1 if persistent else 3,
        # An organ retries four times a second, so it is back within a quarter second of its server.
        "reconnect_time_wait": 0.25 if persistent else 0.5,
        "connect_timeout": 5,
        "allow_reconnect": True,
        **callbacks,
    }
    if settings.nkey_file:
        # The client signs the server's nonce with the seed: nothing secret crosses the wire or sits in the server.
        options["nkeys_seed"] = settings.nkey_file
    elif settings.user:
        options["user"] = settings.user
        options["password"] = settings.password or ""
    if settings.user:
        # Replies and pull deliveries arrive under the user's own prefix, the only inbox it may read.
        options["inbox_prefix"] = inbox_prefix(settings.user)
    errors: list[str] = []
    refusals = PublishRefusals()
    passed_on = options.get("error_cb")

    async def remember(error: Exception) -> None:
        errors.append(str(error))
        del errors[:-1]
        refusals.heard(error)
        if passed_on is not None:
            await passed_on(error)

    options["error_cb"] = remember
    try:
        # Not ``nats.connect``: its client sends a message the server refuses and closes the connection over.
        nc = PayloadGuardedClient()
        await nc.connect(**options)
    except (nats.errors.NoServersError, OSError, TimeoutError) as error:
        cause = errors[-1] if errors else str(error)
        raise BusUnavailableError(f"cannot connect to {settings.url}: {cause}") from error
    return Tract(nc=nc, js=RefusalAwareJetStream(nc, timeout=10), settings=settings, refusals=refusals)


async def unless_refused(tract: Tract, subject: str, call: Awaitable[_T]) -> _T:
    """``call``'s result; ``PermissionRefused`` at once if the server refuses this user its publish to ``subject``."""
    with tract.refusals.watching(subject) as refused:
        asked = asyncio.ensure_future(call)
        either: set[asyncio.Future[Any]] = {asked, refused}
        try:
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            if asked.done():
                return asked.result()
        finally:
            asked.cancel()
        raise PermissionRefused(f"the server refused this user a request on {subject}: its permissions forbid it")


async def request(tract: Tract, subject: str, payload: bytes, timeout: float) -> Msg:
    """``nc.request``, but a publish the server refuses this user raises ``PermissionRefused`` at once."""
    return await unless_refused(tract, subject, tract.nc.request(subject, payload, timeout=timeout))


async def stream_info(tract: Tract, name: str, subjects_filter: str | None = None) -> api.StreamInfo:
    """``js.stream_info``, but a user without the right to ask fails at once instead of after the API timeout."""
    subject = f"{api.DEFAULT_PREFIX}.STREAM.INFO.{name}"
    return await unless_refused(tract, subject, tract.js.stream_info(name, subjects_filter=subjects_filter))


async def _ensure_stream(js: JetStreamContext, config: api.StreamConfig) -> None:
    try:
        await js.stream_info(config.name or "")
    except NotFoundError:
        await js.add_stream(config)
        return
    # Some settings (storage, replicas on a single node) cannot change in place;
    # the stream that exists keeps working with what it has.
    with contextlib.suppress(BadRequestError):
        await js.update_stream(config)


async def provision(tract: Tract, *, patience_s: float = 60.0) -> None:
    """Create or update the tract's streams and stores, waiting for JetStream if it is not up yet.

    A cluster that is still electing its meta leader answers with timeouts or
    "unavailable"; an organ started before its server is ready waits instead of dying.
    """
    deadline = time.monotonic() + patience_s
    while True:
        try:
            await _provision_once(tract)
            return
        except (TimeoutError, nats.errors.TimeoutError, nats.errors.NoRespondersError, APIError) as error:
            refusal = refusal_of(error)
            if refusal is not None and refusal.cause == "server.storage_reservation":
                raise ConfigError(
                    f"the server refused the tract's limits: {refusal}; lower the ICHOR_*_MAX_BYTES settings "
                    "or give the server more storage"
                ) from error
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)


async def _provision_once(tract: Tract) -> None:
    settings, subjects, js = tract.settings, tract.subjects, tract.js
    await _ensure_stream(
        js,
        api.StreamConfig(
            name=subjects.tract_stream,
            subjects=subjects.tract_subjects,
            storage=api.StorageType.FILE,
            retention=api.RetentionPolicy.LIMITS,
            duplicate_window=settings.duplicate_window_s,
            max_age=settings.max_age_s,
            num_replicas=settings.replicas,
            **stream_limits(settings.limits.tract_max_bytes),
        ),
    )
    await _ensure_stream(
        js,
        api.StreamConfig(
            name=subjects.dlq_stream,
            subjects=[subjects.dlq_all],
            storage=api.StorageType.FILE,
            retention=api.RetentionPolicy.LIMITS,
            duplicate_window=settings.duplicate_window_s,
            num_replicas=settings.replicas,
            **stream_limits(settings.limits.dlq_max_bytes, settings.limits.dlq_max_age_s),
        ),
    )
    await _ensure_stream(
        js,
        api.StreamConfig(
            name=subjects.exhausted_stream,
            subjects=[subjects.exhausted()],
            storage=api.StorageType.FILE,
            retention=api.RetentionPolicy.LIMITS,
            num_replicas=settings.replicas,
            **stream_limits(settings.limits.dlq_max_bytes, settings.limits.dlq_max_age_s),
        ),
    )
    limits = settings.limits
    for bucket, max_bytes in (
        (subjects.frames_bucket, limits.frames_max_bytes),
        (subjects.raw_bucket, limits.raw_max_bytes),
    ):
        try:
            await js.object_store(bucket)
        except BucketNotFoundError:
            await js.create_object_store(
                bucket, config=object_store_config(bucket, max_bytes, limits.store_max_age_s, settings.replicas)
            )
    # A sender's upload is read once by the stomach, which keeps the paste in the frames store.
    for bucket, max_bytes in limits.uploads(subjects).items():
        try:
            await js.object_store(bucket)
        except BucketNotFoundError:
            await js.create_object_store(
                bucket, config=object_store_config(bucket, max_bytes, UPLOADS_TTL_S, settings.replicas)
            )
    try:
        await js.key_value(subjects.frame_index_bucket)
    except BucketNotFoundError:
        await js.create_key_value(
            bucket=subjects.frame_index_bucket,
            storage=api.StorageType.FILE,
            replicas=settings.replicas,
            history=1,
            max_bytes=limits.index_max_bytes or -1,
            ttl=limits.store_max_age_s or None,
        )
    await apply_bucket_limits(js, subjects, limits)


async def open_key_value(tract: Tract, name: str, ttl_s: float) -> KeyValue:
    """The key-value bucket ``name``, made on first use: one value per key, each kept ``ttl_s`` seconds, on file
    storage with the tract's replicas (a border replica may be the first to need it)."""
    try:
        return await tract.js.key_value(name)
    except BucketNotFoundError:
        return await tract.js.create_key_value(
            bucket=name, history=1, ttl=ttl_s, storage=api.StorageType.FILE, replicas=tract.settings.replicas
        )


class KeyValueOnFirstUse:
    """A border store's bucket: ``await bucket()`` opens it (``open_key_value``) on the first call and keeps it."""

    def __init__(self, tract: Tract, name: str, ttl_s: float) -> None:
        self._tract = tract
        self._name = name
        self._ttl_s = ttl_s
        self._bucket: KeyValue | None = None

    async def __call__(self) -> KeyValue:
        if self._bucket is None:
            self._bucket = await open_key_value(self._tract, self._name, self._ttl_s)
        return self._bucket

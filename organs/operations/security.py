"""Per-organ NATS users, subject permissions and signing keys, generated together.

``generate_security(directory)`` writes, once (files that exist are kept):

* ``seeds/<user>.seed`` each user's Ed25519 nkey seed (mode 0600), the one secret of
                        its identity: it connects with it (the server checks a signed
                        nonce) and signs with it (an organ its steps, a sender its pastes).
* ``auth.conf``         the nats-server ``authorization`` block, public keys only: one user
                        per organ, a ``host`` user (ichor ingest, tail, status, frame, mcp), an
                        ``upstream`` user that may only hand pastes in, an ``operator``
                        user, the only one that may read pastes as received
                        (``frames.raw``) and the dead letters, and ``admin`` (provisioning,
                        replaying and purging dead letters). Included by the
                        embedded server and by compose.
* ``keys.json``         name → public key, the border's trusted keys (organs by their
                        wire name, senders by their user name).

Each organ may publish only to its own output subjects, its dead-letter
subject, its own consumer's JetStream API and acks, and (the stomach) the
frame stores; so the stomach cannot write to the border's input, no one but the
border can write to the brain's, and no one but the stomach can write evidence.
A sender may write a paste too large for one message to the uploads bucket,
which it can neither read nor list.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

from envelopes.subjects import Subjects
from organs.anatomy import BORDER, ORGANS, SENDERS
from organs.errors import ConfigError
from organs.runtime.bus import inbox_prefix
from organs.runtime.server import write_private
from organs.signing import new_seed, public_key_of

__all__ = [
    "RESPONDERS",
    "SENDERS",
    "generate_security",
    "inbox_prefix",
    "organ_environment",
    "permissions",
    "seed_path",
    "tenants_of",
    "user_environment",
    "write_private",
]


def _consumer_api(stream: str, durable: str) -> list[str]:
    return [
        f"$JS.API.CONSUMER.INFO.{stream}.{durable}",
        f"$JS.API.CONSUMER.CREATE.{stream}.{durable}",
        f"$JS.API.CONSUMER.CREATE.{stream}.{durable}.>",
        f"$JS.API.CONSUMER.DURABLE.CREATE.{stream}.{durable}",
        f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{durable}",
        f"$JS.ACK.{stream}.{durable}.>",
    ]


def _raw_store_api(subjects: Subjects) -> list[str]:
    """The raw pastes' object store: the stomach's alone (the operator reads through ``frames.raw``)."""
    return [*_object_reader_api(subjects.raw_bucket), f"$O.{subjects.raw_bucket}.>"]


def _object_reader_api(bucket: str) -> list[str]:
    """Reading an object store's objects: its stream's info, its messages, and the ordered consumer a read makes."""
    objects = f"OBJ_{bucket}"
    return [
        f"$JS.API.STREAM.INFO.{objects}",
        f"$JS.API.STREAM.MSG.GET.{objects}",
        f"$JS.API.DIRECT.GET.{objects}.>",
        f"$JS.API.CONSUMER.CREATE.{objects}",
        f"$JS.API.CONSUMER.CREATE.{objects}.>",
        f"$JS.API.CONSUMER.DELETE.{objects}.>",
    ]


def _frame_store_api(subjects: Subjects, *, write: bool) -> list[str]:
    """Reading the frames' object store and index; writing both, for the stomach alone (a reader
    checks every frame's bytes against its id besides)."""
    objects, index = f"OBJ_{subjects.frames_bucket}", f"KV_{subjects.frame_index_bucket}"
    rules = [
        f"$JS.API.STREAM.INFO.{objects}",
        f"$JS.API.STREAM.INFO.{index}",
        f"$JS.API.STREAM.MSG.GET.{objects}",
        f"$JS.API.STREAM.MSG.GET.{index}",
        f"$JS.API.DIRECT.GET.{objects}.>",
        f"$JS.API.DIRECT.GET.{index}.>",
        f"$JS.API.CONSUMER.CREATE.{objects}",
        f"$JS.API.CONSUMER.CREATE.{objects}.>",
        f"$JS.API.CONSUMER.DELETE.{objects}.>",
        "$JS.API.STREAM.NAMES",
        "$JS.FC.>",
    ]
    if write:
        rules += [f"$O.{subjects.frames_bucket}.>", f"$KV.{subjects.frame_index_bucket}.>"]
    return rules


def _uploads_api(subjects: Subjects, *, sender: str | None) -> list[str]:
    """A sender's drop box for a paste too large for one message, its own bucket: it writes (``$O``) and reads
    nothing back but the bucket's state (how much of its quota is used), so no sender sees another's upload;
    the stomach (``sender`` None) reads every sender's uploads and writes none."""
    if sender is not None:
        # A tenant added beside the senders shares the common bucket and its limit.
        bucket = subjects.uploads_bucket_of(sender) if sender in SENDERS else subjects.uploads_bucket
        return [f"$JS.API.STREAM.INFO.OBJ_{bucket}", f"$O.{bucket}.>"]
    rules = [
        # The object store's reader looks the chunks' stream up by subject.
        "$JS.API.STREAM.NAMES",
        "$JS.FC.>",
    ]
    for bucket in (subjects.uploads_bucket, *(subjects.uploads_bucket_of(sender) for sender in SENDERS)):
        rules += _object_reader_api(bucket)
    return rules


def _tract_reader_api(stream: str) -> list[str]:
    """Reading a stream's stored messages by sequence (``organs.runtime.stream_reader``), so a message the
    stream dropped as a duplicate is never seen. No consumer: the right to create one would be the right to
    rewrite an organ's durable (the server lets an ephemeral create name an existing consumer)."""
    return [f"$JS.API.STREAM.INFO.{stream}", f"$JS.API.STREAM.MSG.GET.{stream}"]


def _dead_letter_reader_api(stream: str) -> list[str]:
    """Listing (an ephemeral, headers-only consumer) and reading the dead letters, for ``ichor dlq ls|show``."""
    return [
        *_tract_reader_api(stream),
        f"$JS.API.CONSUMER.CREATE.{stream}",
        f"$JS.API.CONSUMER.CREATE.{stream}.>",
        f"$JS.API.CONSUMER.INFO.{stream}.>",
        f"$JS.API.CONSUMER.MSG.NEXT.{stream}.>",
        f"$JS.API.CONSUMER.DELETE.{stream}.>",
    ]


def _border_bucket_api(bucket: str) -> list[str]:
    """One of the border's own buckets (created on first use): sessions' carried frames, the replay ledger."""
    stream = f"KV_{bucket}"
    return [
        f"$JS.API.STREAM.INFO.{stream}",
        f"$JS.API.STREAM.CREATE.{stream}",
        f"$JS.API.STREAM.MSG.GET.{stream}",
        f"$JS.API.DIRECT.GET.{stream}.>",
        f"$KV.{bucket}.>",
    ]


def permissions(subjects: Subjects, tenants: Iterable[str] = ()) -> dict[str, dict[str, list[str]]]:
    """User → {"publish": [...], "subscribe": [...]} allow lists.

    ``tenants`` are hosts besides ``host``, each with the same rights over its own pastes only.
    A user subscribes to its own inbox only and may publish to no inbox at all: a
    request's reply travels through ``allow_responses`` (``RESPONDERS``), so no user
    can read or inject into another's replies or pull deliveries.
    """
    stream = subjects.tract_stream
    common_publish = ["$JS.API.INFO", f"$JS.API.STREAM.INFO.{stream}"]
    users: dict[str, dict[str, list[str]]] = {}
    for organ in ORGANS:
        publish = [*common_publish, *organ.output_subjects(subjects), organ.dead_letter_subject(subjects)]
        # Its letters and the streams' usage, read at each metrics scrape (organs.runtime.usage).
        publish.append(f"$JS.API.STREAM.INFO.{subjects.dlq_stream}")
        # Every organ tells a dead-lettered input's host (organs.runtime.dead_letter_outcomes), on the sealed
        # sender's own outcome subject too.
        publish += [subject for subject in (subjects.border_rejected, subjects.outcomes) if subject not in publish]
        for durable in organ.durables:
            publish += _consumer_api(stream, durable)
            # Its inputs that ran out of deliveries unsettled, read from their advisories and dead-lettered.
            publish += _consumer_api(subjects.exhausted_stream, f"{durable}-exhausted")
        publish.append(f"$JS.API.STREAM.MSG.GET.{stream}")
        subscribe = [f"{inbox_prefix(organ.nats_user)}.>", "$SRV.>"]
        if organ.serves_frames:
            publish += [*_frame_store_api(subjects, write=True), *_raw_store_api(subjects)]
            publish += _uploads_api(subjects, sender=None)
            subscribe += [subjects.frames_get, subjects.frames_get_tenants, subjects.frames_raw]
        else:
            # A goal too large for a message is fetched from the frames store (organs.runtime.stored_text); the
            # border stores a prompt too large there too, as an object only: the frame index stays the stomach's.
            publish += [*_object_reader_api(subjects.frames_bucket), "$JS.API.STREAM.NAMES", "$JS.FC.>"]
            if organ is BORDER:
                publish.append(f"$O.{subjects.frames_bucket}.>")
        if organ is BORDER:
            publish += [*_border_bucket_api(subjects.sessions_bucket), *_border_bucket_api(subjects.admitted_bucket)]
            publish += _border_bucket_api(subjects.rates_bucket)
        users[organ.nats_user] = {"publish": publish, "subscribe": subscribe}
    for tenant in ("host", *tenants):
        # Each host is a tenant: it hands pastes in and reads its own outcomes (``<prefix>.outcome.<user>``), and
        # nothing else of the tract; pastes as received, others' outcomes and the dead letters it cannot read.
        users[tenant] = {
            "publish": [
                # The account's JetStream limits (``ichor status``), not the tract stream's: its per-subject
                # counts would name the other tenants that have outcomes.
                "$JS.API.INFO",
                subjects.stomach_in,
                # Its own frames subject: served the frames of its own pastes only. Not the frame stores, where
                # it could list every frame id and read any frame.
                subjects.frames_get_for(tenant),
                "$SRV.>",
                *_uploads_api(subjects, sender=tenant),
            ],
            "subscribe": [f"{inbox_prefix(tenant)}.>", subjects.outcome(tenant)],
        }
    users["upstream"] = {
        "publish": [subjects.stomach_in, *_uploads_api(subjects, sender="upstream")],
        "subscribe": [f"{inbox_prefix('upstream')}.>", subjects.outcome("upstream")],
    }
    # Only the operator reads pastes as received (secrets and all): the tract (``ichor tail``), ``frames.raw`` and
    # the dead letters, which hold them as they came. Replaying and purging dead letters is the admin's.
    users["operator"] = {
        "publish": [
            subjects.frames_raw,
            *common_publish,
            *_tract_reader_api(stream),
            *_dead_letter_reader_api(subjects.dlq_stream),
        ],
        "subscribe": [f"{inbox_prefix('operator')}.>", *subjects.tract_subjects, subjects.dlq_all],
    }
    users["admin"] = {"publish": [">"], "subscribe": [">"]}
    return users


RESPONDERS = frozenset(organ.nats_user for organ in ORGANS)
"""The users that answer requests (``$SRV`` discovery, the stomach's frames): each may publish
one reply to the inbox a request it received names, and nowhere else in anyone's inbox."""

_TENANT_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")
_RESERVED = frozenset({*SENDERS, "operator", "admin", *(organ.nats_user for organ in ORGANS)})


def tenants_of(directory: str | Path, added: Iterable[str] = ()) -> tuple[str, ...]:
    """The directory's tenants (``tenants.json``) with ``added``; a name that cannot be a user is refused."""
    path = Path(directory) / "tenants.json"
    known = json.loads(path.read_text()) if path.exists() else []
    for name in added:
        if _TENANT_NAME.fullmatch(name) is None or name in _RESERVED:
            raise ConfigError(f"tenant {name!r} is not allowed: 1 to 32 of [a-z0-9_-], not one of {sorted(_RESERVED)}")
    return tuple(sorted({*map(str, known), *added}))


def _conf_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(item) for item in items) + "]"


def seed_path(directory: str | Path, user: str) -> Path:
    """Where ``user``'s nkey seed is kept."""
    return Path(directory) / "seeds" / f"{user}.seed"


def generate_security(directory: str | Path, subjects: Subjects | None = None, tenants: Iterable[str] = ()) -> Path:
    """Write the users, permissions and keys into ``directory`` (kept if already there), with ``tenants``
    (hosts besides ``host``) added to the ones it has."""
    root = Path(directory)
    for folder in (root, root / "seeds"):
        # Owner-only from the first: nobody else may list whose seeds are here, let alone read one.
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder.chmod(0o700)
    names = subjects or Subjects()
    everyone = tenants_of(root, tenants)
    write_private(root / "tenants.json", json.dumps(list(everyone)))
    public_keys = {}
    for user in permissions(names, everyone):
        path = seed_path(root, user)
        if not path.exists():
            # A directory written before a user existed gains that user; the others keep their seeds.
            write_private(path, new_seed())
        path.chmod(0o600)  # a seed copied in wide (or widened since) is narrowed again
        public_keys[user] = public_key_of(path.read_text().strip())
    # Signatures name an organ as the envelopes do, so the border trusts an organ's key under its wire name.
    trusted: dict[str, str] = {organ.wire_name: public_keys[organ.nats_user] for organ in ORGANS}
    trusted.update({sender: public_keys[sender] for sender in (*SENDERS, *everyone)})
    (root / "keys.json").write_text(json.dumps(trusted, indent=2))
    blocks = []
    for user, rules in permissions(names, everyone).items():
        blocks.append(
            f"    # {user}\n"
            f"    {{nkey: {json.dumps(public_keys[user])}, permissions: {{"
            f"publish: {{allow: {_conf_list(rules['publish'])}}}, "
            f"subscribe: {{allow: {_conf_list(rules['subscribe'])}}}"
            f"{', allow_responses: true' if user in RESPONDERS else ''}}}}}"
        )
    # Public keys only, yet owner-only like every file here: who may do what is no one else's business.
    write_private(root / "auth.conf", "authorization {\n  users: [\n" + ",\n".join(blocks) + "\n  ]\n}\n")
    return root


def user_environment(directory: str | Path, user: str) -> dict[str, str]:
    """The environment a process needs to connect as ``user``: its name and where its seed is, no secret."""
    return {
        "ICHOR_NATS_USER": user,
        "ICHOR_NATS_NKEY_FILE": str(seed_path(directory, user)),
        "ICHOR_PROVISION": "0",
    }


def organ_environment(directory: str | Path, organ: str) -> dict[str, str]:
    """The environment of an organ process: its user, its seed (it signs with it too), the trusted keys."""
    root = Path(directory)
    return {
        **user_environment(root, organ),
        "ICHOR_SIGNING_SEED_FILE": str(seed_path(root, organ)),
        "ICHOR_TRUSTED_KEYS_FILE": str(root / "keys.json"),
    }

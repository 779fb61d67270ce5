"""Per-organ NATS users, subject permissions and signing keys, generated together.

``generate_security(directory)`` writes, once (files that exist are kept):

* ``auth.conf``         the nats-server ``authorization`` block: one user per organ, a
                        ``host`` user (ichor ingest, tail, status, frame), an
                        ``upstream`` user that may only hand pastes in, an ``operator``
                        user, the only one that may read pastes as received
                        (``frames.raw``), and ``admin`` (provisioning). Included by the embedded server and by compose.
* ``credentials.json``  user → password (mode 0600).
* ``seeds/<organ>.seed`` each organ's Ed25519 nkey seed (mode 0600).
* ``keys.json``         organ → public key, the border's trusted keys.

Each organ may publish only to its own output subjects, its dead-letter
subject, its own consumer's JetStream API and acks, and (the stomach) the
frame stores; so the stomach cannot write to the border's input, and no one
but the border can write to the brain's.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

from envelopes.subjects import Subjects
from organs.anatomy import BORDER, ORGANS
from organs.runtime.bus import inbox_prefix
from organs.runtime.server import write_private
from organs.signing import new_seed, public_key_of

__all__ = [
    "RESPONDERS",
    "generate_security",
    "inbox_prefix",
    "organ_environment",
    "permissions",
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
    objects = f"OBJ_{subjects.raw_bucket}"
    return [
        f"$JS.API.STREAM.INFO.{objects}",
        f"$JS.API.STREAM.MSG.GET.{objects}",
        f"$JS.API.DIRECT.GET.{objects}.>",
        f"$JS.API.CONSUMER.CREATE.{objects}",
        f"$JS.API.CONSUMER.CREATE.{objects}.>",
        f"$JS.API.CONSUMER.DELETE.{objects}.>",
        f"$O.{subjects.raw_bucket}.>",
    ]


def _frame_store_api(subjects: Subjects, *, write_index: bool) -> list[str]:
    """Reading the frames' object store and index; writing the object store (content-addressed:
    every reader checks an object's bytes against its name), and the index for the stomach alone."""
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
        "$JS.FC.>",
        # A paste too large for one message is put here by its sender under its blake3 hex.
        f"$O.{subjects.frames_bucket}.>",
    ]
    if write_index:
        rules.append(f"$KV.{subjects.frame_index_bucket}.>")
    return rules


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


def permissions(subjects: Subjects) -> dict[str, dict[str, list[str]]]:
    """User → {"publish": [...], "subscribe": [...]} allow lists.

    A user subscribes to its own inbox only and may publish to no inbox at all: a
    request's reply travels through ``allow_responses`` (``RESPONDERS``), so no user
    can read or inject into another's replies or pull deliveries.
    """
    stream = subjects.tract_stream
    common_publish = ["$JS.API.INFO", f"$JS.API.STREAM.INFO.{stream}"]
    users: dict[str, dict[str, list[str]]] = {}
    for organ in ORGANS:
        publish = [*common_publish, *organ.output_subjects(subjects), organ.dead_letter_subject(subjects)]
        for durable in organ.durables:
            publish += _consumer_api(stream, durable)
        subscribe = [f"{inbox_prefix(organ.nats_user)}.>", "$SRV.>"]
        if organ.serves_frames:
            publish += [*_frame_store_api(subjects, write_index=True), *_raw_store_api(subjects)]
            subscribe += [subjects.frames_get, subjects.frames_raw]
        if organ is BORDER:
            publish += [*_border_bucket_api(subjects.sessions_bucket), *_border_bucket_api(subjects.admitted_bucket)]
            publish += _border_bucket_api(subjects.rates_bucket)
        users[organ.nats_user] = {"publish": publish, "subscribe": subscribe}
    users["host"] = {
        "publish": [
            *common_publish,
            subjects.stomach_in,
            subjects.frames_get,
            "$SRV.>",
            # The frame index is the stomach's: the host reads it (large frames) but cannot rewrite evidence.
            *_frame_store_api(subjects, write_index=False),
        ],
        "subscribe": [f"{inbox_prefix('host')}.>", *subjects.tract_subjects, subjects.dlq_all],
    }
    users["upstream"] = {"publish": [subjects.stomach_in], "subscribe": [f"{inbox_prefix('upstream')}.>"]}
    # Only the operator reads pastes as received (secrets and all); no organ and not the host may ask.
    users["operator"] = {"publish": [subjects.frames_raw], "subscribe": [f"{inbox_prefix('operator')}.>"]}
    users["admin"] = {"publish": [">"], "subscribe": [">"]}
    return users


RESPONDERS = frozenset(organ.nats_user for organ in ORGANS)
"""The users that answer requests (``$SRV`` discovery, the stomach's frames): each may publish
one reply to the inbox a request it received names, and nowhere else in anyone's inbox."""


def _conf_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(item) for item in items) + "]"


def generate_security(directory: str | Path, subjects: Subjects | None = None) -> Path:
    """Write the users, permissions and keys into ``directory`` (kept if already there)."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o700)
    names = subjects or Subjects()
    credentials_path = root / "credentials.json"
    passwords = json.loads(credentials_path.read_text()) if credentials_path.exists() else {}
    missing = [user for user in permissions(names) if user not in passwords]
    if missing:
        # A directory written before a user existed gains that user; the others keep their passwords.
        passwords.update({user: secrets.token_urlsafe(24) for user in missing})
        write_private(credentials_path, json.dumps(passwords, indent=2))
    public_keys = {}
    for organ in ORGANS:
        seed_path = root / "seeds" / f"{organ.name}.seed"
        if not seed_path.exists():
            write_private(seed_path, new_seed())
        # Signatures name the organ as the envelopes do, so the border trusts keys by wire name.
        public_keys[organ.wire_name] = public_key_of(seed_path.read_text().strip())
    (root / "keys.json").write_text(json.dumps(public_keys, indent=2))
    blocks = []
    for user, rules in permissions(names).items():
        blocks.append(
            f"    {{user: {json.dumps(user)}, password: {json.dumps(passwords[user])}, permissions: {{"
            f"publish: {{allow: {_conf_list(rules['publish'])}}}, "
            f"subscribe: {{allow: {_conf_list(rules['subscribe'])}}}"
            f"{', allow_responses: true' if user in RESPONDERS else ''}}}}}"
        )
    write_private(root / "auth.conf", "authorization {\n  users: [\n" + ",\n".join(blocks) + "\n  ]\n}\n")
    return root


def user_environment(directory: str | Path, user: str) -> dict[str, str]:
    """The environment a process needs to connect as ``user``."""
    passwords = json.loads((Path(directory) / "credentials.json").read_text())
    return {"ICHOR_NATS_USER": user, "ICHOR_NATS_PASSWORD": passwords[user], "ICHOR_PROVISION": "0"}


def organ_environment(directory: str | Path, organ: str) -> dict[str, str]:
    """The environment of an organ process: its user, its seed file, the trusted keys."""
    root = Path(directory)
    return {
        **user_environment(root, organ),
        "ICHOR_SIGNING_SEED_FILE": str(root / "seeds" / f"{organ}.seed"),
        "ICHOR_TRUSTED_KEYS_FILE": str(root / "keys.json"),
    }

"""A pass-through JetStream hop written directly with nats-py: the anchor of the tract bench.

    python bench/relay_hop.py --nats URL --stream S --durable D --inbound A --outbound B --tag h1

It binds a durable pull consumer on ``--inbound``, fetches in batches, publishes
every message's bytes unchanged to ``--outbound`` with ``publish_async`` and a
``Nats-Msg-Id`` derived from the input's (so the stream's duplicate window makes
the hop exactly-once, as in the tract), waits for the stream's acks, then acks
the inputs. It does no decoding and no work: it is the limit of this bus here.

Fetching: a batched fetch when messages are waiting; when none are, one long
poll for a single message, so a lone message is never held back waiting for a
batch to fill (see ``--idle-poll``).
"""

from __future__ import annotations

import argparse
import asyncio

import nats
import nats.errors
from nats.js import api

from bench.common import hop_headers, hop_parser, stop_on_signals


async def relay(args: argparse.Namespace) -> None:
    nc = await nats.connect(args.nats, name=f"relay-{args.tag}", max_reconnect_attempts=-1)
    js = nc.jetstream(timeout=10)
    config = api.ConsumerConfig(ack_wait=60, max_ack_pending=max(1000, args.batch * 8))
    subscription = await js.pull_subscribe(args.inbound, durable=args.durable, stream=args.stream, config=config)
    stop = stop_on_signals()
    busy = True
    while not stop.is_set():
        try:
            if busy:
                # Returns at once with what is waiting; a short deadline bounds the wait when nothing is.
                messages = await subscription.fetch(args.batch, timeout=args.busy_poll)
            else:
                messages = await subscription.fetch(1, timeout=args.idle_poll)
        except (TimeoutError, nats.errors.TimeoutError):
            busy = False
            continue
        busy = True
        futures = []
        for msg in messages:
            futures.append(await js.publish_async(args.outbound, msg.data, headers=hop_headers(msg.headers, args.tag)))
        await asyncio.gather(*futures)
        for msg in messages:
            await msg.ack()
    await subscription.unsubscribe()
    await nc.drain()


def main() -> None:
    parser = hop_parser(__doc__.splitlines()[0])
    parser.add_argument("--busy-poll", type=float, default=0.02, help="fetch deadline while messages flow (s)")
    parser.add_argument("--idle-poll", type=float, default=1.0, help="long poll for one message when idle (s)")
    asyncio.run(relay(parser.parse_args()))


if __name__ == "__main__":
    main()

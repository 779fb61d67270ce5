"""The same pass-through JetStream hop written with FastStream (NATS), for reference.

    python bench/faststream_hop.py --nats URL --stream S --durable D --inbound A --outbound B --tag h1

A JetStream pull subscriber (durable, batched fetch through ``PullSub``) whose
handler republishes the raw bytes to ``--outbound`` on the stream with a
``Nats-Msg-Id`` derived from the input's; FastStream acks the input after the
handler returns (``AckPolicy.ACK``). FastStream's defaults are kept otherwise
(its per-message INFO logging included; stdout goes nowhere in the bench).
"""

from __future__ import annotations

import argparse
import asyncio

from faststream import AckPolicy
from faststream.nats import JStream, NatsBroker, NatsMessage, PullSub

from bench.common import hop_headers, hop_parser, stop_on_signals


async def serve(args: argparse.Namespace) -> None:
    broker = NatsBroker(args.nats)
    stream = JStream(name=args.stream, declare=False)

    @broker.subscriber(
        args.inbound,
        stream=stream,
        durable=args.durable,
        pull_sub=PullSub(batch_size=args.batch, timeout=args.timeout),
        ack_policy=AckPolicy.ACK,
    )
    async def hop(msg: NatsMessage) -> None:
        headers = hop_headers(msg.raw_message.headers, args.tag)
        await broker.publish(msg.body, args.outbound, headers=headers, stream=args.stream)

    stop = stop_on_signals()
    await broker.start()
    try:
        await stop.wait()
    finally:
        await broker.stop()


def main() -> None:
    parser = hop_parser(__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=1.0)
    asyncio.run(serve(parser.parse_args()))


if __name__ == "__main__":
    main()

"""The law-floor bench's hops keep the laws they stand for: they check signatures, and their writes reach the server."""

from __future__ import annotations

import msgspec
import pytest

from bench.law_floor_bench import measure, prepare
from bench.law_floor_hop import HOPS, HopWork, signer_for
from envelopes.codec import decode, encode


def _hops(without: frozenset[str] = frozenset()) -> tuple[list[HopWork], list[bytes]]:
    prepared = prepare(range(9_000_000, 9_000_003), without)
    works = [HopWork(hop, prepared.tables[hop], signer_for(hop, prepared.tables[hop])) for hop in HOPS]
    return works, [item.data for item in prepared.items]


@pytest.mark.parametrize("without", [frozenset(), frozenset({"whole-claims"})], ids=["whole claims", "digests"])
def test_signed_hops_pass_their_own_outputs_on_and_refuse_an_altered_one(without: frozenset[str]) -> None:
    works, inputs = _hops(without)
    for data in inputs:
        envelope = decode(data)
        for work in works:
            work.check(envelope)
            envelope = decode(encode(work.sign(envelope)))
        assert envelope.kind == "admitted"
    stomach, absorption, border = works
    yielded = decode(encode(absorption.sign(decode(encode(stomach.sign(decode(inputs[0])))))))
    altered = msgspec.structs.replace(yielded, payload=msgspec.structs.replace(yielded.payload, goal="another ask"))
    with pytest.raises(SystemExit, match="fails its checks"):
        border.check(altered)
    unsealed = decode(inputs[1])
    unsealed = msgspec.structs.replace(unsealed, chain=msgspec.structs.replace(unsealed.chain, seal=None))
    with pytest.raises(SystemExit, match="fails its checks"):
        stomach.check(unsealed)


def test_unsigned_hops_emit_the_cores_outputs_unchanged() -> None:
    works, inputs = _hops(frozenset({"signing"}))
    envelope = decode(inputs[0])
    for work in works:
        work.check(envelope)
        out = work.sign(envelope)
        assert encode(out) == work.table.outputs[envelope.id]
        envelope = decode(encode(out))


@pytest.mark.bus
@pytest.mark.slow
async def test_every_frame_record_and_claim_is_on_the_server() -> None:
    # 2 warm-up pastes and 20 measured, 4 frames each (the bench pastes share no frame): 88 records, 22 claims.
    _, prepared = await measure(20, 1, 2, frozenset({"signing"}))
    assert prepared.frames == 4
    assert prepared.stored == {"floor-frame-index": 88, "floor-admitted": 22}
    _, bare = await measure(20, 1, 2, frozenset({"signing", "frames", "ledger"}))
    assert bare.stored == {"floor-frame-index": 0, "floor-admitted": 0}

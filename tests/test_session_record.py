"""The records' GCM in gateware (aes_fpga.appliance.gateware.session_record) against the
record layer of the specification (session_spec.open_request, seal_reply), byte for byte:
request records opened (a good tag, a flipped byte), replies sealed, with back-pressure."""

import functools
import random

import pytest
from amaranth.sim import Simulator

from aes_fpga.appliance import session_spec as S
from aes_fpga.appliance.gateware.executor import TRANSPORT_NEEDS
from aes_fpga.appliance.gateware.session_record import RecordCipher

SECRET = bytes(range(3, 35))
MAX_CYCLES = 40_000


def keys_for(n):
    rng = random.Random(n)
    return S.derive_session(SECRET, rng.randbytes(16), rng.randbytes(16),
                            (n + 1).to_bytes(4, "big"))


def start_of(keys, place, decrypt, aad, length, counter):
    aad_int = int.from_bytes(aad, "big") << 8 * (18 - len(aad))
    return {"decrypt": decrypt, "place": place, "aad": aad_int, "aad_len": len(aad),
            "nonce": int.from_bytes(keys.session_id + counter.to_bytes(8, "big"), "big"),
            "length": length}


class Bench:
    """A :class:`RecordCipher` (``held=2, max_bytes=256``, ``cipher``'s core and digit) and its
    simulation, kept for the next run of the same cipher and reset for it (building the
    simulation costs as much as a run)."""

    def __init__(self, cipher):
        self.dut = RecordCipher(held=2, max_bytes=256, **dict(cipher))
        self.job, self.used = None, False
        self.sim = Simulator(self.dut)
        self.sim.add_clock(1e-6)
        self.sim.add_testbench(self.bench)

    def run(self, job):
        self.job = job
        if self.used:
            self.sim.reset()
        self.used = True
        self.sim.run()

    async def bench(self, ctx):
        dut, (records, gaps, rng, results, taken) = self.dut, self.job
        for place in range(2):
            keys = keys_for(place)
            for half, key in enumerate((keys.request_key, keys.reply_key)):
                ctx.set(dut.key.payload, {"key": int.from_bytes(key, "big"), "key_bits": 2,
                                          "slot": 2 * place + half})
                ctx.set(dut.key.valid, 1)
                await ctx.tick().until(dut.key.ready)
        ctx.set(dut.key.valid, 0)
        for start, inputs in records:
            ctx.set(dut.start.payload, start)
            ctx.set(dut.start.valid, 1)
            out, verdict, at, cycles = bytearray(), None, 0, []
            for cycle in range(MAX_CYCLES):
                ready = not gaps or rng.random() > 0.3
                ctx.set(dut.o.ready, ready)
                ctx.set(dut.verdict.ready, ready)
                ctx.set(dut.i.valid, at < len(inputs))
                if at < len(inputs):
                    ctx.set(dut.i.payload, inputs[at])
                i_ready, o_valid, o_byte = (ctx.get(dut.i.ready), ctx.get(dut.o.valid),
                                            ctx.get(dut.o.payload))
                v_valid, v_ok = ctx.get(dut.verdict.valid), ctx.get(dut.verdict.payload.ok)
                done = ctx.get(dut.start.ready)
                if at < len(inputs) and i_ready:
                    at += 1
                    cycles.append(cycle)
                if o_valid and ready:
                    out.append(o_byte)
                if v_valid and ready:
                    verdict = bool(v_ok)
                await ctx.tick()
                if done:
                    break
            else:
                raise AssertionError("record not done in time")
            ctx.set(dut.start.valid, 0)
            results.append((bytes(out), verdict))
            if taken is not None:
                taken.append(cycles)


@functools.cache
def bench_of(cipher):
    return Bench(cipher)


def run(records, *, gaps=0, seed=0, taken=None, cipher=None):
    """Load each place's keys, then run ``records`` [(start, bytes in)]; return per record the
    bytes out and the verdict (``None`` for a sealing). ``taken``, a list, gets per record the
    cycles (counted from its start) its bytes in were taken at. ``cipher``: the
    :class:`RecordCipher`'s core and digit (its defaults without). A cipher simulated before
    is reset, not built again."""
    results = []
    bench_of(tuple(sorted((cipher or {}).items()))).run(
        (records, gaps, random.Random(seed), results, taken))
    return results


def opened(keys, place, payload, seq=7):
    """The RecordCipher request that opens the request record ``payload``."""
    head = payload[:S.RECORD_HEADER.size]
    aad = S.record_header(S.SessionCommand.RECORD, seq, len(payload)) + head
    _, counter = S.split_record(payload)
    body = payload[len(head):]
    return start_of(keys, place, 1, aad, len(body) - S.TAG_BYTES, counter), body


@pytest.mark.parametrize("transport", ["serial", "datagram"])
def test_records_opened_and_replies_sealed(transport):
    """With the record cipher of either transport (a serial line's compact8, UDP's LutRound)."""
    cipher = TRANSPORT_NEEDS[transport == "datagram"]["record_cipher"]
    rng = random.Random(5)
    records, expected = [], []
    for n, (place, size) in enumerate(((1, 0), (0, 37))):
        keys = keys_for(place)
        inner = rng.randbytes(size)
        payload = S.seal_request(keys, S.SessionCommand.RECORD, 7, n + 1, 0x04, inner)
        records.append(opened(keys, place, payload))
        expected.append((bytes([0x04]) + inner, True))
        if size:
            continue
        # The same record with one ciphertext byte flipped: its bytes still come out (they are
        # only ever used after the verdict), the verdict fails. (Only the short one: the tag
        # covers every block alike, and the long record's blocks are the costly ones.)
        bad = bytearray(payload)
        bad[S.RECORD_HEADER.size] ^= 0x10
        records.append(opened(keys, place, bytes(bad)))
        expected.append((bytes([0x04 ^ 0x10]) + inner, False))
    # A reply sealed (status OK, 20 bytes) under place 0's reply key.
    keys = keys_for(0)
    reply = b"\x00" + rng.randbytes(20)
    sealed = S.seal_reply(keys, 0xA2, 9, 3, reply)
    head = sealed[:1 + S.RECORD_HEADER.size]
    aad = S.record_header(0xA2, 9, len(sealed)) + head
    records.append((start_of(keys, 0, 0, aad, len(reply), 3), reply))
    expected.append((sealed[len(head):], None))
    assert run(records, gaps=1, cipher=cipher) == expected


def test_a_record_takes_a_byte_a_cycle():
    """With its outputs always ready, the cipher (UDP's, the class's defaults) takes a
    record's bytes a byte a cycle from the first to the last (no cycle lost between blocks: the
    next block's first byte is taken as a full one goes), opening and sealing alike."""
    cipher = TRANSPORT_NEEDS[True]["record_cipher"]      # (the simulation the test above ran)
    keys = keys_for(0)
    rng = random.Random(11)
    inner = rng.randbytes(100)
    payload = S.seal_request(keys, S.SessionCommand.RECORD, 7, 1, 0x04, inner)
    reply = b"\x00" + rng.randbytes(110)
    sealed = S.seal_reply(keys, 0xA2, 9, 3, reply)
    head = sealed[:1 + S.RECORD_HEADER.size]
    aad = S.record_header(0xA2, 9, len(sealed)) + head
    taken = []
    got = run([opened(keys, 0, payload), (start_of(keys, 0, 0, aad, len(reply), 3), reply)],
              taken=taken, cipher=cipher)
    assert got == [(bytes([0x04]) + inner, True), (sealed[len(head):], None)]
    for cycles, size in zip(taken, (len(payload) - S.RECORD_HEADER.size, len(reply)),
                            strict=True):
        assert len(cycles) == size
        # (An opening's data bytes, then its tag: a byte a cycle throughout, but for two
        # cycles between them; a cycle lost per block would be 7 here.)
        assert cycles[-1] - cycles[0] <= size - 1 + 2

# amaranth: UnusedElaboratable=no
"""Records queued back to back through the executor of the secured Ethernet appliance (its
DRAB-LOCUS main core, the records' LutRound ciphers, aes_fpga.appliance.gateware.
session_records): the next record is opened while the reply before it is sealed, and the
replies are still those of the reference device, byte for byte, in order, also when a forged
record and a retransmission sit in the queue, and when records of random sizes come at random
gaps (the next record arriving at any point of the reply before it); and a full-sized CTR
record costs the executor less than its frame takes on an MII line.

Pysim, a few minutes each: -m slow."""

import random
from types import SimpleNamespace

import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from aes_fpga.appliance import session_spec as S
from aes_fpga.appliance.frame import frame_content
from aes_fpga.appliance.gateware.check import FrameCheck
from aes_fpga.appliance.gateware.executor import Executor
from aes_fpga.appliance.gateware.reply import ReplyBuilder
from aes_fpga.appliance.messages import DeviceInfo, build_load_key_request
from aes_fpga.appliance.reference import DeviceModel
from aes_fpga.appliance.spec import (
    ENTROPY_COUNTERS,
    MAX_PAYLOAD,
    MAX_PROCESS_DATA,
    Command,
    EntropyStatus,
    Mode,
    Op,
)
from aes_fpga.appliance.udp_client import independent_requests
from aes_fpga.cores import make_core
from aes_fpga.entropy.source import EntropyState
from aes_fpga.sim.ethbench import LINE_BYTES_PER_CYCLE
from aes_fpga.sim.sessionbench import WIRE_BYTES

SECRET = bytes(range(90, 122))
RECORD = S.SessionCommand.RECORD
MAX_CYCLES = 60_000


def appliance_executor():
    """The executor, frame check and reply builder of the secured Ethernet appliance (as
    :class:`~aes_fpga.appliance.gateware.eth_appliance.EthernetAppliance` makes them, with
    the simulated appliance's GCM), and the reference device with the same secret."""
    info = DeviceInfo(key_slots=1, key_sizes=(128,), modes=tuple(Mode), window=2,
                      entropy=True, sessions=True, max_payload=MAX_PAYLOAD)
    core = make_core("drab-locus", key_slots=1, key_sizes=(128,), tag_width=0)
    executor = Executor(core, info, counters=len(ENTROPY_COUNTERS), gcm="bram",
                        device_secret=SECRET, datagram=True)
    check = FrameCheck(MAX_PAYLOAD, key_bytes=executor.key_bytes, crc=False, gcm=True,
                       more_commands=tuple(S.SessionCommand))
    reply = ReplyBuilder(crc=False)
    m = Module()
    m.submodules.executor, m.submodules.check, m.submodules.reply = executor, check, reply
    wiring.connect(m, check.req, executor.req)
    wiring.connect(m, check.payload, executor.payload)
    wiring.connect(m, executor.reply, reply.desc)
    wiring.connect(m, executor.data, reply.data)
    return m, executor, check, reply, info


async def exchange(ctx, check, reply, datagrams, count, gaps=None):
    """Send ``datagrams`` back to back (each as fast as the frame check takes it, after
    ``gaps[n]`` idle cycles when given); return the first ``count`` reply datagrams, each with
    the cycle its last byte left."""
    gaps = gaps or [0] * len(datagrams)
    beats = [beat for gap, raw in zip(gaps, datagrams, strict=True)
             for beat in [None] * gap + [{"data": b, "end": 0, "drop": 0} for b in raw]
             + [{"end": 1}]]
    ctx.set(reply.o.ready, 1)
    out, replies = bytearray(), []
    for cycle in range(MAX_CYCLES):
        presented = bool(beats) and beats[0] is not None
        ctx.set(check.i.valid, presented)
        if presented:
            ctx.set(check.i.payload, beats[0])
        elif beats:
            beats.pop(0)
        _, _, taken, valid, byte = await ctx.tick().sample(check.i.ready, reply.o.valid,
                                                           reply.o.payload)
        if presented and taken:
            beats.pop(0)
        if valid:
            out.append(byte.data)
            if byte.last:
                replies.append((cycle, bytes(out)))
                out = bytearray()
                if len(replies) == count:
                    return replies
    raise AssertionError(f"{len(replies)} of {count} replies in {MAX_CYCLES} cycles")


def run_in_a_session(seed, body):
    """The secured executor in Amaranth's simulator with a healthy entropy source: a session
    opened and authenticated (each reply checked against the reference device), then
    ``await body(ctx, s)``, where ``s`` holds ``one`` (``await s.one(raw)`` sends one request
    and returns its reply, checked the same way), the session's ``keys``, the ``rng`` (seeded
    with ``seed``), the reference ``model`` and the executor's ``check`` and ``reply``."""
    m, executor, check, reply, info = appliance_executor()
    rng = random.Random(seed)
    state = {"challenge": None}
    model = DeviceModel(info, device_secret=SECRET, challenge_source=lambda: state["challenge"])

    async def bench(ctx):
        ctx.set(executor.entropy_state, EntropyState.OK)
        ctx.set(executor.counters[0], EntropyStatus.OK)
        ctx.set(executor.entropy_words.valid, 1)
        ctx.set(executor.entropy_words.payload, rng.getrandbits(128))

        async def one(raw):
            (_, got), = await exchange(ctx, check, reply, [raw], 1)
            if raw[0] == S.SessionCommand.OPEN_SESSION:
                state["challenge"] = S.parse_open_reply(got[5:], ValueError)[1]
            assert got.hex() == model.datagram(raw).hex()
            return got

        host = rng.randbytes(16)
        got = await one(frame_content(S.SessionCommand.OPEN_SESSION, 1, host, crc=False))
        sid, device, _ = S.parse_open_reply(got[5:], ValueError)
        keys = S.derive_session(SECRET, host, device, sid)
        await one(frame_content(S.SessionCommand.AUTHENTICATE, 2, S.build_authenticate_request(
            sid, keys.host_cryptogram), crc=False))
        await body(ctx, SimpleNamespace(one=one, keys=keys, rng=rng, model=model, check=check,
                                        reply=reply))

    sim = Simulator(m)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


@pytest.mark.slow
def test_queued_records_overlap_and_answer_as_the_reference():
    """Three full-sized CTR records, a forged one (a ciphertext byte flipped: dropped, no
    reply), the second again (a retransmission: its kept reply), a fourth record and STATS,
    all queued at once: every reply is the reference device's; the dropped record is counted.
    Between two full-sized records' replies the executor takes less than their frames take on
    MII (two cycles a byte), by 60 cycles at least (2913 cycles against 3056 on 2026-11-26:
    the next record is opened while the reply before it is sealed)."""
    async def body(ctx, s):
        one, keys, rng, model, check, reply = s.one, s.keys, s.rng, s.model, s.check, s.reply

        def sealed(seq, counter, command, payload):
            return frame_content(RECORD, seq, S.seal_request(keys, RECORD, seq, counter,
                                                             command, payload), crc=False)

        await one(sealed(3, 1, Command.LOAD_KEY, build_load_key_request(0, rng.randbytes(16))))
        chunk = (MAX_PROCESS_DATA - S.RECORD_OVERHEAD) // 16 * 16
        p1, p2, p3, p4 = independent_requests(0, Op.ENCRYPT, Mode.CTR, rng.randbytes(4 * chunk),
                                              iv=rng.randbytes(16), chunk_size=chunk)
        forged = bytearray(sealed(7, 4, Command.PROCESS, p3))
        forged[40] ^= 1
        queue = [sealed(4, 2, Command.PROCESS, p1), sealed(5, 3, Command.PROCESS, p2),
                 bytes(forged), sealed(5, 3, Command.PROCESS, p2),
                 sealed(8, 5, Command.PROCESS, p4), sealed(9, 6, Command.STATS, b"")]
        expected = [model.datagram(raw) for raw in queue]
        assert expected[2] == b"" and expected[3] == expected[1]
        got = await exchange(ctx, check, reply, queue, len(queue) - 1)
        assert [g.hex() for _, g in got] == [e.hex() for e in expected if e]
        stats = S.open_reply(keys, RECORD | 0x80, 9, 6, got[-1][1][5:])
        assert int.from_bytes(stats[-2:], "big") == 1          # the forged record, counted
        line = round((len(queue[1]) + WIRE_BYTES) / LINE_BYTES_PER_CYCLE["mii"])
        assert got[1][0] - got[0][0] <= line - 60

    run_in_a_session(4, body)


@pytest.mark.slow
def test_records_at_random_gaps_answer_as_the_reference():
    """Sixteen CTR records of 16 to 640 bytes, some forged (a byte flipped) and an INFO in the
    clear among them, each after a random gap (none, a few cycles, or hundreds), so that a
    request arrives while the reply before it is captured, sealed or sent, or after: every
    reply is the reference device's, in order; the forged records get none."""
    async def body(ctx, s):
        one, keys, rng, model, check, reply = s.one, s.keys, s.rng, s.model, s.check, s.reply
        await one(frame_content(RECORD, 3, S.seal_request(
            keys, RECORD, 3, 1, Command.LOAD_KEY, build_load_key_request(0, rng.randbytes(16))),
            crc=False))
        queue, gaps = [], []
        for n in range(16):
            size = rng.choice([16, 48, 160, 320, 640])
            payload, = independent_requests(0, Op.ENCRYPT, Mode.CTR, rng.randbytes(size),
                                            iv=rng.randbytes(16), chunk_size=size)
            raw = frame_content(RECORD, 4 + n, S.seal_request(
                keys, RECORD, 4 + n, 2 + n, Command.PROCESS, payload), crc=False)
            draw = rng.random()
            if draw < 0.1:
                forged = bytearray(raw)
                forged[rng.randrange(20, len(raw))] ^= 4
                raw = bytes(forged)
            elif draw < 0.15:
                raw = frame_content(Command.INFO, 4 + n, b"", crc=False)
            queue.append(raw)
            gaps.append(rng.choice([0, 0, 0, rng.randrange(1, 60), rng.randrange(60, 900)]))
        expected = [e for e in map(model.datagram, queue) if e]
        assert 0 < len(expected) < len(queue)                  # (some forged, by this seed)
        got = await exchange(ctx, check, reply, queue, len(expected), gaps)
        assert [g.hex() for _, g in got] == [e.hex() for e in expected]

    run_in_a_session(3, body)

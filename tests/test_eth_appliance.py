"""The appliance over UDP: the datagram engine against the reference device (one request a
datagram, replies as the model gives them, malformed datagrams dropped and counted)."""

import random

import pytest
from amaranth.sim import Simulator

from aes_fpga.appliance.frame import decode_frame, frame_content
from aes_fpga.appliance.gateware.eth_appliance import DatagramEngine
from aes_fpga.appliance.messages import (
    DeviceInfo,
    build_load_key_request,
    build_process_request,
    parse_stats_reply,
)
from aes_fpga.appliance.reference import DeviceModel
from aes_fpga.appliance.spec import (
    BLOCK_MODES,
    MAX_DATAGRAM,
    MAX_PAYLOAD,
    MAX_PROCESS_DATA,
    Command,
    Mode,
    Op,
)
from aes_fpga.cores import DEFAULT_CORE, make_core

KEY = bytes(range(16))


def datagram(command, seq, payload=b""):
    return frame_content(command, seq, payload, crc=False)


def run_engine(datagrams, replies_due, *, seed=1, max_cycles=30_000):
    """Feed ``datagrams`` (with random gaps, in those under 256 bytes) and collect
    ``replies_due`` reply datagrams (and any more within 200 cycles), and the counters; also
    the clock edges at which each datagram's last byte was taken and each reply's first byte
    left."""
    core = make_core(DEFAULT_CORE, key_slots=1, key_sizes=(128,), tag_width=0)
    info = DeviceInfo(core_name="drab-locus", build_id=0, key_sizes=(128,), key_slots=1,
                      modes=BLOCK_MODES, max_payload=MAX_PAYLOAD, window=2)
    dut = DatagramEngine(core, info)
    rng = random.Random(seed)
    replies, counters = [], {}
    # The clock edge (counted from the start) at which each datagram's last byte was taken and
    # each reply's first byte left.
    lasts, firsts = [], []

    async def send(ctx):
        edge = 0
        for datagram in datagrams:
            # (Gaps in the short datagrams: in a long one they would only stretch its read.)
            gap = 0.2 if len(datagram) < 256 else 0
            for n, byte in enumerate(datagram):
                while rng.random() < gap:
                    await ctx.tick()
                    edge += 1
                ctx.set(dut.rx.valid, 1)
                ctx.set(dut.rx.payload.data, byte)
                ctx.set(dut.rx.payload.last, n == len(datagram) - 1)
                taken = False
                while not taken:
                    _, _, taken = await ctx.tick().sample(dut.rx.ready)
                    edge += 1
                ctx.set(dut.rx.valid, 0)
            lasts.append(edge)

    async def receive(ctx):
        current = bytearray()
        stop = max_cycles
        for cycle in range(max_cycles):
            if cycle >= stop:
                break
            ctx.set(dut.tx.ready, rng.random() < 0.8)
            _, _, valid, ready, data, last = await ctx.tick().sample(
                dut.tx.valid, dut.tx.ready, dut.tx.payload.data, dut.tx.payload.last)
            if valid and ready:
                if not current:
                    firsts.append(cycle + 1)
                current.append(data)
                if last:
                    replies.append(bytes(current))
                    current.clear()
                    if len(replies) == replies_due:
                        stop = cycle + 200
        counters.update(short=ctx.get(dut.app_short), long=ctx.get(dut.app_long))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(send, background=True)
    sim.add_testbench(receive)
    sim.run()
    return replies, counters, info, (lasts, firsts)


def test_datagram_engine_matches_model():
    process = build_process_request(0, Op.ENCRYPT, Mode.CTR, bytes(range(40)), first=True,
                                    last=True, iv=bytes(15) + b"\xfe")
    largest = build_process_request(0, Op.ENCRYPT, Mode.CTR, bytes(range(256)) * 5 + bytes(160),
                                    first=True, last=True, iv=bytes(16))
    assert len(datagram(Command.PROCESS, 9, largest)) == MAX_DATAGRAM
    # (The last request ends its message with a partial block, as ``process`` does; a short
    # one: a partial block takes the same path whatever the message's length.)
    short = build_process_request(0, Op.ENCRYPT, Mode.CTR, bytes(range(23)), first=True,
                                  last=True, iv=bytes(15) + b"\x07")
    datagrams = [
        datagram(Command.INFO, 1),
        datagram(Command.PROCESS, 2, process),               # KEY_NOT_LOADED
        datagram(Command.LOAD_KEY, 3, build_load_key_request(0, KEY)),
        b"\x01\x00",                                          # shorter than the header
        datagram(Command.PROCESS, 4, process),
        datagram(Command.PROCESS, 4, process),               # a retransmission: same answer
        datagram(Command.INFO, 5, b"\x00\x00")[:-1],          # length says 2, 1 came: BAD_LENGTH
        datagram(Command.PROCESS, 6, build_process_request(
            0, Op.DECRYPT, Mode.CBC, bytes(32), first=True, last=True, iv=bytes(16))),
        datagram(Command.PROCESS, 9, largest),               # the longest, 1440 data bytes
        # One byte too long: no reply. (Read while the longest reply goes out.)
        bytes(MAX_DATAGRAM + 1),
        datagram(Command.STATS, 7),
        datagram(Command.STATS, 8, b"\x00"),                 # BAD_LENGTH
        datagram(Command.PROCESS, 10, short),                # CTR ends with a partial block
    ]
    dropped = {3, 9}
    replies, counters, info, (lasts, firsts) = run_engine(datagrams,
                                                          len(datagrams) - len(dropped))
    model = DeviceModel(info)
    model.counters = [1, 1]             # what STATS reports at the end: app_short, app_long
    expected = [model.datagram(d) for n, d in enumerate(datagrams) if n not in dropped]
    assert replies == expected
    # Each answered request's last byte is read only after the reply before it has started
    # (the UDP port answers the sender of the last request read when a reply starts).
    answered = [edge for n, edge in enumerate(lasts) if n not in dropped]
    assert all(last > first for last, first in zip(answered[1:], firsts, strict=False))
    assert len(decode_frame(replies[-4], crc=False).payload) == 1 + MAX_PROCESS_DATA
    assert parse_stats_reply(decode_frame(replies[-3], crc=False).payload) == [1, 1]
    assert counters == {"short": 1, "long": 1}


def test_appliance_refuses_a_core_of_another_slot_count():
    """The Ethernet appliance checks its core as the serial engine does (one rule for both)."""
    import pytest

    from aes_fpga.appliance.gateware.eth_appliance import EthernetAppliance
    from aes_fpga.sim.cxxsim import mark_used
    core = make_core(DEFAULT_CORE, key_slots=2, key_sizes=(128,), tag_width=8)
    mark_used(core)
    with pytest.raises(ValueError, match="key_slots: 4 differs from the core's 2"):
        EthernetAppliance(mac="02:00:c0:a8:01:32", ip="192.168.1.50", udp_port=7001,
                          core=core, key_slots=4)


def chunks_of(mode, op, data, iv, size):
    """``data`` as ``PROCESS`` payloads of ``size`` bytes, each a whole message (FIRST and
    LAST) starting where the one before ended (CTR: the counter on; CBC decryption: the last
    ciphertext block as its IV)."""
    from aes_fpga.appliance.udp_client import independent_requests
    return independent_requests(0, op, mode, data, iv=iv, chunk_size=size)


@pytest.mark.parametrize("gcm", ["bram", pytest.param(None, marks=pytest.mark.slow)])
def test_chunks_continuing_a_message_follow_without_a_wait(gcm):
    """Whole-message chunks that start where the last ended go into the mode engine without
    waiting for it to empty (the first beat changes nothing and is dropped), where a chunk that
    starts elsewhere (another counter, another mode, after a short block, in CBC encryption)
    waits for the core; in the GCM build (the simulated appliance's) and without GCM. Every
    reply as the reference device gives it."""
    rng = random.Random(5)
    # (Chunks of 8 blocks, longer than the core's latency: shorter ones would wait for the
    # reply before theirs instead, see DatagramEngine.)
    data = rng.randbytes(256)
    iv = bytes(12) + b"\xff\xff\xff\xf8"                 # the second chunk carries into word 1
    ctr = chunks_of(Mode.CTR, Op.ENCRYPT, data, iv, 128)
    ecb = chunks_of(Mode.ECB, Op.ENCRYPT, data[:256], None, 128)
    cbc_dec = chunks_of(Mode.CBC, Op.DECRYPT, data[:256], iv, 128)
    short = build_process_request(0, Op.ENCRYPT, Mode.CTR, data[:40], first=True, last=True,
                                  iv=bytes(16))
    after_short = build_process_request(0, Op.ENCRYPT, Mode.CTR, data[:32], first=True,
                                        last=True, iv=bytes(15) + b"\x03")
    other_iv = build_process_request(0, Op.ENCRYPT, Mode.CTR, data[:128], first=True,
                                     last=True, iv=bytes(16))
    cbc_enc = [build_process_request(0, Op.ENCRYPT, Mode.CBC, data[:16], first=True,
                                     last=True, iv=iv)] * 2
    payloads = [*ctr, other_iv, *ecb, *cbc_dec, short, after_short, *cbc_enc]
    follows = [1, 4, 6]                                  # (the chunks after the first)
    waits = [2, 3, 5, 8, 9, 10]                          # a new message: the core empties
    datagrams = [datagram(Command.LOAD_KEY, 1, build_load_key_request(0, KEY))]
    datagrams += [datagram(Command.PROCESS, n + 2, p) for n, p in enumerate(payloads)]
    core = make_core(DEFAULT_CORE, key_slots=1, key_sizes=(128,), tag_width=0)
    modes = BLOCK_MODES if gcm is None else (*BLOCK_MODES, Mode.GCM)
    info = DeviceInfo(core_name="drab-locus", build_id=0, key_sizes=(128,), key_slots=1,
                      modes=modes, max_payload=MAX_PAYLOAD, window=2)
    dut = DatagramEngine(core, info, gcm=gcm)
    replies, stalls = [], []

    async def send(ctx):
        for d in datagrams:
            for n, byte in enumerate(d):
                ctx.set(dut.rx.valid, 1)
                ctx.set(dut.rx.payload.data, byte)
                ctx.set(dut.rx.payload.last, n == len(d) - 1)
                await ctx.tick().until(dut.rx.ready)
            ctx.set(dut.rx.valid, 0)

    async def receive(ctx):
        # Each reply, and the cycles its bytes stopped coming once it had started.
        ctx.set(dut.tx.ready, 1)
        current, stalled = bytearray(), 0
        for _ in range(6_000):
            _, _, valid, data, last = await ctx.tick().sample(
                dut.tx.valid, dut.tx.payload.data, dut.tx.payload.last)
            if not valid:
                stalled += bool(current)
                continue
            current.append(data)
            if last:
                replies.append(bytes(current))
                stalls.append(stalled)
                current, stalled = bytearray(), 0
                if len(replies) == len(datagrams):
                    break

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(send, background=True)
    sim.add_testbench(receive)
    sim.run()
    model = DeviceModel(info)
    assert replies == [model.datagram(d) for d in datagrams]
    # A reply's bytes stop after its status until its first result is out of the core: a
    # chunk that followed the last one without a wait has it soon after the last reply's
    # end, one that waited for the core to empty a core latency later.
    stalls = dict(enumerate(stalls[1:]))                 # (by payload)
    assert all(stalls[n] <= 30 for n in follows), stalls
    assert all(stalls[n] > 60 for n in waits), stalls

# amaranth: UnusedElaboratable=no
"""The appliance's gateware layers one by one (COBS, frame check, reply builder) against the
host's pure-Python protocol modules, with random valid/ready gaps; and the engine's
steady-state throughput for pipelined PROCESS chunks."""

import random
import zlib

import pytest
from amaranth.sim import Simulator
from stream_drivers import gap_sender, run_streams_with_gaps

from aes_fpga import appliance as P
from aes_fpga.appliance.gateware.cobs import CobsDecoder, CobsEncoder

MAX_CYCLES = 200_000


# ---- COBS --------------------------------------------------------------------------------

NZ = bytes(range(1, 256)) * 6


def _encoder_frames(rng):
    return [b"\x00", b"\x00\x00", b"\x11", b"\x11\x22\x00\x33", NZ[:253], NZ[:254], NZ[:255],
            NZ[:254] + b"\x00", NZ[:508], b"\x00" + NZ[:254], NZ[:600] + b"\x00",
            bytes(rng.randrange(4) for _ in range(300)), NZ[:1100]]


@pytest.mark.parametrize("ready_prob", [pytest.param(1.0, marks=pytest.mark.slow), 0.6,
                                        pytest.param(0.5, marks=pytest.mark.slow)])
def test_cobs_encoder(ready_prob):
    """Frames of edge lengths (runs of 253..255, 508 non-zero bytes, zeros at either end)
    under random gaps on both sides come out as cobs_encode gives them. The default run
    takes 0.6; 1.0 (a sink always ready) and 0.5 (more waits) run with -m slow: the same
    frames under other constants, the sink always ready is also
    test_cobs_encoder_one_byte_per_cycle's."""
    rng = random.Random(3)
    frames = _encoder_frames(rng)
    want = b"".join(P.cobs_encode(f) + b"\x00" for f in frames)
    dut = CobsEncoder()
    beats = [{"data": b, "last": n == len(f) - 1} for f in frames for n, b in enumerate(f)]
    (got,) = run_streams_with_gaps(dut, [(dut.i, beats)], [(dut.o, len(want), None)],
                                   rng=rng, ready_prob=ready_prob)
    assert bytes(got).hex() == want.hex()


def test_cobs_encoder_one_byte_per_cycle():
    """Long frames with no wait on either side: the encoder sends a byte on every cycle but
    the first group's (the ring fills one group while sending the one before)."""
    frame = NZ[:1016] + b"\x00" + NZ[:17]
    want = P.cobs_encode(frame) + b"\x00"
    dut = CobsEncoder()
    cycles = []

    async def bench(ctx):
        ctx.set(dut.o.ready, 1)
        got = bytearray()
        n = 0
        for cycle in range(4 * len(want)):
            if n < len(frame):
                ctx.set(dut.i.payload, {"data": frame[n], "last": n == len(frame) - 1})
                ctx.set(dut.i.valid, 1)
            else:
                ctx.set(dut.i.valid, 0)
            took, valid, byte = ctx.get(dut.i.ready), ctx.get(dut.o.valid), \
                ctx.get(dut.o.payload)
            await ctx.tick()
            if n < len(frame) and took:
                n += 1
            if valid:
                got.append(byte)
                if len(got) == len(want):
                    cycles.append(cycle)
                    break
        assert bytes(got) == want

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    # The first group's 254 bytes are buffered before anything is sent, and the last group's
    # 17 before its code byte is known; otherwise one byte leaves every cycle (a few cycles
    # of slack for the group changes). The single-buffered encoder took 2 cycles a byte.
    assert cycles[0] <= 254 + len(want) + 17 + 4


def _decode_stream_model(stream):
    """The beats CobsDecoder gives for ``stream``, byte by byte: each content byte as soon as
    it is known, then an end beat with ``drop``."""
    beats = []
    remain, zero_pending, enc_len, overflow, count = 0, False, 0, False, 0
    for b in stream:
        if b == 0:
            drop = enc_len == 0 or overflow or remain != 0 or count < 9
            beats.append((None, 1, int(drop)))
            remain, zero_pending, enc_len, overflow, count = 0, False, 0, False, 0
        elif enc_len == P.SERIAL_MAX_ENCODED_FRAME:
            overflow = True
        elif not overflow:
            enc_len += 1
            if remain == 0:
                if zero_pending:
                    beats.append((0, 0, 0))
                    count += 1
                remain, zero_pending = b - 1, b != 0xFF
            else:
                beats.append((b, 0, 0))
                count += 1
                remain -= 1
    return beats


def _decoder_streams(rng):
    content = [bytes(rng.randrange(3) for _ in range(n)) for n in (9, 10, 40, 300)]
    frames = [P.cobs_encode(c) + b"\x00" for c in content]
    frames += [P.encode_frame(P.Command.INFO, 5), P.cobs_encode(NZ[:254]) + b"\x01\x00",
               P.cobs_encode(NZ[:P.frame_size(P.SERIAL_MAX_PAYLOAD)]) + b"\x00"]
    junk = [b"\x00", b"\x00\x00", b"\x05\x11\x22\x33\x00", b"\x09\x01\x02\x03\x00",
            b"\x01" * 8 + b"\x00", b"\xff" * (P.SERIAL_MAX_ENCODED_FRAME + 1) + b"\x00",
            b"\x5a" * P.SERIAL_MAX_ENCODED_FRAME + b"\x00"]
    return frames + junk


def test_cobs_decoder():
    """Valid frames (among them the optional trailing 0x01 group and the longest frame) and
    junk (empty, truncated, short, oversized, exactly at the limit): content and drop flags as
    cobs_decode and the spec's step 1 give them, under random gaps on both sides."""
    rng = random.Random(7)
    stream = b"".join(_decoder_streams(rng))
    want = _decode_stream_model(stream)
    # The byte-by-byte model agrees with cobs_decode and the spec's step 1, frame by frame.
    frames, content = [], []
    for data, end, drop in want:
        if end:
            frames.append((bytes(content), drop))
            content = []
        else:
            content.append(data)
    raws = stream.split(b"\x00")[:-1]
    assert len(frames) == len(raws)
    for raw, (content, drop) in zip(raws, frames, strict=True):
        try:
            decoded = P.cobs_decode(raw)
        except P.CobsError:
            decoded = None
        valid = (decoded is not None and len(raw) <= P.SERIAL_MAX_ENCODED_FRAME
                 and len(decoded) >= P.HEADER_SIZE + P.CRC_SIZE)
        assert drop == (not valid)
        if valid:
            assert content == decoded
    dut = CobsDecoder()
    (got,) = run_streams_with_gaps(dut, [(dut.i, list(stream))],
                                   [(dut.o, len(want), ("data", "end", "drop"))],
                                   rng=rng, ready_prob=0.6)
    got = [(None if end else data, end, drop if end else 0) for data, end, drop in got]
    assert got == want


# ---- frame check ---------------------------------------------------------------------------

def _content(command, seq, payload, *, length=None, crc_xor=0):
    """Frame content (header, payload, CRC) with a length field and CRC of our choosing."""
    content = P.HEADER.pack(command, seq, len(payload) if length is None else length)
    content += payload
    return content + ((zlib.crc32(content) ^ crc_xor) & 0xFFFFFFFF).to_bytes(4, "big")


def check_cases(max_payload):
    """(name, content, status or None for a dropped frame) for a device whose max payload is
    ``max_payload``."""
    return [*CHECK_CASES,
            ("length-above-max", _content(P.Command.PROCESS, 7, bytes(max_payload + 1)),
             P.Status.BAD_LENGTH),
            ("max", _content(P.Command.PROCESS, 11, (bytes(range(256)) * 6)[:max_payload]),
             P.Status.OK)]


CHECK_CASES = [
    # (name, content, status or None for a dropped frame)
    ("info", _content(P.Command.INFO, 0x0102, b""), P.Status.OK),
    ("process", _content(P.Command.PROCESS, 0xBEEF, bytes(range(1, 70))), P.Status.OK),
    ("bad-crc", _content(P.Command.INFO, 3, b"", crc_xor=0x80), P.Status.BAD_CRC),
    # The CRC comes first, then the length, then the command.
    ("bad-crc-before-length", _content(0x77, 4, b"ab", length=9, crc_xor=1), P.Status.BAD_CRC),
    ("length-short", _content(P.Command.ZEROIZE, 5, b"\x00\x01", length=1), P.Status.BAD_LENGTH),
    ("length-long", _content(P.Command.ZEROIZE, 5, b"\x00", length=2), P.Status.BAD_LENGTH),
    ("length-before-command", _content(0x77, 6, b"abc", length=2), P.Status.BAD_LENGTH),
    ("unknown", _content(0x0F, 8, b"xyz"), P.Status.UNKNOWN_COMMAND),
    ("reply-opcode", _content(0x84, 9, b""), P.Status.UNKNOWN_COMMAND),
    ("load-key", _content(P.Command.LOAD_KEY, 10, b"\x01\x02" + bytes(range(0x40, 0x60))),
     P.Status.OK),
    ("short", b"\x01\x02\x03\x04\x05\x06\x07\x08", None),
]


def _udp_status(content, max_payload):
    """The status of a datagram's check (spec "Transport over UDP": no CRC)."""
    try:
        frame = P.decode_frame(content, crc=False, max_payload=max_payload)
    except P.ProtocolError as e:
        return e.status
    return P.Status.UNKNOWN_COMMAND if frame.is_reply else P.Status.OK


@pytest.mark.parametrize("crc", [True, False], ids=["serial", "udp"])
def test_frame_check(crc):
    """Statuses in the spec's order (CRC, length, command), header fields and the payload
    stream (from offset HEAD_SIZE, none for LOAD_KEY, whose key goes to the key register
    only), frames flagged by the decoder forgotten; requests pipelined with random gaps.
    Serial frames (with the CRC, the serial appliance's max payload) and UDP datagrams
    (without it, MAX_PAYLOAD): the same cases with the CRC cut off, statuses as
    ``decode_frame`` gives them."""
    from aes_fpga.appliance.gateware.check import HEAD_SIZE, KEY_BYTES, FrameCheck
    rng = random.Random(11)
    max_payload = P.SERIAL_MAX_PAYLOAD if crc else P.MAX_PAYLOAD
    trailer = P.CRC_SIZE if crc else 0
    cases = check_cases(max_payload)
    if not crc:
        cases = [(name, c[:-P.CRC_SIZE], None if s is None else _udp_status(c[:-P.CRC_SIZE],
                                                                           max_payload))
                 for name, c, s in cases]
        assert P.Status.BAD_CRC not in {s for _, _, s in cases}
    if crc:
        # The short cases twice, for more neighbours (a LOAD_KEY after each kind of request);
        # the two of max-payload length and the datagrams take the same paths once each.
        cases = cases + [c for c in cases if len(c[1]) < 200]
    rng.shuffle(cases)
    dut = FrameCheck(max_payload, crc=crc)
    beats = []
    for _, content, status in cases:
        beats += [{"data": b, "end": 0, "drop": 0} for b in content]
        beats.append({"data": 0, "end": 1, "drop": int(status is None)})
    want = [(c, s) for _, c, s in cases if s is not None]
    got = []
    # What the key register may hold once a request is taken: nothing, or the key bytes come so
    # far of the frame being received, when that is a LOAD_KEY (its bytes shift in while the
    # request before it is presented). The top bytes first, the rest zero.
    held = []
    for content, _ in want[1:] + [(b"", None)]:
        key = content[P.HEADER_SIZE + 2:len(content) - trailer]
        if content[:1] != bytes([P.Command.LOAD_KEY]):
            key = b""
        held.append({int.from_bytes(key[:n].ljust(KEY_BYTES, b"\0")[:KEY_BYTES], "big")
                     for n in range(len(key) + 1)})

    async def execute(ctx):
        for n, (content, status) in enumerate(want):
            await ctx.tick().until(dut.req.valid)
            req = ctx.get(dut.req.payload)
            command, seq, length = P.HEADER.unpack(content)
            payload = content[P.HEADER_SIZE:len(content) - trailer]
            stored = b"" if command == P.Command.LOAD_KEY else payload[HEAD_SIZE:]
            stored = stored[:max_payload - HEAD_SIZE]
            got.append((req.status, req.command, req.seq, req.length))
            if status == P.Status.OK and command != P.Command.LOAD_KEY:
                assert [req.head[n] for n in range(min(HEAD_SIZE, len(payload)))] == \
                    list(payload[:HEAD_SIZE])
            if command == P.Command.LOAD_KEY and status == P.Status.OK:
                key = payload[2:]
                assert req.key == int.from_bytes(key.ljust(KEY_BYTES, b"\0"), "big")
                assert [req.head[n] for n in range(2)] == list(payload[:2])
                assert [req.head[n] for n in range(2, HEAD_SIZE)] == [0, 0]
            # Take some or all of the payload (a refused request is not read at all).
            take = len(stored) if status == P.Status.OK else rng.randrange(len(stored) + 1)
            data = bytearray()
            for _ in range(20 * len(stored) + 20):
                if len(data) == take:
                    break
                ready = rng.random() < 0.7
                ctx.set(dut.payload.ready, ready)
                valid, byte = ctx.get(dut.payload.valid), ctx.get(dut.payload.payload)
                await ctx.tick()
                if valid and ready:
                    data.append(byte)
            ctx.set(dut.payload.ready, 0)
            assert bytes(data) == stored[:take]
            if take == len(stored):
                # The stream ends with the payload.
                for _ in range(3):
                    await ctx.tick()
                    assert not ctx.get(dut.payload.valid)
            ctx.set(dut.req.ready, 1)
            await ctx.tick()
            ctx.set(dut.req.ready, 0)
            assert ctx.get(dut.req.payload.key) in held[n] or ctx.get(dut.req.valid)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(gap_sender(dut.i, beats, rng, gap=0.2), background=True)
    sim.add_testbench(execute)
    # Until the requests are all taken (the sender runs in the background), at most MAX_CYCLES:
    # each advance is one clock edge.
    for _ in range(2 * MAX_CYCLES):
        if not sim.advance():
            break
    else:
        pytest.fail(f"the requests were not all taken in {MAX_CYCLES} cycles")
    assert got == [(s, *P.HEADER.unpack(c)) for c, s in want]


# ---- reply builder -------------------------------------------------------------------------

@pytest.mark.parametrize("crc", [True, False], ids=["serial", "udp"])
def test_reply_builder(crc):
    """Header with the reply opcode, status, payload and CRC-32, byte for byte as
    encode_frame builds a reply, ``last`` on the CRC's final byte; without the CRC (UDP),
    as frame_content(crc=False) builds it, ``last`` on the payload's final byte (the status
    byte of a status-only reply); random gaps."""
    from aes_fpga.appliance.gateware.reply import ReplyBuilder
    rng = random.Random(13)
    replies = [(P.Command.INFO, 1, P.Status.OK, bytes(range(1, 30))),
               (P.Command.PROCESS, 0xFFFF, P.Status.BAD_CRC, b""),
               (0x77, 0x1234, P.Status.UNKNOWN_COMMAND, b""),
               (P.Command.PROCESS, 0x0100, P.Status.OK, rng.randbytes(100)),
               (P.Command.PROCESS, 3, P.Status.OK, rng.randbytes(P.MAX_PROCESS_DATA)),
               (P.Command.PROCESS, 2, P.Status.OK, b"\x00" * 5)]
    dut = ReplyBuilder(crc=crc)
    want = []
    for command, seq, status, payload in replies:
        content = P.frame_content(command | P.REPLY_BIT, seq, bytes([status]) + payload,
                                  crc=crc)
        want += [(b, int(n == len(content) - 1)) for n, b in enumerate(content)]
    descs = [{"command": c, "seq": s, "status": st, "length": 1 + len(p)}
             for c, s, st, p in replies]
    data = [b for *_, p in replies for b in p]
    (got,) = run_streams_with_gaps(dut, [(dut.desc, descs), (dut.data, data)],
                                   [(dut.o, len(want), ("data", "last"))], rng=rng)
    assert got == want


# ---- the engine's throughput ---------------------------------------------------------------

def test_process_throughput():
    """Pipelined 1 KiB CTR chunks through the engine of ``--port sim`` (compiled
    simulation): replies match the reference device, and in steady state one chunk's reply
    follows the previous one's after at most 1.1 cycles per payload byte (rx and tx each
    carry about one byte per cycle; measured 1.02; the engine that handled one request at a
    time took 4.33)."""
    from aes_fpga.sim.cxxsim import find_cxx, open_device
    from aes_fpga.sim.link import sim_appliance
    if find_cxx() is None:
        pytest.skip("needs the compiled simulator (no C++ compiler)")
    make, cache_key = sim_appliance()
    engine = make()
    chunks = 12
    frames = [P.encode_frame(P.Command.LOAD_KEY, 1, P.build_load_key_request(0, bytes(16)))]
    data = random.Random(17).randbytes(1024 * chunks)
    for n, payload in enumerate(P.build_process_requests(0, P.Op.ENCRYPT, P.Mode.CTR, data,
                                                         iv=bytes(16), chunk_size=1024)):
        frames.append(P.encode_frame(P.Command.PROCESS, 2 + n, payload))
    stream = b"".join(frames)
    want = P.DeviceModel(engine.info).feed(stream)
    with open_device(engine, engine="cxxrtl", cache_key=cache_key,
                     progress=lambda line: None) as link:
        # All at once: rx back-pressure keeps as many requests in the engine as it holds.
        link.write(stream)
        got = link.read(len(want), timeout=60)
        link.close()
    assert got.hex() == want.hex()
    ends = link.timing.ends
    assert len(ends) == 1 + chunks
    # From the end of the second PROCESS reply to the last (the first two fill the pipeline).
    steady = (ends[-1] - ends[2]) / ((chunks - 2) * 1024)
    assert steady <= 1.1, f"{steady:.3f} cycles per payload byte"


# ---- the engine's area -------------------------------------------------------------------

#: What the protocol engine without its core cost (``synth_xilinx``, hierarchy kept, AES-128,
#: one key slot) before it was split into layers, when it handled one request at a time
#: (4.33 cycles per payload byte): the layered engine must not cost more in any column but the
#: flip-flops, which may exceed its 1048 by the registers that hold the design to 4 LUT levels
#: (registered stages between layers, the result shift register, registered counter flags).
SINGLE_REQUEST_ENGINE = {"lut": 2306, "lut_as_memory": 136, "ff": 1400, "ramb18": 1,
                         "ramb36": 0, "dsp": 0}


@pytest.mark.slow
def test_engine_area_within_the_single_request_engines(tmp_path):
    """The layered engine (without its core) is no larger than the engine it replaced, in
    LUTs, LUTs as memory, block RAM and DSPs, and its flip-flops within the timing registers'
    allowance (about 50 s of Yosys when not cached)."""
    from aes_fpga.appliance.gateware.engine import ProtocolEngine
    from aes_fpga.flow.synth import group_modules, synthesize
    result = synthesize(ProtocolEngine(key_slots=1, key_sizes=(128,)), hierarchy=True,
                        workdir=tmp_path)
    engine = group_modules(result.modules, {"": "engine", "executor.modes.core": "core"})
    engine = engine["engine"]
    over = {k: (getattr(engine, k), limit) for k, limit in SINGLE_REQUEST_ENGINE.items()
            if getattr(engine, k) > limit}
    assert not over, f"larger than the single-request engine (now, limit): {over}"


@pytest.mark.slow
def test_every_mode_rate_through_both_appliances():
    """What the README's mode-rates table runs (16 KiB there), at 4 KiB on the same compiled
    simulators: every mode's replies equal the reference device's (checked inside); CTR, ECB and
    CBC decryption go at the engine's byte pace (a block's 16 bytes in and out, about 22
    cycles a block at 4 KiB), CBC encryption waits a core latency a block, and over UDP it
    waits a round trip a chunk. With -m slow (eight compiled simulations, about 10 s of CPU
    beyond building the simulators): the default run holds the engine's CTR pace
    (test_process_throughput), the Ethernet appliance's (tests/test_eth_appliance_sim.py) and
    every mode's values in the mode engine (tests/test_modes.py) and its pace, CBC encryption's
    one block per core latency included (tests/test_modes.py::test_rate)."""
    from aes_fpga.sim.cxxsim import find_cxx
    from aes_fpga.sim.moderates import MODES, mode_rates
    if find_cxx() is None:
        pytest.skip("needs the compiled simulator (no C++ compiler)")
    rows = {r["mode"]: r for r in mode_rates(4096)}
    assert list(rows) == [label for label, _, _ in MODES]
    fast = [rows[m] for m in ("ECB encryption", "CBC decryption", "CTR")]
    cbc = rows["CBC encryption"]
    assert all(16 <= r["engine_cycles_per_block"] < 30 for r in fast)
    assert cbc["engine_cycles_per_block"] > 100           # DRAB-LOCUS's latency, 115
    assert all(cbc["udp_bytes_per_cycle"] < r["udp_bytes_per_cycle"] for r in fast)
    assert all(r["bytes"] == 4096 for r in rows.values())

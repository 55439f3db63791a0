"""cocotb tests of an exported core's AXI4-Stream ports (``aes-fpga export --interface axis``),
run by tests/test_export_cocotb.py in Icarus Verilog: the Verilog as a user gets it, driven by
cocotbext-axi's stream sources and sink, checked against ``cryptography`` (OpenSSL).

What the export is comes from its JSON (``AES_EXPORT_JSON``): key sizes, slots, tag width,
operations, the latency and blocks per cycle the core declares. ``AES_EXPORT_SEED`` seeds the
random traffic.
"""

import json
import os
import random
from fractions import Fraction
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

INFO = json.loads(Path(os.environ["AES_EXPORT_JSON"]).read_text())
SEED = int(os.environ.get("AES_EXPORT_SEED", "1"))
SIZES = INFO["key_sizes"]
DECRYPTS = "decrypt" in INFO["ops"]
SLOT_BITS = max(INFO["key_slots"] - 1, 0).bit_length()
TAGS = 1 << INFO["tag_width"]

# FIPS-197 Appendix C: the plaintext and, per key length, the key and ciphertext.
FIPS_PT = bytes.fromhex("00112233445566778899aabbccddeeff")
FIPS = {128: ("000102030405060708090a0b0c0d0e0f", "69c4e0d86a7b0430d8cdb78070b4c55a"),
        192: ("000102030405060708090a0b0c0d0e0f1011121314151617",
              "dda97ca4864cdfe06eaf70a0ec0d7191"),
        256: ("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
              "8ea2b7ca516745bfeafc49904b496089")}


def reference(key, block, op):
    """``block`` encrypted (op 0) or decrypted (op 1) under ``key`` by OpenSSL."""
    cipher = Cipher(algorithms.AES(key), modes.ECB())
    f = cipher.encryptor() if op == 0 else cipher.decryptor()
    return f.update(block) + f.finalize()


class Bench:
    """Clock, reset, the three streams, and a record of the cycle of every handshake."""

    def __init__(self, dut):
        self.dut = dut
        cocotb.start_soon(Clock(dut.aclk, 10, unit="ns").start())
        args = dict(clock=dut.aclk, reset=dut.aresetn, reset_active_level=False)
        self.key = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis_key"), **args)
        self.src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), **args)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), **args)
        self.accepted, self.delivered = [], []
        self.cycle = 0
        self.keys = {}

    async def start(self):
        self.dut.aresetn.value = 0
        await ClockCycles(self.dut.aclk, 4)
        self.dut.aresetn.value = 1
        cocotb.start_soon(self._record())
        await RisingEdge(self.dut.aclk)

    async def _record(self):
        dut = self.dut
        while True:
            await RisingEdge(dut.aclk)
            if dut.s_axis_tvalid.value == 1 and dut.s_axis_tready.value == 1:
                self.accepted.append(self.cycle)
            if dut.m_axis_tvalid.value == 1 and dut.m_axis_tready.value == 1:
                self.delivered.append(self.cycle)
            self.cycle += 1

    async def load_key(self, key, slot=0):
        code = (len(key) * 8 - 128) // 64
        await self.key.send(AxiStreamFrame(key.ljust(32, b"\0"), tuser=code | slot << 3))
        await self.key.wait()
        self.keys[slot] = key

    def request(self, block, op, slot, tag):
        tid = tag if INFO["tag_width"] else None
        self.src.send_nowait(AxiStreamFrame(block, tid=tid, tuser=op | slot << 1))
        return reference(self.keys[slot], block, op)

    async def results(self, count):
        out = {}
        for _ in range(count):
            frame = await self.sink.recv()
            tid = frame.tid     # one per byte lane, or none without a tid port
            tag = tid if isinstance(tid, int) else tid[0] if tid else 0
            out.setdefault(tag, []).append(bytes(frame.tdata))
        return out


def pauses(rng, prob):
    while True:
        yield rng.random() < prob


@cocotb.test()
async def fips197_and_latency(dut):
    """FIPS-197 C.1-C.3 for every key size, both directions the core has; each result comes
    exactly the declared latency after its request was taken."""
    bench = Bench(dut)
    await bench.start()
    for bits in SIZES:
        key, ct = (bytes.fromhex(x) for x in FIPS[bits])
        await bench.load_key(key)
        cases = [(FIPS_PT, 0, ct)] + ([(ct, 1, FIPS_PT)] if DECRYPTS else [])
        for block, op, want in cases:
            start = len(bench.accepted)
            assert bench.request(block, op, 0, 3 % TAGS) == want
            got = await bench.results(1)
            assert got == {3 % TAGS: [want]}, (bits, op, got)
            assert bench.delivered[-1] - bench.accepted[start] == INFO["latency"][str(bits)]


#: The longest burst, in periods of the declared blocks per cycle, a core may work in (the ring
#: cores fill all their slots, then the results leave together).
BURST = 16


def periodic(cycles, per, span):
    """Whether ``cycles[n + per] - cycles[n] == span`` for every ``n``, over two periods."""
    return len(cycles) >= 2 * per and all(
        b - a == span for a, b in zip(cycles, cycles[per:], strict=False))


@cocotb.test()
async def sustained_blocks_per_cycle(dut):
    """Requests always offered and results always taken: the results leave at exactly the
    declared blocks per cycle, ``p`` every ``q`` cycles (or ``m p`` every ``m q`` for a core
    working in bursts)."""
    bench = Bench(dut)
    await bench.start()
    bits = SIZES[0]
    await bench.load_key(bytes(range(bits // 8)))
    bpc = Fraction(INFO["blocks_per_cycle"][str(bits)])
    p, q = bpc.numerator, bpc.denominator
    count = int(INFO["latency"][str(bits)] * bpc) + 2 * BURST * p + 2
    for n in range(count):
        bench.request(bytes([n % 256]) * 16, 0, 0, n % TAGS)
    await bench.results(count)
    out = bench.delivered[-count:]
    assert any(periodic(out, m * p, m * q) for m in range(1, BURST + 1)), (p, q, out[:40])


@cocotb.test()
async def random_traffic_with_gaps_and_back_pressure(dut):
    """Keys of every size into the slots, random blocks, directions and slots, random tvalid
    gaps and tready back-pressure; then slot 0 takes a new key and the traffic runs again.
    Every result is OpenSSL's, under its tag."""
    rng = random.Random(SEED)
    bench = Bench(dut)
    bench.src.set_pause_generator(pauses(rng, 0.3))
    bench.sink.set_pause_generator(pauses(rng, 0.5))
    await bench.start()
    for slot in range(INFO["key_slots"]):
        await bench.load_key(rng.randbytes(rng.choice(SIZES) // 8), slot)
    for phase in range(2):
        if phase:
            await bench.load_key(rng.randbytes(SIZES[-1] // 8), 0)
        want = {}
        for tag in range(min(TAGS, int(os.environ.get("AES_EXPORT_BLOCKS", "8")))):
            op = rng.randrange(2) if DECRYPTS else 0
            slot = rng.randrange(INFO["key_slots"])
            want[tag] = [bench.request(rng.randbytes(16), op, slot, tag)]
        assert await bench.results(len(want)) == want

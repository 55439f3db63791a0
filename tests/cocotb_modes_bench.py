"""cocotb test of an exported mode engine (``aes-fpga export --design modes --interface native``),
run by tests/test_export_cocotb.py in Icarus Verilog: the engine's own ports, payloads packed
from the fields its JSON lists (``AES_EXPORT_JSON``), messages in ECB, CBC and CTR against
``cryptography``."""

import json
import os
import random
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

INFO = json.loads(Path(os.environ["AES_EXPORT_JSON"]).read_text())
FIELDS = {p["name"]: {f["name"]: f["lsb"] for f in p.get("fields", ())} for p in INFO["ports"]}
MODE = INFO["mode_codes"]


def pack(port, **values):
    """A payload of ``port`` from field values (fields the JSON lists; others must be 0)."""
    word = 0
    for name, value in values.items():
        if value:
            word |= value << FIELDS[port][name]
    return word


async def send(dut, stream, value):
    """Offer ``value`` on ``stream`` until it is taken."""
    getattr(dut, f"{stream}__payload").value = value
    getattr(dut, f"{stream}__valid").value = 1
    while True:
        await RisingEdge(dut.clk)
        if getattr(dut, f"{stream}__ready").value == 1:
            break
    getattr(dut, f"{stream}__valid").value = 0


async def collect(dut, out):
    while True:
        await RisingEdge(dut.clk)
        if dut.o__valid.value == 1 and dut.o__ready.value == 1:
            word = int(dut.o__payload.value)
            out.append((word & ((1 << 128) - 1)).to_bytes(16, "big"))


def reference(key, mode, op, iv, blocks):
    m = {"ECB": modes.ECB(), "CBC": modes.CBC(iv), "CTR": modes.CTR(iv)}[mode]
    c = Cipher(algorithms.AES(key), m)
    f = c.encryptor() if op == 0 or mode == "CTR" else c.decryptor()
    return f.update(b"".join(blocks)) + f.finalize()


@cocotb.test()
async def ecb_cbc_ctr_messages(dut):
    rng = random.Random(5)
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    dut.key__valid.value = dut.i__valid.value = 0
    dut.o__ready.value = 1
    dut.rst.value = 1
    await ClockCycles(dut.clk, 3)
    dut.rst.value = 0
    out = []
    cocotb.start_soon(collect(dut, out))
    bits = INFO["key_sizes"][-1]
    key = rng.randbytes(bits // 8)
    await send(dut, "key", pack("key__payload", key=int.from_bytes(key.ljust(32, b"\0"), "big"),
                                key_bits=(bits - 128) // 64))
    for mode, op in (("CBC", 0), ("CTR", 0), ("CBC", 1), ("ECB", 1)):
        iv = rng.randbytes(16)
        blocks = [rng.randbytes(16) for _ in range(3)]
        start = len(out)
        await send(dut, "i", pack("i__payload", data=int.from_bytes(iv, "big"), first=1,
                                  mode=MODE[mode], op=op))
        for n, block in enumerate(blocks):
            tag = {"tag": n} if "tag" in FIELDS["i__payload"] else {}
            await send(dut, "i", pack("i__payload", data=int.from_bytes(block, "big"), **tag))
        for _ in range(10_000):
            if len(out) == start + len(blocks):
                break
            await RisingEdge(dut.clk)
        assert b"".join(out[start:]) == reference(key, mode, op, iv, blocks), (mode, op)

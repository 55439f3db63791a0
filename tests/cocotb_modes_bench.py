"""cocotb test of an exported mode engine (``aes-fpga export --design modes``), run by
tests/test_export_cocotb.py in Icarus Verilog: the engine's own ports (``--interface native``)
or its AXI4-Stream ports (``axis``), payloads packed from the fields its JSON lists
(``AES_EXPORT_JSON``), messages in ECB, CBC and CTR against ``cryptography`` and the latency
the JSON declares. The helpers serve tests/cocotb_gcm_bench.py too."""

import json
import os
import random
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotb.utils import get_sim_time
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

INFO = json.loads(Path(os.environ["AES_EXPORT_JSON"]).read_text())
FIELDS = {p["name"]: {f["name"]: f["lsb"] for f in p.get("fields", ())} for p in INFO["ports"]}
MODE = INFO["mode_codes"]
#: The AXI4-Stream ports (``--interface axis``): payloads split into tdata (FIPS-197 byte 0 in
#: bits 7:0), tuser and tid; the engine's own ports otherwise.
AXIS = INFO["interface"] == "axis"
NAMES = {p["name"] for p in INFO["ports"]}


def pack(port, **values):
    """A payload of ``port`` from field values (fields the JSON lists; others must be 0)."""
    word = 0
    for name, value in values.items():
        if value:
            word |= value << FIELDS[port][name]
    return word


def lanes(value, nbytes):
    """A native value (byte 0 most significant) in AXI4-Stream byte lanes, or back."""
    return int.from_bytes(value.to_bytes(nbytes, "big"), "little")


#: The clock cycle (10 ns) of each result's transfer.
CLOCK = {"results": []}


def cycle():
    return get_sim_time("ns") // 10


async def send(dut, stream, value):
    """Offer ``value`` (native: the payload; axis: {port suffix: value}) on ``stream``
    until it is taken; the edge it was taken on."""
    if AXIS:
        for suffix, v in value.items():
            getattr(dut, f"{stream}_{suffix}").value = v
        valid, ready = getattr(dut, f"{stream}_tvalid"), getattr(dut, f"{stream}_tready")
    else:
        getattr(dut, f"{stream}__payload").value = value
        valid, ready = getattr(dut, f"{stream}__valid"), getattr(dut, f"{stream}__ready")
    valid.value = 1
    while True:
        await RisingEdge(clock(dut))
        if ready.value == 1:
            break
    valid.value = 0
    return cycle()


def clock(dut):
    return dut.aclk if AXIS else dut.clk


async def start(dut):
    """Clock, reset, streams idle, results always taken."""
    cocotb.start_soon(Clock(clock(dut), 10, unit="ns").start())
    if AXIS:
        dut.s_axis_key_tvalid.value = dut.s_axis_tvalid.value = 0
        for name in NAMES & {"s_axis_key_tdata", "s_axis_key_tuser", "s_axis_tdata",
                             "s_axis_tuser", "s_axis_tid"}:
            getattr(dut, name).value = 0
        dut.m_axis_tready.value = 1
        dut.aresetn.value = 0
        await ClockCycles(dut.aclk, 3)
        dut.aresetn.value = 1
    else:
        dut.key__valid.value = dut.i__valid.value = 0
        dut.key__payload.value = dut.i__payload.value = 0
        dut.o__ready.value = 1
        dut.rst.value = 1
        await ClockCycles(dut.clk, 3)
        dut.rst.value = 0


async def send_key(dut, key):
    bits = 8 * len(key)
    value = int.from_bytes(key.ljust(32, b"\0"), "big")
    if AXIS:
        await send(dut, "s_axis_key", {"tdata": lanes(value, 32), "tuser": pack(
            "s_axis_key_tuser", key_bits=(bits - 128) // 64)})
    else:
        await send(dut, "key", pack("key__payload", key=value, key_bits=(bits - 128) // 64))


async def send_beat(dut, data=0, tag=0, **fields):
    """One beat of the message stream: ``data`` native (byte 0 most significant); the edge
    it was taken on."""
    if AXIS:
        value = {"tdata": lanes(data, 16), "tuser": pack("s_axis_tuser", **fields)}
        if "s_axis_tid" in NAMES:
            value["tid"] = tag
        return await send(dut, "s_axis", value)
    if "tag" in FIELDS["i__payload"]:
        fields["tag"] = tag
    return await send(dut, "i", pack("i__payload", data=data, **fields))


def unpack(word, port, name, width):
    return (word >> FIELDS[port][name]) & ((1 << width) - 1)


async def collect(dut, out):
    """Every result as (16 bytes, FIPS-197 order; auth_ok or 0)."""
    clk = clock(dut)
    while True:
        await RisingEdge(clk)
        if AXIS and dut.m_axis_tvalid.value == 1 and dut.m_axis_tready.value == 1:
            ok = int(dut.m_axis_tuser.value) if "m_axis_tuser" in NAMES else 0
            out.append((lanes(int(dut.m_axis_tdata.value), 16).to_bytes(16, "big"), ok))
            CLOCK["results"].append(cycle())
        elif not AXIS and dut.o__valid.value == 1 and dut.o__ready.value == 1:
            word = int(dut.o__payload.value)
            ok = unpack(word, "o__payload", "auth_ok", 1) if "auth_ok" in FIELDS[
                "o__payload"] else 0
            out.append((unpack(word, "o__payload", "data", 128).to_bytes(16, "big"), ok))
            CLOCK["results"].append(cycle())


def reference(key, mode, op, iv, blocks):
    m = {"ECB": modes.ECB(), "CBC": modes.CBC(iv), "CTR": modes.CTR(iv)}[mode]
    c = Cipher(algorithms.AES(key), m)
    f = c.encryptor() if op == 0 or mode == "CTR" else c.decryptor()
    return f.update(b"".join(blocks)) + f.finalize()


@cocotb.test()
async def ecb_cbc_ctr_messages(dut):
    rng = random.Random(5)
    await start(dut)
    out = []
    cocotb.start_soon(collect(dut, out))
    key = rng.randbytes(INFO["key_sizes"][-1] // 8)
    await send_key(dut, key)
    for mode, op in (("CBC", 0), ("CTR", 0), ("CBC", 1), ("ECB", 1)):
        iv = rng.randbytes(16)
        blocks = [rng.randbytes(16) for _ in range(3)]
        begin = len(out)
        await send_beat(dut, int.from_bytes(iv, "big"), first=1, mode=MODE[mode], op=op)
        for n, block in enumerate(blocks):
            await send_beat(dut, int.from_bytes(block, "big"), tag=n)
        for _ in range(10_000):
            if len(out) == begin + len(blocks):
                break
            await RisingEdge(clock(dut))
        got = b"".join(d for d, _ in out[begin:])
        assert got == reference(key, mode, op, iv, blocks), (mode, op)
    # One ECB block alone, its result always taken: exactly the latency the JSON declares.
    begin = len(out)
    await send_beat(dut, 0, first=1, mode=MODE["ECB"], op=0)
    taken = await send_beat(dut, int.from_bytes(rng.randbytes(16), "big"))
    while len(out) == begin:
        await RisingEdge(clock(dut))
    bits = str(INFO["key_sizes"][-1])
    assert CLOCK["results"][begin] - taken == INFO["latency"][bits], (taken, CLOCK["results"])

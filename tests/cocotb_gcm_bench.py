"""cocotb test of an exported mode engine with GCM (``aes-fpga export --design modes --ghash
VARIANT --interface native``), run by tests/test_export_cocotb.py in Icarus Verilog: one GCM
encryption (AAD and data with a short last block) and its decryption with a wrong tag, beat by
beat as the JSON's ``gcm.beats`` say, against ``cryptography``'s AESGCM."""

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotb_modes_bench import FIELDS, INFO, MODE, pack, send
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

WIDTH = {f["name"]: (f["lsb"], f["width"]) for p in INFO["ports"] if p["name"] == "o__payload"
         for f in p["fields"]}


def field(word, name):
    lsb, width = WIDTH[name]
    return (word >> lsb) & ((1 << width) - 1)


async def collect(dut, out):
    """Every ``o`` transfer as (data, auth_ok)."""
    while True:
        await RisingEdge(dut.clk)
        if dut.o__valid.value == 1 and dut.o__ready.value == 1:
            word = int(dut.o__payload.value)
            out.append((field(word, "data").to_bytes(16, "big"), field(word, "auth_ok")))


def beats(rng, op, nonce, aad, text, tag=None):
    """The ``i`` payloads of one GCM message; the bytes past ``nbytes`` random (ignored)."""
    out = [pack("i__payload", data=int.from_bytes(nonce, "big") << 32 | 1, first=1,
                mode=MODE["GCM"], op=op)]
    for is_aad, part in ((1, aad), (0, text)):
        for i in range(0, len(part), 16):
            chunk = part[i:i + 16]
            block = chunk + rng.randbytes(16 - len(chunk))
            out.append(pack("i__payload", data=int.from_bytes(block, "big"), aad=is_aad,
                            nbytes=len(chunk)))
    final = {"final": 1}
    if tag is not None:
        final.update(data=int.from_bytes(tag.ljust(16, b"\0"), "big"), nbytes=len(tag))
    out.append(pack("i__payload", **final))
    return out


async def run_message(dut, out, payloads, results):
    start = len(out)
    for word in payloads:
        await send(dut, "i", word)
    for _ in range(20_000):
        if len(out) == start + results:
            break
        await RisingEdge(dut.clk)
    return out[start:]


@cocotb.test()
async def gcm_encrypt_then_decrypt_with_a_wrong_tag(dut):
    rng = random.Random(11)
    assert {"aad", "final", "nbytes"} <= set(FIELDS["i__payload"])
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
    nonce, aad, text = rng.randbytes(12), rng.randbytes(20), rng.randbytes(37)
    sealed = AESGCM(key).encrypt(nonce, text, aad)
    ct, tag = sealed[:-16], sealed[-16:]
    blocks = -(-len(text) // 16)

    got = await run_message(dut, out, beats(rng, 0, nonce, aad, text), blocks + 1)
    padded = ct + bytes(-len(ct) % 16)
    assert b"".join(d for d, _ in got[:blocks]) == padded, "ciphertext"
    assert got[blocks][0] == tag, "tag"

    # The decryption gets the tag with one bit flipped: the plaintext, then auth_ok low.
    wrong = bytes([tag[0] ^ 0x01]) + tag[1:]
    got = await run_message(dut, out, beats(rng, 1, nonce, aad, ct, wrong), blocks + 1)
    assert b"".join(d for d, _ in got[:blocks]) == text + bytes(-len(text) % 16), "plaintext"
    assert [ok for _, ok in got] == [0] * (blocks + 1), "a wrong tag was accepted"

    # and with the right tag (12 of its bytes) auth_ok is high: the check can fail.
    got = await run_message(dut, out, beats(rng, 1, nonce, aad, ct, tag[:12]), blocks + 1)
    assert [ok for _, ok in got] == [0] * blocks + [1], "the right tag was refused"

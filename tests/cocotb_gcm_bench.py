"""cocotb test of an exported mode engine with GCM (``aes-fpga export --design modes --ghash
VARIANT``, native or AXI4-Stream ports), run by tests/test_export_cocotb.py in Icarus Verilog (with
the helpers of tests/cocotb_modes_bench.py): one GCM encryption (AAD and data with a short last
block) and its decryption with a wrong tag, beat by beat as the JSON's ``gcm.beats`` say, against
``cryptography``'s AESGCM."""

import random

import cocotb
from cocotb.triggers import RisingEdge
from cocotb_modes_bench import FIELDS, INFO, MODE, clock, collect, send_beat, send_key, start
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

REQUEST = "s_axis_tuser" if INFO["interface"] == "axis" else "i__payload"


def beats(rng, op, nonce, aad, text, tag=None):
    """The beats of one GCM message as ``send_beat`` keywords; the bytes past ``nbytes``
    random (ignored)."""
    out = [{"data": int.from_bytes(nonce, "big") << 32 | 1, "first": 1, "mode": MODE["GCM"],
            "op": op}]
    for is_aad, part in ((1, aad), (0, text)):
        for i in range(0, len(part), 16):
            chunk = part[i:i + 16]
            block = chunk + rng.randbytes(16 - len(chunk))
            out.append({"data": int.from_bytes(block, "big"), "aad": is_aad,
                        "nbytes": len(chunk)})
    final = {"final": 1}
    if tag is not None:
        final.update(data=int.from_bytes(tag.ljust(16, b"\0"), "big"), nbytes=len(tag))
    out.append(final)
    return out


async def run_message(dut, out, message, results):
    begin = len(out)
    for fields in message:
        await send_beat(dut, **fields)
    for _ in range(20_000):
        if len(out) == begin + results:
            break
        await RisingEdge(clock(dut))
    return out[begin:]


@cocotb.test()
async def gcm_encrypt_then_decrypt_with_a_wrong_tag(dut):
    rng = random.Random(11)
    assert {"aad", "final", "nbytes"} <= set(FIELDS[REQUEST])
    await start(dut)
    out = []
    cocotb.start_soon(collect(dut, out))
    key = rng.randbytes(INFO["key_sizes"][-1] // 8)
    await send_key(dut, key)
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

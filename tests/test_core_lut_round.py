# amaranth: UnusedElaboratable=no
"""LUT-ROUND beyond what every core promises (test_core_conformance.py): the encryption-only
and AES-128-only builds, the key load time, and the resource targets."""

import random

import pytest
from amaranth.sim import Simulator

from aes_fpga import model
from aes_fpga.cores.lut_round import LutRound, key_load_cycles
from aes_fpga.params import KeySize, Op
from aes_fpga.sim.traffic import run_core

# Yosys synth_xilinx (depth-first LUT mapping) on the default part (xc7a35t), one key slot:
# (decrypt, key_sizes) -> (LUTs at most, LUT levels at most). The targets are 1,200 LUTs
# encryption-only and 2,000 with decryption, key schedule included (the paper's configuration is
# AES-128 encryption); every build meets its target.
ALL = (128, 192, 256)
LUT_LIMITS = {
    (False, (128,)): (1200, 3),     # 1116 measured
    (False, ALL): (1200, 3),        # 1199 measured
    (True, (128,)): (2000, 6),      # 1867 measured
    (True, ALL): (2000, 6),         # 1949 measured
}


def test_encrypt_only_build():
    """Without the decryption path the core says so (``ops``) and encrypts FIPS-197 C.1-C.3
    with every key length, at the same latency."""
    core = LutRound(decrypt=False)
    assert core.ops == (Op.ENCRYPT,)
    items = []
    for slot, bits in enumerate((128, 192, 256)):
        key, pt, _ = model.FIPS197_EXAMPLES[bits]
        items += [{"key": {"key": int.from_bytes(key.ljust(32, b"\0"), "big"),
                           "key_bits": KeySize.from_bits(bits), "slot": 0}},
                  {"block": model.to_int(pt), "op": Op.ENCRYPT, "slot": 0, "tag": slot}]
    acc, res = run_core(core, requests=items)
    assert [b for _, b, _ in res] == [model.to_int(model.FIPS197_EXAMPLES[b][2])
                                      for b in (128, 192, 256)]
    assert [c - a for (a, _), (c, _, _) in zip(acc, res, strict=True)] == [11, 13, 15]


def test_rejects_bad_parameters():
    with pytest.raises(ValueError, match="key_sizes"):
        LutRound(key_sizes=(64,))
    with pytest.raises(ValueError, match="decrypt"):
        LutRound(decrypt=1)


@pytest.mark.parametrize("decrypt", [False, True], ids=["encrypt-only", "encrypt-decrypt"])
def test_aes128_only_build(decrypt):
    """With one key length: slot 1 still holds the all-zero key, then both slots are loaded
    (twice) and used in random order, each op of the build."""
    rng = random.Random(decrypt)
    ops = (Op.ENCRYPT, Op.DECRYPT) if decrypt else (Op.ENCRYPT,)
    fn = {Op.ENCRYPT: model.encrypt_block, Op.DECRYPT: model.decrypt_block}
    keys = [bytes(16), bytes(16)]
    items, expected = [], []

    def request(slot, op, tag):
        block = rng.getrandbits(128)
        items.append({"block": block, "op": op, "slot": slot, "tag": tag})
        expected.append(model.to_int(fn[op](keys[slot], block.to_bytes(16, "big"))))

    for op in ops:
        request(1, op, 0)
    for _ in range(2):
        for slot in range(2):
            keys[slot] = rng.randbytes(16)
            items.append({"key": {"key": int.from_bytes(keys[slot].ljust(32, b"\0"), "big"),
                                  "key_bits": KeySize.AES128, "slot": slot}})
        for tag in range(4):
            request(rng.randrange(2), rng.choice(ops), tag)
    acc, res = run_core(LutRound(key_sizes=(128,), key_slots=2, decrypt=decrypt),
                        requests=items)
    assert [b for _, b, _ in res] == expected
    assert {c - a for (a, _), (c, _, _) in zip(acc, res, strict=True)} == {11}


@pytest.mark.parametrize("decrypt", [False, True], ids=["encrypt-only", "encrypt-decrypt"])
def test_key_load_cycles(decrypt):
    """A key transfer offered to an idle core completes after key_load_cycles() cycles: one
    transfer of each key length in turn, each offered in the cycle after the last completed."""
    dut = LutRound(decrypt=decrypt)
    seen = []

    async def bench(ctx):
        ctx.set(dut.key.payload.key, 0x2B7E << 240)
        ctx.set(dut.key.valid, 1)
        for bits in (128, 192, 256):
            ctx.set(dut.key.payload.key_bits, KeySize.from_bits(bits))
            for cycle in range(1, 300):
                if ctx.get(dut.key.ready):
                    seen.append(cycle)
                    break
                await ctx.tick()
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert seen == [key_load_cycles(bits, decrypt) for bits in (128, 192, 256)]


@pytest.mark.slow
@pytest.mark.parametrize(("decrypt", "key_sizes"), list(LUT_LIMITS),
                         ids=[f"{'encrypt-decrypt' if d else 'encrypt-only'}-"
                              f"{'all' if len(k) > 1 else k[0]}" for d, k in LUT_LIMITS])
def test_lut_targets(decrypt, key_sizes, tmp_path):
    """No block RAM, no DSP, and the LUT count and LUT levels of :data:`LUT_LIMITS`."""
    from aes_fpga.flow.synth import synthesize
    from aes_fpga.flow.timing import analyse_netlist
    result = synthesize(LutRound(decrypt=decrypt, key_sizes=key_sizes), workdir=tmp_path)
    u = result.total
    luts, levels = LUT_LIMITS[decrypt, key_sizes]
    assert u.dsp == 0 and u.ramb18 == 0 and u.ramb36 == 0
    assert u.lut_total <= luts, u.as_dict()
    assert analyse_netlist(result.netlist_json, worst=1).worst_levels <= levels

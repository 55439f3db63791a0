# amaranth: UnusedElaboratable=no
"""LUT-ROUND beyond what every core promises (test_core_conformance.py): the encryption-only
build, and the resource targets of both builds."""

import pytest

from aes_fpga import model
from aes_fpga.cores.lut_round import LutRound
from aes_fpga.params import KeySize, Op
from aes_fpga.sim.traffic import run_core

# Yosys synth_xilinx on the default part (xc7a35t), one key slot, all three key lengths.
LUT_LIMITS = {False: 1200, True: 2000}   # decrypt -> LUTs at most


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


@pytest.mark.slow
@pytest.mark.parametrize("decrypt", [False, True], ids=["encrypt-only", "encrypt-decrypt"])
def test_lut_targets(decrypt, tmp_path):
    """No block RAM, no DSP, and at most 1,200 LUTs encrypt-only / 2,000 LUTs with decryption,
    key schedule included."""
    from aes_fpga.flow.synth import synthesize
    u = synthesize(LutRound(decrypt=decrypt), workdir=tmp_path).total
    assert u.dsp == 0 and u.ramb18 == 0 and u.ramb36 == 0
    assert u.lut_total <= LUT_LIMITS[decrypt], u.as_dict()

"""The GCM addition's area budget: on xc7a35t, the mode engine around DRAB-LOCUS (AES-128) with
the ``bram`` GHASH costs at most 600 LUT (logic and memory) more than without GCM — the figure
of the README's ``gcm-area`` table, made by the same command. Two syntheses of the whole engine:
``-m slow``."""

import json

import pytest

from aes_fpga.cli import main

SYNTH = ["synth", "--design", "modes", "--core", "drab-locus", "--key-sizes", "128", "--json"]

#: The budget of the GCM addition in the BRAM/DSP variant (all LUTs, LUT RAM included).
GCM_LUT_BUDGET = 600


def synth(capsys, *options):
    assert main([*SYNTH, *options]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.slow
def test_bram_ghash_gcm_adds_at_most_600_lut(capsys):
    base = synth(capsys)
    gcm = synth(capsys, "--ghash", "bram")
    adds = gcm["lut_total"] - base["lut_total"]
    assert 0 < adds <= GCM_LUT_BUDGET, adds
    # Its block RAM and DSP slices, not LUTs, carry the GHASH; the depth rule holds.
    ghash = gcm["modules"]["GHASH"]
    assert ghash["bram36_equiv"] >= 8 and ghash["dsp"] >= 8
    assert gcm["timing"]["worst_levels"] <= 3

"""`aes-fpga bench --mode`: a core in the mode engine, one message, checked against
cryptography; the GCM figure the README quotes comes from the same command."""

import json

import pytest

from aes_fpga.cli import main
from aes_fpga.cores import make_core
from aes_fpga.cores.drab_locus import LOOP_STAGES
from aes_fpga.modes import ModeEngine
from aes_fpga.params import Mode
from aes_fpga.sim.cxxsim import mark_used
from aes_fpga.sim.modebench import bench_mode
from aes_fpga.sim.traffic import WrongResult


def bench_json(capsys, *args):
    assert main(["bench", "--core", "drab-locus", "--key-sizes", "128", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_gcm_keeps_ctr_pace(capsys):
    """48 blocks: the engine takes one block per 10 cycles in both modes (DRAB-LOCUS), so
    GCM's message takes CTR's cycles plus at most one turn of the core's ring (E_K(J0) takes
    one of its 12 places as the message starts: 120 cycles) and the output register; its tag
    follows within the engine's stated tag latency. The bounds of
    tests/test_gcm_engine.py::test_rate_and_tag_latency hold too (at least 0.095 blocks per
    cycle from the first data result to the last; the tag at least a GHASH block and
    latency after the last data result, at most ``tag_latency`` plus the ring's stages), so
    that test runs under -m slow."""
    ctr = bench_json(capsys, "--mode", "ctr", "--blocks", "48")
    gcm = bench_json(capsys, "--mode", "gcm", "--blocks", "48")
    assert ctr["verified"] == gcm["verified"] == "cryptography"
    assert ctr["blocks"] == gcm["blocks"] == 48
    assert ctr["cycles"] <= gcm["cycles"] <= ctr["cycles"] + 120 + 10
    assert gcm["ghash"] == "bram" and gcm["ghash_cycles_per_block"] <= 10
    assert 0 < gcm["tag_latency_cycles"] <= 60
    assert gcm["gbps_at_mhz"] == round(gcm["blocks_per_cycle"] * 12.8, 4)
    # ("cycles" runs from the first beat to the last data result, inclusive)
    assert (48 - 1) / (gcm["cycles"] - 1 - gcm["first_result_cycles"]) >= 0.095
    engine = ModeEngine(make_core("drab-locus", key_sizes=(128,)), gcm="bram")
    mark_used(engine)                   # (never elaborated here)
    gh = engine.ghash
    assert gcm["ghash_cycles_per_block"] == gh.cycles_per_block
    assert gh.cycles_per_block + gh.latency + 1 <= gcm["tag_latency_cycles"] \
        <= engine.tag_latency + LOOP_STAGES


@pytest.mark.slow
def test_cbc_encryption_is_one_block_per_latency(capsys):
    """(The default run has CBC encryption's pace in tests/test_modes.py::test_rate and the
    bench's ``--mode`` in test_gcm_keeps_ctr_pace.)"""
    r = bench_json(capsys, "--mode", "cbc", "--blocks", "4")
    # every block waits for the one before it: the core's latency (115) apart
    assert r["cycles"] >= 4 * 115


def test_wrong_results_are_caught(monkeypatch):
    """The check is real: a model that disagrees makes the bench fail."""
    import aes_fpga.sim.modebench as mb
    real = mb._expected if hasattr(mb, "_expected") else None
    assert real is not None
    monkeypatch.setattr(mb, "_expected", lambda *a: [x ^ 1 for x in real(*a)])
    with pytest.raises(WrongResult, match="CTR result 0 differs from cryptography's"):
        bench_mode(make_core("drab-locus", key_sizes=(128,)), Mode.CTR, blocks=2)


@pytest.mark.parametrize(("args", "message"), [
    (["--design", "uart", "--mode", "cbc"],
     "--mode: the uart design runs ctr or gcm messages; cbc is for --design core"),
    (["--design", "ethernet", "--mode", "gcm", "--ghash", "lut"],
     "--ghash: the simulated ethernet appliance has the bram GHASH; --ghash lut is for"),
    (["--design", "ethernet", "--mode", "gcm", "--device-key-file", "device.key"],
     "--mode: inside a session the bench runs CTR records; gcm is for an open device"),
    (["--design", "ethernet", "--mode", "gcm", "--size", "1440"],
     "size: 1440 is out of range for a GCM bench; allowed more than one 1440-byte chunk"),
    (["--core", "drab-locus-datapath", "--mode", "ctr"], "takes round keys, not a key"),
    (["--core", "drab-locus", "--mode", "ctr", "--blocks", "1"],
     "blocks: 1 is out of range for --mode"),
])
def test_refusals_name_the_option(capsys, args, message):
    assert main(["bench", *args]) == 2
    assert message in capsys.readouterr().err

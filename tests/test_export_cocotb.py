"""``aes-fpga export`` as a Verilog user meets it: the exported file, compiled by Icarus Verilog
through cocotb's Python runner and driven by cocotbext-axi (tests/cocotb_axis_bench.py: FIPS-197,
the latency and blocks per cycle the export declares, random traffic with tvalid gaps and tready
back-pressure and a key reload, against ``cryptography``).

The mode engine's export (``--design modes``, its own ports or AXI4-Stream) runs ECB, CBC and
CTR messages (tests/cocotb_modes_bench.py); with GCM (``--ghash``) also a GCM encryption and
decryptions with a wrong and a right tag (tests/cocotb_gcm_bench.py).

The default run takes one small core (compact8, AES-128, portable); every core that has a key
stream, with all its key sizes and two slots, and the Xilinx and Lattice exports (with the
vendors' cell models the netlist tests use) are ``slow``.
"""

import json
import shutil
from pathlib import Path

import pytest

from aes_fpga.cli import main
from aes_fpga.cores import CORES

pytest.importorskip("cocotb_tools.runner")
pytestmark = pytest.mark.skipif(shutil.which("iverilog") is None,
                                reason="Icarus Verilog (iverilog) is not installed")

HERE = Path(__file__).resolve().parent


def export(tmp_path, core, *args):
    """Run ``aes-fpga export``; the paths of the Verilog file and its JSON."""
    out = tmp_path / "export"
    assert main(["export", "--core", core, *args, "-o", str(out)]) == 0
    (v,) = out.glob("*.v")
    return v, v.with_suffix(".json")


def run_cocotb(tmp_path, verilog, info_path, *, extra_sources=(), seed=1, blocks=8,
               bench="cocotb_axis_bench", tests=3):
    """Build ``verilog`` with Icarus Verilog and run the cocotb ``bench`` on it; fails unless
    all its ``tests`` pass."""
    from cocotb_tools.runner import get_results, get_runner
    top = json.loads(info_path.read_text())["top"]
    runner = get_runner("icarus")
    build = tmp_path / "sim"
    runner.build(sources=[verilog, *extra_sources], hdl_toplevel=top, build_dir=build,
                 timescale=("1ns", "1ps"), always=True)
    # The runner hands this interpreter's sys.path to the simulator's Python, which then finds
    # the bench module beside this file, as pytest does.
    env = {"AES_EXPORT_JSON": str(info_path), "AES_EXPORT_SEED": str(seed),
           "AES_EXPORT_BLOCKS": str(blocks)}
    results = runner.test(hdl_toplevel=top, test_module=bench, test_dir=build,
                          build_dir=build, extra_env=env, results_xml=str(build / "results.xml"))
    total, failed = get_results(results)
    assert total == tests and failed == 0, f"{failed} of {total} cocotb tests failed ({results})"


def test_compact8_aes128_through_axi4_stream(tmp_path):
    verilog, info = export(tmp_path, "compact8", "--key-sizes", "128")
    run_cocotb(tmp_path, verilog, info)


@pytest.mark.parametrize("interface", ["native", pytest.param("axis", marks=pytest.mark.slow)])
def test_mode_engine_export_in_ecb_cbc_ctr(tmp_path, interface):
    verilog, info = export(tmp_path, "compact8", "--key-sizes", "128", "--design", "modes",
                           "--interface", interface)
    run_cocotb(tmp_path, verilog, info, bench="cocotb_modes_bench", tests=1)


# The default run: GCM behind AXI4-Stream (its cocotb benches drive the engine's fields
# through tuser); the engine's own ports in test_mode_engine_export_in_ecb_cbc_ctr.
@pytest.mark.parametrize(("interface", "ghash"), [
    pytest.param("native", ["bram"], marks=pytest.mark.slow), ("axis", ["bram"]),
    pytest.param("native", ["lut", "--ghash-digit", "16"], marks=pytest.mark.slow),
    pytest.param("axis", ["lut", "--ghash-digit", "4"], marks=pytest.mark.slow),
])
def test_mode_engine_export_with_gcm(tmp_path, interface, ghash):
    """GCM on the engine's own ports and behind AXI4-Stream ports. The bram GHASH's tables
    of constants are computed by ``always @*`` blocks whose inputs never change: they need the
    export's time-0 event (:func:`aes_fpga.export.verilog.time_zero_events`) in Icarus
    Verilog's SystemVerilog mode, which cocotb's runner uses."""
    verilog, info = export(tmp_path, "compact8", "--key-sizes", "128", "--design", "modes",
                           "--interface", interface, "--ghash", *ghash)
    run_cocotb(tmp_path, verilog, info, bench=["cocotb_modes_bench", "cocotb_gcm_bench"],
               tests=2)


def _keyed_cores():
    from aes_fpga.cores import make_core
    from aes_fpga.sim.cxxsim import mark_used
    names = []
    for name in CORES:
        core = make_core(name)
        mark_used(core)
        if hasattr(core, "key"):
            names.append(name)
    return names


@pytest.mark.slow
@pytest.mark.parametrize("name", _keyed_cores())
def test_every_core_every_key_size(tmp_path, name):
    verilog, info = export(tmp_path, name, "--key-slots", "2")
    run_cocotb(tmp_path, verilog, info, seed=7, blocks=24)


@pytest.mark.slow
def test_encrypt_only_without_tags(tmp_path):
    """lut-round without decryption and without a tag: no s_axis_tid/m_axis_tid ports."""
    verilog, info = export(tmp_path, "lut-round", "--key-sizes", "128,256", "--tag-width", "0",
                           "--option", "decrypt=False")
    names = {p["name"] for p in json.loads(info.read_text())["ports"]}
    assert "s_axis_tid" not in names and "m_axis_tid" not in names
    run_cocotb(tmp_path, verilog, info)


@pytest.mark.slow
@pytest.mark.parametrize(("vendor", "family"), [("xilinx", "xc7"), ("lattice", "ecp5")])
def test_vendor_export_with_cell_models(tmp_path, vendor, family):
    """drab-locus (block RAM and DSP48E1 on Xilinx, DP16KD on ECP5) with the cell models."""
    from aes_fpga.flow.postsynth import cell_models
    verilog, info = export(tmp_path, "drab-locus", "--key-sizes", "128", "--vendor", vendor)
    models = tmp_path / "cells.v"
    models.write_text(cell_models(family))
    run_cocotb(tmp_path, verilog, info, extra_sources=[models])

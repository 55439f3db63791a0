"""The synthesis result cache: a design synthesized once comes back without running Yosys, with
the same statistics and netlist; a changed design, part or script, a damaged entry, or the cache
switched off, runs Yosys."""

# amaranth: UnusedElaboratable=no

import json
import shutil

import pytest

import aes_fpga.flow.synth
from aes_fpga.flow.synth import synth_cache_dir, synthesize
from aes_fpga.primitives import XorLane


class YosysCalled(AssertionError):
    pass


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    """A cache holding one real synthesis (XorLane(8), flattened) and that first result."""
    root = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AES_FPGA_CACHE", str(root))
        mp.delenv("AES_FPGA_NO_SYNTH_CACHE", raising=False)
        first = synthesize(XorLane(8), workdir=root.parent / "first")
    return root, first


@pytest.fixture
def cache(filled, tmp_path, monkeypatch):
    """A copy of the filled cache, in use; Yosys runs from here on raise :class:`YosysCalled`
    (the calls are listed in ``cache.calls``)."""
    root = tmp_path / "cache"
    shutil.copytree(filled[0], root)
    monkeypatch.setenv("AES_FPGA_CACHE", str(root))
    monkeypatch.delenv("AES_FPGA_NO_SYNTH_CACHE", raising=False)
    calls = []

    def run_yosys(args, *, cwd, log_name="yosys.log"):
        calls.append(cwd)
        raise YosysCalled(f"Yosys ran in {cwd}")

    monkeypatch.setattr(aes_fpga.flow.synth, "run_yosys", run_yosys)
    return calls


def test_cache_dir_beside_the_simulator_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AES_FPGA_CACHE", str(tmp_path / "own"))
    assert synth_cache_dir() == tmp_path / "own" / "synth"
    monkeypatch.delenv("AES_FPGA_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert synth_cache_dir() == tmp_path / "xdg" / "aes-fpga" / "synth"


def test_first_synthesis_runs_yosys_and_fills_the_cache(filled):
    root, first = filled
    assert not first.from_cache
    assert "Yosys not run" not in (first.workdir / "yosys.log").read_text()
    assert (first.total.dsp, first.total.lut, first.total.ff) == (1, 0, 0)
    assert len(list((root / "synth").glob("*.files.json"))) == 1     # one entry
    assert len(list((root / "synth").glob("*.v"))) == 1


def test_second_synthesis_comes_from_the_cache(filled, cache, tmp_path):
    first = filled[1]
    second = synthesize(XorLane(8), workdir=tmp_path / "second")
    assert cache == [] and second.from_cache
    assert second.total == first.total and second.part == first.part
    assert second.modules == first.modules == {}
    assert second.netlist.read_text() == first.netlist.read_text()
    assert "DSP48E1" in second.netlist.read_text()
    assert (json.loads((second.workdir / "stat.json").read_text())
            == json.loads((first.workdir / "stat.json").read_text()))
    assert "Yosys not run" in (second.workdir / "yosys.log").read_text()


@pytest.mark.parametrize(("make", "kwargs"), [
    (lambda: XorLane(9), {}),
    (lambda: XorLane(8, a_regs=2), {}),
    (lambda: XorLane(8), {"part": "xc7a100tcsg324-1"}),
    (lambda: XorLane(8), {"hierarchy": True}),
    (lambda: XorLane(8), {"name": "lane"}),
], ids=["wider", "deeper", "other-part", "hierarchy", "other-top-name"])
def test_changed_design_part_or_script_misses(cache, tmp_path, make, kwargs):
    with pytest.raises(YosysCalled):
        synthesize(make(), workdir=tmp_path / "miss", **kwargs)
    assert len(cache) == 1


def test_damaged_entry_misses(cache, tmp_path):
    (netlist,) = synth_cache_dir().glob("*.v")
    netlist.write_text(netlist.read_text()[:100])
    with pytest.raises(YosysCalled):
        synthesize(XorLane(8), workdir=tmp_path / "damaged")


@pytest.mark.parametrize("how", ["env", "argument"])
def test_cache_can_be_bypassed(cache, tmp_path, monkeypatch, how):
    assert synthesize(XorLane(8), workdir=tmp_path / "hit").from_cache
    kwargs = {}
    if how == "env":
        monkeypatch.setenv("AES_FPGA_NO_SYNTH_CACHE", "1")
    else:
        kwargs["cache"] = False
    with pytest.raises(YosysCalled):
        synthesize(XorLane(8), workdir=tmp_path / "bypass", **kwargs)
    assert len(cache) == 1

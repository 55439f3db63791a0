"""`aes-fpga compare`: every core side by side, its figures taken from the cores' own methods
and the synthesis flow, as a table, JSON and a picture."""

import json
import sys
from fractions import Fraction

import pytest

from aes_fpga.cli import main
from aes_fpga.cores import CORES, make_core
from aes_fpga.flow.compare import (
    COMPARE_OPTIONS,
    XC7_PARTS,
    fitting_part,
    keyed_cores,
    overflows,
    plot,
    plot_figure,
)
from aes_fpga.flow.synth import DEFAULT_PART, Utilization
from aes_fpga.sim.cxxsim import mark_used

# The configuration `aes-fpga timing --core drab-locus --key-sizes 128` synthesizes too (tests/
# test_timing.py): the two tests share one synthesis through the cache.
FAST = "drab-locus"


def _compare_json(capsys, *args):
    assert main(["compare", "--cores", FAST, "--json", *args]) == 0
    out = capsys.readouterr()
    return json.loads(out.out), out.err


def test_json_matches_the_cores_own_figures(capsys):
    """Latency and blocks per cycle are the core's own; the resources are synthesize()'s; the
    throughput is blocks/cycle x 128 bits at the stated clock; progress went to stderr."""
    from aes_fpga.flow.synth import synthesize

    report, err = _compare_json(capsys, "--clock-mhz", "200")
    assert report["part"] == DEFAULT_PART and report["key_bits"] == 128
    assert report["options"] == {"key_sizes": [128], "key_slots": 1, "tag_width": 8}
    assert report["route"] is None and report["clock_mhz"] == 200
    (row,) = report["cores"]
    core = make_core(FAST, **COMPARE_OPTIONS)
    u = synthesize(core, DEFAULT_PART).total
    assert row["core"] == FAST and row["part"] == DEFAULT_PART and row["part_note"] is None
    assert row["latency_cycles"] == core.latency(128)
    assert Fraction(row["blocks_per_cycle_fraction"]) == core.blocks_per_cycle(128)
    assert row["blocks_per_cycle"] == pytest.approx(float(core.blocks_per_cycle(128)))
    for key in ("lut", "lut_as_memory", "lut_total", "ff", "ramb18", "ramb36", "dsp"):
        assert row[key] == getattr(u, key), key
    assert row["bram36"] == u.bram36_equiv
    assert row["lut_levels"] >= 1 and row["cell_delay_ns"] > 0
    assert row["fmax_mhz"] is None and row["gbps_clock"] == "assumed clock"
    assert row["gbps_clock_mhz"] == 200
    assert row["gbps"] == pytest.approx(float(core.blocks_per_cycle(128)) * 128 * 200 / 1000)
    assert row["mbps_per_lut"] == pytest.approx(row["gbps"] * 1000 / u.lut_total)
    assert row["gcm"] is True
    assert report["not_compared"] == [{"core": "drab-locus-datapath", "gcm": False}]
    assert f"[1/2] {FAST}: synth_xilinx {DEFAULT_PART}" in err
    assert f"[2/2] {FAST}: LUT levels" in err


def test_table_names_the_configuration_and_the_clock(capsys):
    assert main(["compare", "--cores", FAST]) == 0
    out = capsys.readouterr().out
    assert "key_sizes=128, key_slots=1, tag_width=8" in out
    assert "* at an assumed 100 MHz" in out
    line = next(line for line in out.splitlines() if line.startswith(FAST))
    assert line.split()[6:8] == ["115", "1/10"]      # latency, blocks/cycle
    assert out.splitlines()[1].split()[-1] == "GCM" and line.split()[-1] == "yes"
    assert "not compared: drab-locus-datapath (no key port: it takes round keys; GCM: no)" in out


def test_gcm_is_offered_where_the_mode_engine_takes_the_core(monkeypatch):
    """The GCM column is the mode engine's own answer (every core with a key stream), not a
    list: the engine refuses the round-key core, and a changed answer changes the column."""
    from aes_fpga.flow import compare
    from aes_fpga.modes import ModeEngine

    assert [n for n in CORES if not compare.gcm_offered(n)] == ["drab-locus-datapath"]
    core = make_core("drab-locus-datapath")
    with pytest.raises(ValueError, match="no key stream"):
        ModeEngine(core)
    monkeypatch.setattr(ModeEngine, "accepts", staticmethod(lambda core: False))
    assert not compare.gcm_offered(FAST)


def test_plot_is_written(tmp_path, capsys):
    """The command writes the picture; the same report drawn as PNG (one comparison for
    both formats)."""
    pytest.importorskip("matplotlib")
    svg, png = tmp_path / "cores.svg", tmp_path / "cores.png"
    report, err = _compare_json(capsys, "--plot", str(svg))
    assert svg.stat().st_size > 1000
    assert f"picture written to {svg}" in err
    text = svg.read_text()
    assert FAST in text and "assumed 100 MHz" in text
    assert plot(report, png) == png
    assert png.stat().st_size > 1000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_names_the_extra(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)     # import matplotlib fails
    assert main(["compare", "--cores", FAST, "--plot", str(tmp_path / "x.svg")]) == 2
    assert "pip install aes-fpga[plot]" in capsys.readouterr().err
    with pytest.raises(ImportError, match=r"aes-fpga\[plot\]"):
        plot({"cores": []}, tmp_path / "x.svg")


@pytest.mark.parametrize("args, named", [
    (["--cores", "drab-locus-datapath"], "'drab-locus-datapath' is not a keyed core"),
    (["--cores", "nope,compact8"], "'nope' is not a keyed core"),
    (["--cores", ","], "none given"),
    (["--cores", "compact8", "--route", "drab-locus"],
     "route: 'drab-locus' not among the cores compared (compact8)"),
    (["--plot", "cores.pdf"], "--plot: 'cores.pdf' has no known picture suffix"),
    (["--plot", "/nonexistent/dir/cores.svg"], "--plot: cannot write"),
])
def test_bad_options_are_named_before_any_synthesis(args, named, capsys, monkeypatch):
    import aes_fpga.flow.synth as synth
    if "--plot" in args:
        pytest.importorskip("matplotlib")

    def refuse(*a, **k):
        raise AssertionError("synthesized despite a bad option")
    monkeypatch.setattr(synth, "synthesize", refuse)
    assert main(["compare", *args]) == 2
    assert named in capsys.readouterr().err


@pytest.mark.parametrize("args, option", [
    (["--clock-mhz", "0"], "--clock-mhz"), (["--seed", "-1"], "--seed"),
    (["--route-mhz", "nan"], "--route-mhz"), (["--part", "xc9foo"], "part: 'xc9foo'"),
])
def test_bad_values_are_refused_by_the_parser(args, option, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["compare", *args])
    assert exc.value.code == 2
    assert option in capsys.readouterr().err


def test_keyed_cores_are_the_table_less_the_key_less():
    keyed = keyed_cores()
    assert "drab-locus-datapath" not in keyed
    assert keyed == [n for n in CORES if n != "drab-locus-datapath"]
    core = make_core("drab-locus-datapath")
    mark_used(core)
    assert "key" not in core.signature.members


def test_a_core_too_big_for_the_part_gets_the_smallest_that_fits():
    small = Utilization(lut=900, ff=800, ramb36=12, ramb18=8, dsp=18)
    assert fitting_part(small, DEFAULT_PART) == (DEFAULT_PART, None)
    # The fully unrolled T-table core's AES-128 build: 80 RAMB36, 160 DSP48E1.
    unrolled = Utilization(lut=1267, lut_as_memory=1380, ff=3431, ramb36=80, dsp=160)
    assert overflows(unrolled, XC7_PARTS[0]) == ["BRAM36 80 > 50", "DSP 160 > 90"]
    part, note = fitting_part(unrolled, DEFAULT_PART)
    assert part == "xc7a75tfgg484-1"
    assert "larger part than xc7a35t" in note and "BRAM36 80 > 50" in note
    # The Zynq ladder is climbed for a Zynq part.
    assert fitting_part(unrolled, "xc7z010clg400-1")[0] == "xc7z020clg400-1"
    part, note = fitting_part(unrolled, "xc7k325tffg900-2")
    assert part == "xc7k325tffg900-2" and "not checked" in note
    with pytest.raises(ValueError, match="no xc7a part"):
        fitting_part(Utilization(ramb36=400), DEFAULT_PART)


@pytest.mark.slow
def test_every_core(capsys):
    """All keyed cores (a few minutes with an empty synthesis cache): the unrolled T-table core
    is moved to a larger part, and the rest fit the default part."""
    assert main(["compare", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    rows = {r["core"]: r for r in report["cores"]}
    assert list(rows) == keyed_cores()
    for name, row in rows.items():
        core = make_core(name, **COMPARE_OPTIONS)
        mark_used(core)
        assert row["latency_cycles"] == core.latency(128)
        assert Fraction(row["blocks_per_cycle_fraction"]) == core.blocks_per_cycle(128)
        if name != "ttable-unrolled":
            assert row["part"] == DEFAULT_PART, name
    assert rows["ttable-unrolled"]["part"] != DEFAULT_PART
    assert "BRAM36" in rows["ttable-unrolled"]["part_note"]


def test_plot_labels_do_not_overlap_and_papers_are_drawn():
    """Crowded points (two cores almost on one spot, as ttable-round and lut-round were): no
    label overlaps another label, and each core whose paper gives LUTs and Gbit/s has its
    paper's hollow point, named with its device in the legend."""
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from aes_fpga.flow.compare import PAPER_FIGURES
    cores = [("drab-locus", 600, 16, 18, 2.2), ("ttable-round", 1040, 12, 16, 1.3),
             ("ttable-basic", 1050, 3, 4, 1.25), ("lut-round", 1100, 0, 0, 1.35),
             ("compact8", 320, 1, 0, 0.07)]
    report = {"part": DEFAULT_PART, "key_bits": 128, "clock_mhz": 100,
              "cores": [{"core": c, "lut_total": n, "bram36": b, "dsp": d, "gbps": g,
                         "gbps_clock": "assumed clock"} for c, n, b, d, g in cores]}
    fig, labels = plot_figure(report)
    renderer = fig.canvas.get_renderer()
    boxes = [label.get_window_extent(renderer) for label in labels]
    assert len(boxes) == len(cores)
    for a in range(len(boxes)):
        for b in range(a):
            assert not boxes[a].overlaps(boxes[b]), (labels[a].get_text(), labels[b].get_text())
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    drawn = [c for c, *_ in cores if PAPER_FIGURES[c]["lut"] is not None]
    assert legend == [f"{c}'s paper: {PAPER_FIGURES[c]['device']}" for c in drawn]
    assert "compact8" not in drawn      # its paper counts slices, not LUTs
    plt.close(fig)

"""Synthesis keeps the entropy source's ring oscillators (7-series and ECP5): every ring is in
the netlist as a closed loop of its inverting LUTs, of its length; and the whole source's area.
"""

import json

import pytest

from aes_fpga.entropy import EntropySource, NoiseSource
from aes_fpga.entropy.noise import DEFAULT_LENGTHS
from aes_fpga.flow.synth import synthesize
from aes_fpga.flow.timing import analyse_netlist
from aes_fpga.primitives.ring_oscillator import ring_luts, ring_stage_inits

PARTS = {"xc7": "xc7a35tcsg324-1", "ecp5": "LFE5U-85F-6BG381"}

# The ring stages as the netlist shows them: (cell type, INIT as Yosys writes it) -> the
# ports (input from the previous stage, output). The INITs are the truth tables: a NAND with
# en first, inverters after it (LUT4 inputs B..D unused).
STAGES = {
    "xc7": {("LUT1", "01"): ("I0", "O"), ("LUT2", "0111"): ("I0", "O")},
    "ecp5": {("LUT4", "0101" * 4): ("A", "Z"), ("LUT4", "0111" * 4): ("A", "Z")},
}


def test_stage_truth_tables():
    assert ring_stage_inits("xc7") == ((0b0111, 2), (0b01, 1))
    assert ring_stage_inits("ecp5") == ((0x7777, 4), (0x5555, 4))


def ring_loops(netlist_json, family):
    """The lengths of the closed loops of inverting ring stages in a synthesized netlist
    (sorted), each stage's input driven by the previous stage's output."""
    module = json.loads(netlist_json.read_text())["modules"]["top"]
    driver = {}        # output bit -> (cell, input bit)
    for name, cell in module["cells"].items():
        ports = STAGES[family].get((cell["type"], cell["parameters"].get("INIT")))
        if ports is not None:
            driver[cell["connections"][ports[1]][0]] = (name, cell["connections"][ports[0]][0])
    loops, seen = [], set()
    for start in driver:
        if start in seen:
            continue
        path, bit = [], start
        while bit in driver and bit not in path:
            path.append(bit)
            bit = driver[bit][1]
        seen.update(path)
        if bit == start:
            loops.append(len(path))
    return sorted(loops)


def unmarked_ring_parts(netlist_json, family):
    """Ring cells without ``keep`` and ``DONT_TOUCH``, and ring nets (``stage`` nets) without
    ``ALLOW_COMBINATORIAL_LOOPS`` too: what Vivado's optimisation and DRC would see unmarked
    (Yosys keeps the instantiated LUTs in any case)."""
    module = json.loads(netlist_json.read_text())["modules"]["top"]
    bad = [name for name, cell in module["cells"].items()
           if (cell["type"], cell["parameters"].get("INIT")) in STAGES[family]
           and not (int(cell["attributes"].get("keep", "0"), 2)
                    and cell["attributes"].get("DONT_TOUCH") == "TRUE")]
    nets = [name for name in module["netnames"] if name.startswith("ring") and ".stage" in name]
    bad += [name for name in nets
            if module["netnames"][name]["attributes"].get("ALLOW_COMBINATORIAL_LOOPS") != "TRUE"]
    return bad, len(nets)


@pytest.mark.parametrize("family", PARTS)
def test_synthesis_keeps_every_ring(family, tmp_path):
    result = synthesize(NoiseSource(), PARTS[family], workdir=tmp_path)
    assert ring_loops(result.netlist_json, family) == sorted(DEFAULT_LENGTHS)
    assert unmarked_ring_parts(result.netlist_json, family) == ([], sum(DEFAULT_LENGTHS))
    expected = {}
    for n in DEFAULT_LENGTHS:
        for cell, count in ring_luts(n, family).items():
            expected[cell] = expected.get(cell, 0) + count
    cells = {k.lstrip("\\"): v for k, v in result.total.cells.items()}
    for cell, count in expected.items():
        # The rings, plus the 4-input XOR of the samples (one LUT4 on either family).
        assert cells[cell] == count + (cell == "LUT4"), (cell, cells)
    assert result.total.ff == 2 * len(DEFAULT_LENGTHS)          # the synchronisers
    if family == "xc7":
        # The level count (aes-fpga synth/timing) takes each ring, a loop on purpose, as an
        # asynchronous source: its output starts a path into its synchroniser, no loop error.
        report = analyse_netlist(result.netlist_json, worst=100)
        into_sync = sorted((p.end.name, p.start.kind, p.levels) for p in report.paths
                           if p.end.name.endswith(".stage0"))
        assert into_sync == [(f"sync{k}.stage0", "other", 0)
                             for k in range(len(DEFAULT_LENGTHS))]


def test_loop_finder_sees_a_broken_ring():
    """The checker itself: a ring whose loop is cut is not counted."""
    import tempfile
    from pathlib import Path
    cells = {f"s{k}": {"type": "LUT1", "parameters": {"INIT": "01"},
                       "connections": {"I0": [10 + (k - 1) % 3], "O": [10 + k]}}
             for k in range(3)}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "n.json"
        path.write_text(json.dumps({"modules": {"top": {"cells": cells}}}))
        assert ring_loops(path, "xc7") == [3]
        cells["s0"]["connections"]["I0"] = [99]
        path.write_text(json.dumps({"modules": {"top": {"cells": cells}}}))
        assert ring_loops(path, "xc7") == []


@pytest.mark.slow
@pytest.mark.parametrize("family,max_lut", [("xc7", 520), ("ecp5", 700)])
def test_source_area(family, max_lut, tmp_path):
    """The whole source (defaults: 4 rings, H = 0.5, compact8 AES-128): the rings survive in
    it, and its LUTs stay under the bound its docstring's figures are measured against."""
    result = synthesize(EntropySource(), PARTS[family], workdir=tmp_path)
    assert ring_loops(result.netlist_json, family) == sorted(DEFAULT_LENGTHS)
    assert result.total.lut <= max_lut and result.total.ramb18 == 2

"""The build report in each family's own resource names (7-series: LUT, FF, RAMB36, RAMB18,
DSP48E1; ECP5: LUT4, FF, DP16KD, MULT18X18D, TRELLIS_DPR16X4), with no ``None`` in its text,
on fabricated reports (the real builds are in test_build.py)."""

import json

import pytest

from aes_fpga.flow.report import (
    RESOURCES,
    add_metrics,
    markdown,
    resource_summary,
    utilization_from_cells,
)

# synth_ecp5's cells of a small design, and what the report makes of them
ECP5_CELLS = {"LUT4": 1000, "CCU2C": 50, "TRELLIS_FF": 800, "DP16KD": 35, "PFUMX": 40,
              "L6MUX21": 5, "TRELLIS_DPR16X4": 6, "$scopeinfo": 3}
XC7_CELLS = {"LUT6": 700, "LUT3": 300, "FDRE": 900, "RAMB36E1": 12, "RAMB18E1": 8,
             "DSP48E1": 18, "CARRY4": 20, "RAM32M": 2, "SRLC32E": 3}
XILINX_WORDS = ("RAMB36", "RAMB18", "DSP48E1", "36 Kb", "BRAM")


class Core:
    """What the report asks of a core: its key sizes and sustained blocks per cycle."""
    key_sizes = (128, 256)

    def blocks_per_cycle(self, key_bits):
        return {128: 0.1, 256: 0.075}[key_bits]


def stages(utilization, family):
    return [{"name": "elaborate and write the build tree", "status": "done", "seconds": 4.2,
             "detail": "wrote 7 files: Verilog, constraints, scripts"},
            {"name": "synthesize", "status": "done", "seconds": 30.0,
             "detail": resource_summary(utilization, family) if utilization else ""},
            {"name": "place and route (nextpnr-ecp5)", "status": "missing", "seconds": 0.0,
             "detail": "nextpnr-ecp5 not found"}]


def report(family, utilization, **extra):
    r = {"board": "ulx3s-85" if family == "ecp5" else "arty-a7-35", "part": "PART",
         "open_flow_part": "PART", "family": family, "design": "uart", "core": "drab-locus",
         "toolchain": "trellis" if family == "ecp5" else "openxc7",
         "clock_mhz_requested": 100.0, "clock_mhz": 100.0, "dry_run": False, "baud": 3_000_000,
         "flow_control": False, "ethernet": None, "tools": {"yosys": "Yosys 0.70"},
         "utilization": utilization, "fmax_mhz": None, "status": "incomplete",
         "missing_tool": "nextpnr-ecp5", "stages": stages(utilization, family),
         "build_dir": "/tmp/b", "files": ["report.json", "report.md"], **extra}
    if family == "ecp5":
        r["pll"] = {"f_in_mhz": 25.0}
    add_metrics(r, Core())
    return r


def test_ecp5_cells_in_ecp5_names():
    u = utilization_from_cells(ECP5_CELLS, "ecp5")
    # LUT4: logic, two per CCU2C, four per TRELLIS_DPR16X4 (its own column counts the cells)
    assert u == {"lut4": 1000 + 2 * 50 + 4 * 6, "ff": 800, "dp16kd": 35, "mult18x18d": 0,
                 "trellis_dpr16x4": 6}
    assert list(u) == [key for key, _ in RESOURCES["ecp5"]]
    assert resource_summary(u, "ecp5") == ("1124 LUT4, 800 FF, 35 DP16KD, 0 MULT18X18D, "
                                           "6 TRELLIS_DPR16X4")


def test_xc7_cells_in_xilinx_names_as_before():
    u = utilization_from_cells(XC7_CELLS, "xc7")
    assert u == {"lut": 1000 + 2 * 4 + 3, "ff": 900, "ramb18": 8, "ramb36": 12, "dsp": 18}
    assert resource_summary(u, "xc7") == "1011 LUT, 900 FF, 12 RAMB36, 8 RAMB18, 18 DSP48E1"


def test_ecp5_report_speaks_ecp5():
    """``aes-fpga build --board ulx3s-85 --design uart`` stopped after synthesis: the table,
    the stage line and the efficiency figures name ECP5's resources, and nothing says None."""
    r = report("ecp5", utilization_from_cells(ECP5_CELLS, "ecp5"))
    md = markdown(r)
    assert ("| LUT4 | FF | DP16KD | MULT18X18D | TRELLIS_DPR16X4 |\n|---|---|---|---|---|\n"
            "| 1124 | 800 | 35 | 0 | 6 |") in md
    assert "| synthesize | done | 30.0 | 1124 LUT4, 800 FF, 35 DP16KD, 0 MULT18X18D, " in md
    assert r["throughput"] == {"key_bits": 128, "blocks_per_cycle": 0.1, "at_mhz": 100.0,
                               "mbps": 1280.0}
    mbps = r["throughput"]["mbps"]
    assert r["efficiency_mbps_per"] == {"lut4": round(mbps / 1124, 3),
                                        "ff": round(mbps / 800, 3),
                                        "dp16kd": round(mbps / 35, 3), "mult18x18d": None}
    assert (f"LUT4 {round(mbps / 1124, 3)}, FF {round(mbps / 800, 3)}, DP16KD "
            f"{round(mbps / 35, 3)}, MULT18X18D n/a.") in md
    assert "- core clock: requested 100.0 MHz, PLL gives 100.0 MHz" in md
    for word in (*XILINX_WORDS, "None"):
        assert word not in md, word
    # report.json: the same names, and no Xilinx column
    text = json.dumps(r)
    assert not any(f'"{k}"' in text for k in ("ramb18", "ramb36", "dsp", "bram36"))


def test_xc7_report_unchanged_but_for_none():
    r = report("xc7", utilization_from_cells(XC7_CELLS, "xc7"))
    md = markdown(r)
    assert ("| LUT | FF | RAMB36 | RAMB18 | DSP48E1 |\n|---|---|---|---|---|\n"
            "| 1011 | 900 | 12 | 8 | 18 |") in md
    mbps = r["throughput"]["mbps"]
    assert r["efficiency_mbps_per"] == {"lut": round(mbps / 1011, 3),
                                        "ff": round(mbps / 900, 3),
                                        "bram36": round(mbps / 16, 3),
                                        "dsp": round(mbps / 18, 3)}
    assert (f"LUT {round(mbps / 1011, 3)}, FF {round(mbps / 900, 3)}, BRAM "
            f"{round(mbps / 16, 3)}, DSP {round(mbps / 18, 3)}.") in md
    # without DSPs (or a figure Vivado did not report): n/a, not None
    r = report("xc7", {"lut": 900, "ff": 800, "ramb36": 0, "ramb18": 0})
    md = markdown(r)
    assert "| 900 | 800 | 0 | 0 | n/a |" in md and "BRAM n/a, DSP n/a." in md
    assert "None" not in md


@pytest.mark.parametrize("family", ["xc7", "ecp5"])
def test_missing_figures_read_n_a(family):
    """A build that stopped early (no clock, a tool that gave no version, a critical path
    without cells) still says nothing of None."""
    r = report(family, None, clock_mhz=None, tools={"yosys": None},
               ethernet={"ip": "10.0.0.2", "udp_port": 7001, "mac": "02:00:0a:00:00:02",
                         "chip": "PHY", "phy": "mii", "ref_clock_mhz": 25.0,
                         "reset_hold_ms": 10.0, "reset_note": "note", "mdio_address": 1},
               fmax_mhz=90.0, fmax_by_clock={"clk": 90.0},
               critical_paths=[{"from": "clk", "to": "clk", "delay_ns": 11.1, "logic_ns": 5.0,
                                "routing_ns": 6.1, "start": None, "end": None, "steps": 0}])
    md = markdown(r)
    assert "None" not in md
    assert "gives n/a MHz" in md and "- yosys: n/a" in md and "(n/a core clock cycles;" in md
    assert "from `n/a` to `n/a`" in md

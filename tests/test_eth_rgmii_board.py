"""The ECP5 ethernet designs on their RGMII PHYs, placed, routed and packed (``-m slow``:
minutes of one core each): the ECPIX-5 85's and the Colorlight 5A-75B's. On the ECPIX-5 the
core's clock (a domain of its own), ``sync`` with the transmit logic at 125 MHz and the PHY's
receive clock all meet their constraints; on the Colorlight's smaller and slower LFE5U-25F-6,
whose link runs at 100 Mbit/s, the core's clock, ``sync`` at the board's stack clock, the
transmit logic at 125 MHz and the receive clock do. The RGMII pins sit in their I/O
registers."""

import pytest
from aes_fpga.boards import BOARDS

from aes_fpga.flow.build import build

QUIET = {"progress": lambda line: None}


def routed(board, tmp_path, **options):
    """The report of ``board``'s ethernet design with compact8 for AES-128, built in
    ``tmp_path``; checks what every routed RGMII build has (a bitstream, the three clocks
    each with a figure, the RGMII pins in I/O registers) and returns ``(report, missed)``,
    ``missed`` the clocks below their constraints (net name -> Fmax)."""
    result = build(board, design="ethernet", core="compact8",
                   core_options={"key_sizes": (128,)}, build_root=tmp_path, **options, **QUIET)
    r = result.report
    assert r["status"] == "complete", r["stages"]
    assert (result.build_dir / "top.bit").stat().st_size > 100_000
    fmax, wanted = r["fmax_by_clock"], r["clock_constraints_mhz"]
    # three clocks at least: the core's own (CLKOP), sync with the transmit logic (CLKOS),
    # rx_clk's pin
    assert len(fmax) >= 3, fmax
    assert any(clock.endswith("core_clk") for clock in fmax), fmax
    assert sorted(round(f) for f in wanted.values())[-2:] == [125, 125], wanted
    assert set(fmax) == set(wanted), (fmax, wanted)  # every constrained clock has a figure
    # the 11 RGMII pins (rx_ctl, rxd[4], tx_ctl, txd[4], tx_clk) in DDR I/O registers: nextpnr
    # names the I/O logic on the chip's left and right edges IOLOGIC, top and bottom SIOLOGIC
    used = r["utilization_pnr"]
    iologic = sum(used.get(bel, {}).get("used", 0) for bel in ("IOLOGIC", "SIOLOGIC"))
    assert iologic >= 11, used
    return r, {clock: mhz for clock, mhz in fmax.items() if mhz < wanted[clock]}


@pytest.mark.slow
def test_ecpix5_ethernet_bitstream(tmp_path):
    r, missed = routed("ecpix5-85", tmp_path, clock_mhz=80)
    # Every clock meets its constraint: the core's, sync with the transmit logic at 125 MHz
    # (the stack and the datagram engine meet at registered stages) and rx_clk.
    assert missed == {}, (missed, r["clock_constraints_mhz"])
    assert r["timing_met"], r["critical_paths"]


@pytest.mark.slow
def test_colorlight_ethernet_bitstream(tmp_path):
    """At the default core clock (100 MHz): every clock meets its constraint, the core's
    (compact8's rounds read their block RAMs from the blocks' output registers), ``sync`` at
    the board's stack clock for its 100 Mbit/s link (the PLL's CLKOS2), the RGMII transmit
    logic at 125 MHz (CLKOS) and rx_clk at its 1000 Mbit/s 125 MHz."""
    r, missed = routed("colorlight-5a75b", tmp_path)
    assert r["pll"]["clkos2_mhz"] == BOARDS["colorlight-5a75b"].ethernet.stack_mhz, r["pll"]
    assert len(r["clock_constraints_mhz"]) == 4, r["clock_constraints_mhz"]
    assert missed == {}, (missed, r["clock_constraints_mhz"])
    assert r["timing_met"], r["critical_paths"]

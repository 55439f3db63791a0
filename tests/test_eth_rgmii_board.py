"""The ECPIX-5 85 ethernet design on its RGMII PHY, placed, routed and packed (``-m slow``:
minutes of one core): the core's clock (a domain of its own), ``sync`` with the transmit logic
at 125 MHz and the PHY's receive clock all meet their constraints, the RGMII pins sit in their
I/O registers."""

import pytest

from aes_fpga.flow.build import build

QUIET = {"progress": lambda line: None}


@pytest.mark.slow
def test_ecpix5_ethernet_bitstream(tmp_path):
    result = build("ecpix5-85", design="ethernet", core="compact8", clock_mhz=80,
                   core_options={"key_sizes": (128,)}, build_root=tmp_path, **QUIET)
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
    missed = {clock: mhz for clock, mhz in fmax.items() if mhz < wanted[clock]}
    # Every clock meets its constraint: the core's, sync with the transmit logic at 125 MHz
    # (the stack and the datagram engine meet at registered stages) and rx_clk.
    assert missed == {}, (missed, wanted)
    assert r["timing_met"], r["critical_paths"]

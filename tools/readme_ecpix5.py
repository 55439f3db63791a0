"""The README's ``ecpix5-ethernet`` section: the ECPIX-5 85 RGMII ethernet design placed and
routed, each of its clocks (the core's own domain from the PLL's CLKOP, ``sync`` and the
transmit logic on the 125 MHz CLKOS, the PHY's receive clock from its pin) against its
constraint."""

import shutil
import tempfile
from pathlib import Path

from readme_markers import FiguresError

__all__ = ["ECPIX5_ETHERNET", "ecpix5_ethernet"]

#: (the build's row label, its command); the first is the slow test's build.
ECPIX5_ETHERNET = (("compact8, AES-128", "aes-fpga build --board ecpix5-85 --design ethernet "
                    "--core compact8 --key-sizes 128 --clock-mhz 80 --json"),
                   ("DRAB-LOCUS, AES-128/192/256 (the defaults)",
                    "aes-fpga build --board ecpix5-85 --design ethernet --json"))
#: The ends of nextpnr's names of the three clock nets, in the table's order.
CLOCK_NETS = ("core_clk", "$clk", "rx_clk")
HEAD = ("core", "`--clock-mhz`", "core clock (`core`): Fmax / constraint (MHz)",
        "`sync` and transmit (CLKOS)", "`rx_clk` (receive)", "all met", "LUT4 (TRELLIS_COMB)",
        "FF", "DP16KD")


def build_report(runner, command):
    """The report of ``command`` built in a private folder under the runner's work folder."""
    root = Path(tempfile.mkdtemp(prefix="readme-figures-", dir=runner.work_dir))
    try:
        return runner.json(command, extra=("--build-dir", str(root)))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def ecpix5_ethernet(runner):
    """The section's table, a row for each build of :data:`ECPIX5_ETHERNET`."""
    lines = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    for label, command in ECPIX5_ETHERNET:
        r = build_report(runner, command)
        fmax, wanted = r.get("fmax_by_clock") or {}, r.get("clock_constraints_mhz") or {}
        nets = [next((n for n in fmax if n.endswith(end)), "") for end in CLOCK_NETS]
        if r.get("status") != "complete" or not set(nets) == set(fmax) == set(wanted):
            raise FiguresError(f"{command}: status {r.get('status')}, clocks {sorted(fmax)}")
        used = [r["utilization_pnr"].get(k, {}).get("used", 0)
                for k in ("TRELLIS_COMB", "TRELLIS_FF", "DP16KD")]
        cells = [label, f"{r['clock_mhz_requested']:g}",
                 *(f"{fmax[n]:.2f} / {wanted[n]:g}" for n in nets),
                 "yes" if all(fmax[n] >= wanted[n] for n in nets) else "no", *used]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(lines) + "\n"

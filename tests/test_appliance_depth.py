"""The UART appliance's logic depth, as a test: the layers around the core keep their
valid/ready paths and counter comparisons registered, so no register-to-register path grows
past :data:`UART_LEVELS` LUT levels.

The configuration is the one ``aes-fpga timing --design uart --key-sizes 128`` reports (100 MHz,
3 Mbaud, DRAB-LOCUS AES-128 with one key slot), so the synthesis cache serves both. Levels are
counted by :func:`aes_fpga.flow.timing.analyse_netlist` on the flattened 7-series netlist.
"""

import pytest

from aes_fpga.appliance.gateware.uart import UartAppliance
from aes_fpga.cores import make_core
from aes_fpga.flow.synth import synthesize
from aes_fpga.flow.timing import analyse_netlist

#: LUT levels allowed between two registers of the appliance (the core alone keeps 2).
UART_LEVELS = 4


@pytest.mark.slow
@pytest.mark.parametrize("gcm", [None, "bram"])
def test_uart_appliance_depth(gcm):
    """With GCM too (``aes-fpga timing --design uart --key-sizes 128 --ghash bram``): the
    executor's GCM checks and reply lengths, the mode engine's GCM control."""
    core = make_core("drab-locus", key_slots=1, key_sizes=(128,), tag_width=8)
    top = UartAppliance(core, clk_freq=100e6, baud=3_000_000, gcm=gcm)
    report = analyse_netlist(synthesize(top).netlist_json, worst=1000)
    assert report.end_points > 0 and report.paths
    deep = [f"{p.levels} levels: {p.start} -> {p.end}" for p in report.paths
            if p.levels > UART_LEVELS]
    assert deep == []

"""The UART appliance's logic depth, as a test: the layers around the core keep their
valid/ready paths and counter comparisons registered, so no register-to-register path grows
past :data:`UART_LEVELS` LUT levels.

The configuration is the one ``aes-fpga timing --design uart --key-sizes 128`` reports (100 MHz,
3 Mbaud, DRAB-LOCUS AES-128 with one key slot), so the synthesis cache serves both. Levels are
counted by :func:`aes_fpga.flow.timing.analyse_netlist` on the flattened 7-series netlist.
The entropy source is included whole (noise source, health tests, conditioning, ``RANDOM`` and
``ENTROPY_RAW``), with its vendor ring oscillators, which the level count takes as start
points.
"""

import json

import pytest

from aes_fpga.appliance.gateware.uart import UartAppliance
from aes_fpga.cores import make_core
from aes_fpga.entropy import EntropySource
from aes_fpga.flow.synth import synthesize
from aes_fpga.flow.timing import analyse_netlist

#: LUT levels allowed between two registers of the appliance (the core alone keeps 2).
UART_LEVELS = 4


@pytest.mark.slow
@pytest.mark.parametrize("gcm,entropy", [(None, False), ("bram", False), (None, True)])
def test_uart_appliance_depth(gcm, entropy):
    """With GCM too (``aes-fpga timing --design uart --key-sizes 128 --ghash bram``): the
    executor's GCM checks and reply lengths, the mode engine's GCM control. With the entropy
    source (``--entropy``, and its diagnostic ``ENTROPY_RAW``): its health tests, start-up,
    conditioning (the compact8 core) and the commands that read it."""
    core = make_core("drab-locus", key_slots=1, key_sizes=(128,), tag_width=8)
    extra = {"entropy": EntropySource(), "entropy_raw": True} if entropy else {}
    top = UartAppliance(core, clk_freq=100e6, baud=3_000_000, gcm=gcm, **extra)
    netlist = synthesize(top).netlist_json
    report = analyse_netlist(netlist, worst=1000)
    assert report.end_points > 0 and report.paths
    if entropy:
        assert any(p.start.name.startswith("engine.entropy.") for p in report.paths)
        # The vendor rings, not their simulation model: their loops' nets are in the netlist.
        nets = json.loads(netlist.read_text())["modules"]["top"]["netnames"]
        assert any(name.startswith("engine.entropy.noise.ring")
                   and "ALLOW_COMBINATORIAL_LOOPS" in net["attributes"]
                   for name, net in nets.items())
    deep = [f"{p.levels} levels: {p.start} -> {p.end}" for p in report.paths
            if p.levels > UART_LEVELS]
    assert deep == []

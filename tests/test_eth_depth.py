"""The Ethernet appliance's logic depth, as a test: the stack's layers meet at registered
stream stages and its packet buffers register their input, so no register-to-register path
grows past :data:`ETHERNET_LEVELS` LUT levels.

The configuration is the one ``aes-fpga timing --design ethernet --key-sizes 128`` reports
(MII, DRAB-LOCUS AES-128 with one key slot), so the synthesis cache serves both. Levels are
counted by :func:`aes_fpga.flow.timing.analyse_netlist` on the flattened 7-series netlist.
"""

import pytest

from aes_fpga.flow.synth import synthesize
from aes_fpga.flow.timing import analyse_netlist

#: LUT levels allowed between two registers of the appliance. The deepest paths left: the
#: PHY's transmit AsyncFIFO (its Gray-code pointers) and the datagram engine.
ETHERNET_LEVELS = 7
#: The same for paths within the stack's layers (PHY and its clock-domain FIFOs excluded).
LAYER_LEVELS = 6


@pytest.mark.slow
def test_ethernet_appliance_depth():
    from aes_fpga.cli import build_parser
    from aes_fpga.commands.synth import synth_top
    from aes_fpga.cores import make_core

    args = build_parser().parse_args(["timing", "--design", "ethernet", "--key-sizes", "128"])
    core = make_core(args.core, key_sizes=args.key_sizes, key_slots=1, tag_width=args.tag_width)
    report = analyse_netlist(synthesize(synth_top(args, core), args.part).netlist_json,
                             worst=1000)
    assert report.end_points > 0 and report.paths
    deep = [f"{p.levels} levels: {p.start} -> {p.end}" for p in report.paths
            if p.levels > ETHERNET_LEVELS]
    assert deep == []
    layers = [f"{p.levels} levels: {p.start} -> {p.end}" for p in report.paths
              if p.levels > LAYER_LEVELS and "stack.phy." not in f"{p.start} {p.end}"]
    assert layers == []

"""The ``aes-fpga`` commands, one module per command or close family, in the shape of Glasgow's
applets: each module owns its options (``add_arguments(parser)``), its run (``run(args)``,
returning the exit status) and its report. :data:`COMMANDS` lists them in the order ``--help``
shows them; :func:`build_parser` assembles the command line from it.

Options several commands share are declared once, in :mod:`.options`; what their runs share is
in :mod:`.common`. Importing a command module loads no HDL: the host commands (``encrypt``,
``decrypt``, ``info``, ``selftest``, ``random``, ``entropy``) run without Amaranth.
"""

import argparse
import importlib
from dataclasses import dataclass

__all__ = ["Command", "COMMANDS", "build_parser"]


@dataclass(frozen=True)
class Command:
    """One command: its module (below this package), its one-line help, and the names of
    the module's functions that declare its options and run it."""

    module: str
    help: str
    add_arguments: str = "add_arguments"
    run: str = "run"


#: The commands by name, in the order ``aes-fpga --help`` lists them.
COMMANDS = {
    "primitives": Command("primitives", "synthesize the BRAM/DSP primitives and print their "
                          "utilisation and latency"),
    "synth": Command("synth", "synthesize a core (or an appliance around it) with Yosys "
                     "synth_xilinx and print its utilisation"),
    "bench": Command("bench", "simulate a core cycle by cycle under saturating traffic, check "
                     "every result and print its latency and throughput; with --design uart, "
                     "the serial appliance's link efficiency"),
    "timing": Command("timing", "synthesize a core (or an appliance around it) and count the "
                      "logic levels between registers: worst levels, a histogram, the worst "
                      "paths, carry chains, and Yosys's cell-delay figure"),
    "compare": Command("compare", "every core side by side (AES-128, 1 key slot): "
                       "utilisation, cycles, logic depth and, with --route, routed Fmax and "
                       "throughput; as a table, JSON or a picture"),
    "export": Command("export", "write a core as one self-contained Verilog file, with "
                      "AXI4-Stream ports or its own, and a JSON description of its ports"),
    "power": Command("power", "a toggle-count power proxy: switching activity in simulation "
                     "with and without the low-power techniques"),
    "boards": Command("boards", "list the boards: part (and the open flow's), clock, the "
                      "designs the build offers"),
    "build": Command("build", "build a design for a board: build tree, bitstream (when the "
                     "tools are installed) and report"),
    "encrypt": Command("crypt", "encrypt a file with the appliance"),
    "decrypt": Command("crypt", "decrypt a file with the appliance"),
    "info": Command("device", "ask the appliance what it is"),
    "selftest": Command("device", "run the FIPS-197 vectors on the appliance",
                        add_arguments="add_selftest_arguments", run="run_selftest"),
    "random": Command("entropy", "take random words from the appliance's entropy source",
                      add_arguments="add_random_arguments", run="run_random"),
    "entropy": Command("entropy", "read raw samples of a diagnostic build's entropy source "
                       "for an SP 800-90B assessment", add_arguments="add_entropy_arguments",
                       run="run_entropy"),
    "program": Command("program", "load a built bitstream with openFPGALoader"),
    "keygen": Command("keys", "make a device key file (for build --device-key-file and the "
                      "host commands), or print a key file's fingerprint",
                      add_arguments="add_keygen_arguments", run="run_keygen"),
    "wrap-key": Command("keys", "wrap a key file (SP 800-38F KWP) under the key-encryption key "
                        "of a device key, for keeping it outside the device",
                        add_arguments="add_wrap_arguments", run="run_wrap"),
}


def build_parser():
    """The ``aes-fpga`` argument parser: one sub-command per entry of :data:`COMMANDS`, each
    with its module's options and its run as ``func``."""
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="aes-fpga",
        description="Area-efficient AES cores for FPGAs: synthesis reports, simulation, builds.")
    parser.add_argument("--version", action="version", version=f"aes-fpga {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, command in COMMANDS.items():
        module = importlib.import_module(f".{command.module}", __name__)
        p = sub.add_parser(name, help=command.help)
        getattr(module, command.add_arguments)(p)
        p.set_defaults(func=getattr(module, command.run))
    return parser

"""The options several commands share, declared once: their types, defaults and meaning are the
same in every command that takes them (only the help line may say what the command does with
them).

Nothing here imports the HDL: the host commands (``encrypt``, ``info``, ...) assemble their
parsers from this module without Amaranth.
"""

import argparse
import ast

from ..cores import CORES, DEFAULT_CORE
from ..params import GHASH_DIGITS, GHASH_VARIANTS

__all__ = ["int_in", "int_literal", "positive_mhz", "fraction", "hex_bytes", "key_sizes",
           "core_option", "add_core", "add_core_options", "add_json", "add_part",
           "add_clock_mhz", "add_baud", "add_phy", "add_design", "add_route_options",
           "add_seed", "add_board", "add_build_dir", "add_port_options", "add_ghash", "ghash_of",
           "add_entropy", "add_device_key_file",
           "MAX_BAUD", "MAX_SEED"]

#: The highest line rate ``--baud`` accepts anywhere.
MAX_BAUD = 100_000_000
#: The highest seed (nextpnr's placer, the power command's traffic).
MAX_SEED = 2 ** 31 - 1


# -- argument types ------------------------------------------------------------------------

def int_in(lo, hi):
    """An argument type: a decimal integer from ``lo`` to ``hi``."""
    def check(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{value} is out of range; allowed {lo} to {hi}")
        return value
    return check


def int_literal(text):
    """An argument type: an integer as written (``7001``, ``0x1b59``); range checks, naming
    the option, are the code's that uses it."""
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def positive_mhz(text):
    """An argument type: a finite frequency above 0 MHz."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    # Written as a chained "0 < value < inf" so that NaN, for which it is False, is refused.
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is out of range; allowed a finite "
                                         f"frequency above 0 MHz")
    return value


def fraction(text):
    """An argument type: a number from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is out of range; allowed 0 to 1")
    return value


def hex_bytes(name, lengths):
    """An argument type: bytes written in hex, ``lengths`` bytes long (``name`` is the
    parameter the error names)."""
    def parse(text):
        try:
            value = bytes.fromhex(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name}: {text!r} is not hexadecimal") from None
        if len(value) not in lengths:
            raise argparse.ArgumentTypeError(
                f"{name}: {len(value)} bytes; allowed {' or '.join(map(str, lengths))} bytes")
        return value
    return parse


def key_sizes(text):
    """An argument type: a comma-separated subset of 128,192,256, as a sorted tuple."""
    try:
        sizes = tuple(sorted({int(k) for k in text.split(",")}))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of key "
                                         "sizes") from None
    if not sizes or any(k not in (128, 192, 256) for k in sizes):
        raise argparse.ArgumentTypeError(f"{text} is out of range; allowed a comma-separated "
                                         "subset of 128,192,256")
    return sizes


def core_option(text):
    """An argument type: ``NAME=VALUE`` for a core keyword argument, the value read as a
    Python literal (``decrypt=False``, ``unroll=2``), else kept as text."""
    name, sep, value = text.partition("=")
    if not sep or not name.isidentifier():
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE")
    try:
        value = ast.literal_eval(value)
    except (ValueError, SyntaxError):
        pass
    return name, value


# -- options -------------------------------------------------------------------------------

def add_core(p, verb):
    """``--core``: one of the table of cores."""
    p.add_argument("--core", default=DEFAULT_CORE, choices=sorted(CORES),
                   help=f"core to {verb} (default {DEFAULT_CORE})")


def add_core_options(p, verb):
    """``--core`` and what the core is built with: ``--key-sizes``, ``--key-slots``,
    ``--tag-width`` and ``--option NAME=VALUE``."""
    add_core(p, verb)
    p.add_argument("--key-sizes", type=key_sizes, default=(128, 192, 256),
                   help="key sizes the hardware supports, e.g. 128 or 128,256 "
                        "(default 128,192,256)")
    p.add_argument("--key-slots", type=int, default=1, help="key slots (1 to 64, default 1)")
    p.add_argument("--tag-width", type=int, default=8, help="request tag bits (0 to 64, default 8)")
    p.add_argument("--option", type=core_option, action="append", metavar="NAME=VALUE",
                   help="another keyword argument of the core class, e.g. decrypt=False for "
                        "lut-round (repeatable)")


def add_json(p, help="print a JSON object instead of a table"):
    p.add_argument("--json", action="store_true", help=help)


def add_part(p, note=""):
    """``--part``: the Xilinx 7-series part Yosys synthesizes for (checked by the entry
    point before the command runs)."""
    from ..flow.synth import DEFAULT_PART
    p.add_argument("--part", default=DEFAULT_PART,
                   help=f"Xilinx 7-series part (default {DEFAULT_PART}){note}")


def add_clock_mhz(p, help, default=100.0):
    """``--clock-mhz``: a clock in MHz, finite and above 0; ``help`` says which clock (and,
    with ``default`` ``None``, what the command takes without it)."""
    shown = "" if default is None else f", default {default:g}"
    p.add_argument("--clock-mhz", type=positive_mhz, default=default,
                   help=f"{help} (above 0{shown})")


def add_baud(p, help, *, default=3_000_000, nargs=None):
    """``--baud``: a UART line rate, 1 to :data:`MAX_BAUD` (``nargs="+"``: several)."""
    shown = " ".join(map(str, default)) if nargs else default
    p.add_argument("--baud", type=int_in(1, MAX_BAUD), default=default, nargs=nargs,
                   help=f"{help} (1 to {MAX_BAUD}, default {shown})")


#: The Ethernet design's PHY interfaces: ``EthernetStack.PHYS`` (written here again so that the
#: host commands need no Amaranth; a test holds the two equal).
PHYS = ("mii", "rmii", "rgmii")


def add_phy(p, what):
    """``--phy``: the Ethernet design's PHY interface, one of :data:`PHYS`."""
    p.add_argument("--phy", choices=PHYS, default="mii",
                   help=f"--design ethernet: {what} (default mii)")


def add_design(p, names, help, default):
    """``--design``: one of ``names`` from the table of designs
    (:data:`aes_fpga.designs.table.DESIGN_TABLE`); a name means the same design in every
    command that offers it. ``help=None``: what the table says of each."""
    if help is None:
        from ..designs.table import DESIGN_TABLE
        help = "; ".join(f"{n}: {DESIGN_TABLE[n].summary}" + (" (default)" if n == default
                                                               else "") for n in names)
    p.add_argument("--design", choices=names, default=default, help=help)


def add_ghash(p, help, default):
    """``--ghash`` (``none`` or a GHASH variant: GCM in the mode engine with that multiplier)
    and ``--ghash-digit`` (the LUT-only multiplier's digit width); ``help`` says what the
    command does with GCM, ``default`` is ``"none"`` or a variant."""
    p.add_argument("--ghash", choices=("none", *GHASH_VARIANTS), default=default,
                   help=f"{help}: bram, tables of multiples of H in block RAM with DSP XORs "
                        f"(8 cycles a block); lut, a LUT-only digit-serial multiplier "
                        f"(128 / digit + 1 cycles a block); none, no GCM (default {default})")
    p.add_argument("--ghash-digit", type=int, choices=GHASH_DIGITS, default=8,
                   help="--ghash lut: bits multiplied per cycle (default 8)")


def add_entropy(p, help, *, raw=False):
    """``--entropy``: an entropy source in the designs that take one
    (:data:`~aes_fpga.designs.table.ENTROPY_DESIGNS`); ``help`` says what the command does with
    it. With ``raw``, also ``--entropy-raw``: an appliance's diagnostic build that gives the
    source's raw samples (:data:`~aes_fpga.designs.table.ENTROPY_RAW_DESIGNS`)."""
    from ..designs.table import ENTROPY_DESIGNS, ENTROPY_RAW_DESIGNS
    p.add_argument("--entropy", action="store_true",
                   help=f"--design {'|'.join(ENTROPY_DESIGNS)}: {help} the entropy source (ring "
                        f"oscillators, SP 800-90B health tests, CBC-MAC conditioning): in an "
                        f"appliance reported by INFO and STATS, serving RANDOM; in the "
                        f"self-test, tested beside the core (its health and words; the verdict "
                        f"on the LEDs)")
    if raw:
        p.add_argument("--entropy-raw", action="store_true",
                       help=f"--design {'|'.join(ENTROPY_RAW_DESIGNS)}: a diagnostic build "
                            f"(implies --entropy) whose ENTROPY_RAW gives the source's raw "
                            f"samples for an SP 800-90B assessment (aes-fpga entropy --raw N); "
                            f"its RANDOM words are no secret")


def add_device_key_file(p, help):
    """``--device-key-file``: a file holding the 256-bit device secret (32 raw bytes, or 64
    hexadecimal digits; :func:`~aes_fpga.appliance.session_host.read_device_key` reads both,
    ``aes-fpga keygen`` writes one); ``help`` says what the command does with it."""
    p.add_argument("--device-key-file", metavar="FILE", default=None,
                   help=f"the device secret (32 bytes, raw or 64 hex digits) {help}")


def ghash_of(args):
    """The ``gcm`` keyword of a build from ``--ghash``: ``None`` (no GCM) or the variant."""
    return None if args.ghash == "none" else args.ghash


def add_seed(p, help="--route: nextpnr's placer seed"):
    p.add_argument("--seed", type=int_in(0, MAX_SEED), default=1, help=f"{help} (default 1)")


def add_route_options(p, mhz_default, mhz_help):
    """The place-and-route options beside ``--route``: ``--route-part``, ``--route-mhz``
    (``mhz_help`` says its default when ``mhz_default`` is ``None``) and ``--seed``."""
    p.add_argument("--route-part", default=None,
                   help="--route: the ECP5 part (default LFE5U-85F-6BG381, the ULX3S's)")
    p.add_argument("--route-mhz", type=positive_mhz, default=mhz_default,
                   help=f"--route: the clock asked of nextpnr ({mhz_help})")
    add_seed(p)


def add_board(p):
    p.add_argument("--board", required=True, help="board name (see aes-fpga boards)")


def add_build_dir(p):
    p.add_argument("--build-dir", default="build", help="root of the build trees (default build)")


def add_port_options(p):
    """How the host reaches the appliance: ``--port``, ``--baud``, ``--rtscts``,
    ``--timeout``, ``--device-key-file``."""
    p.add_argument("--port", default="sim",
                   help="serial port of the board (e.g. /dev/ttyUSB1); udp://ADDR[:PORT] an "
                        "Ethernet appliance (port 7001 by default); 'sim' the simulated "
                        "appliance (default); 'model' the pure-Python reference device; "
                        "'model+secure' the reference device with the --device-key-file "
                        "as its secret")
    add_device_key_file(p, "of a device that requires a session; default: the file named "
                           "by the AES_FPGA_DEVICE_KEY_FILE environment variable, if set")
    add_baud(p, "the serial port's baud rate")
    p.add_argument("--rtscts", action="store_true",
                   help="RTS/CTS hardware flow control on the serial port (for bitstreams "
                        "built with it: boards whose UART has the pins)")
    p.add_argument("--timeout", type=float, default=5.0,
                   help="seconds to wait for each reply (default 5; over UDP a request is "
                        "sent again every 0.5 s within it)")

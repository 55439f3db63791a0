"""``aes-fpga random``: words from the appliance's entropy source (``RANDOM``), to a file or as
hex on standard output.

Host side only, like ``aes-fpga info``: nothing here loads the HDL unless ``--port sim`` asks
for the simulated appliance.
"""

from .common import cannot_write, fail, write_atomically
from .device import device_errors, open_device
from .options import add_port_options

__all__ = ["add_random_arguments", "run_random"]


def add_random_arguments(p):
    add_port_options(p)
    p.add_argument("--count", type=int, default=1,
                   help="16-byte words to take (default 1; several requests when more than "
                        "one reply holds)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the words' bytes to FILE (default: hex on standard output, "
                        "one word a line)")


def run_random(args):
    if args.count < 0:
        return fail("random", f"--count: {args.count} is not a number of words (0 or more)")
    if args.output is not None:
        why = cannot_write(args.output)
        if why is not None:
            return fail("random", f"cannot write {args.output}: {why}")
    try:
        with open_device(args) as dev:
            words = dev.random(args.count)
    except device_errors() as e:
        return fail("random", e, 1)
    if args.output is None:
        for n in range(0, len(words), 16):
            print(words[n:n + 16].hex())
        return 0
    try:
        write_atomically(args.output, words)
    except OSError as e:
        return fail("random", f"cannot write {args.output}: {e}", 1)
    return 0

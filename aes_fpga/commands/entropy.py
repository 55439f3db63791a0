"""``aes-fpga random``: words from the appliance's entropy source (``RANDOM``), to a file or as
hex on standard output; ``aes-fpga entropy --raw N``: raw samples of a diagnostic build
(``ENTROPY_RAW``) to a file of one sample per byte, the format NIST's ``ea_non_iid`` reads
with 1 bit per symbol (``ea_non_iid -v FILE 1``).

Host side only, like ``aes-fpga info``: nothing here loads the HDL unless ``--port sim`` asks
for the simulated appliance.
"""

from . import device
from .common import cannot_write, fail, write_atomically
from .device import device_errors
from .options import add_port_options

__all__ = ["add_random_arguments", "run_random", "add_entropy_arguments", "run_entropy"]


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
        with device.open_device(args) as dev:
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


def add_entropy_arguments(p):
    add_port_options(p)
    p.add_argument("--raw", type=int, required=True, metavar="N",
                   help="raw samples to read (a diagnostic build's, aes-fpga build "
                        "--entropy-raw): consecutive within each request of up to 8320 "
                        "(serial) or 11648 (UDP), some skipped between requests")
    p.add_argument("-o", "--output", metavar="FILE", required=True,
                   help="write them to FILE, one sample (0 or 1) per byte: ea_non_iid -v "
                        "FILE 1")


def run_entropy(args):
    if args.raw < 0:
        return fail("entropy", f"--raw: {args.raw} is not a number of samples (0 or more)")
    why = cannot_write(args.output)
    if why is not None:
        return fail("entropy", f"cannot write {args.output}: {why}")
    try:
        with device.open_device(args) as dev:
            samples = dev.raw_samples(args.raw)
    except device_errors() as e:
        return fail("entropy", e, 1)
    try:
        write_atomically(args.output, samples)
    except OSError as e:
        return fail("entropy", f"cannot write {args.output}: {e}", 1)
    return 0

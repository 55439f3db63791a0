"""The ``aes-fpga`` command line: the parser assembled from the table of commands
(:mod:`aes_fpga.commands`), the command chosen run."""

import os
import sys

from .commands import build_parser

__all__ = ["main", "build_parser"]


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if hasattr(args, "part"):
        from .platform import parse_part
        try:
            parse_part(args.part)
        except ValueError as e:
            parser.error(str(e))
    try:
        return args.func(args)
    except BrokenPipeError:
        # The reader went away (``aes-fpga boards --json | head``): nothing is wrong here. Point
        # stdout at /dev/null so that Python's own flush at exit does not complain again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())

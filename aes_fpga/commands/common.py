"""What the commands' runs share: progress lines on standard error, errors in one form, JSON
reports, the core a command's options describe, the first-run preparation of the open tools.

Nothing here imports the HDL at import time (host commands use this module too).
"""

import contextlib
import errno
import json
import os
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["announced", "note", "fail", "print_json", "make_core", "core_text",
           "prepare_tools", "cannot_write", "cannot_read", "write_atomically"]


@contextlib.contextmanager
def announced(text):
    """Say ``text ...`` on standard error before the block, and the seconds it took after it
    (only the line break when it raises)."""
    start = time.monotonic()
    print(f"{text} ...", end="", flush=True, file=sys.stderr)
    try:
        yield
    except BaseException:
        print(file=sys.stderr)
        raise
    print(f" {time.monotonic() - start:.1f} s", file=sys.stderr)


def note(line):
    """One line of progress on standard error."""
    print(line, file=sys.stderr, flush=True)


def fail(command, message, status=2):
    """Say ``aes-fpga COMMAND: error: MESSAGE`` on standard error; returns ``status``
    (2: the request cannot be done as asked; 1: it was tried and failed)."""
    print(f"aes-fpga {command}: error: {message}", file=sys.stderr)
    return status


def print_json(report):
    """``report`` on standard output as indented JSON, then a line break."""
    json.dump(report, sys.stdout, indent=2)
    print()


def make_core(args, name=None):
    """The core ``args`` describe (``--core`` or ``name``, ``--key-sizes``, ``--key-slots``,
    ``--tag-width``, ``--option``). Raises :class:`ValueError` naming the parameter, and the
    core for an option its class does not take."""
    from ..cores import make_core as make
    name = name or args.core
    options = dict(getattr(args, "option", None) or ())
    try:
        return make(name, key_slots=args.key_slots, tag_width=args.tag_width,
                    key_sizes=args.key_sizes, **options)
    except TypeError as e:      # an option the core class does not take
        raise ValueError(f"{name}: {e}") from None


def core_text(args):
    """How reports name the core ``args`` describe: ``drab-locus (key_sizes=128,
    key_slots=1)`` and any ``--option``."""
    sizes = ",".join(map(str, args.key_sizes))
    extra = "".join(f", {k}={v!r}" for k, v in (getattr(args, "option", None) or ()))
    return f"{args.core} (key_sizes={sizes}, key_slots={args.key_slots}{extra})"


def prepare_tools(*, nextpnr=False):
    """Before a command runs Yosys (and with ``nextpnr``, nextpnr-ecp5): when a yowasp tool
    has not yet been compiled from WebAssembly on this machine (once, about 40 s), say so on
    standard error and tick while it happens, instead of a silent first run."""
    from ..flow.yosys import prepare_nextpnr_ecp5, prepare_yosys
    prepare_yosys(note)
    if nextpnr:
        prepare_nextpnr_ecp5(note)


def cannot_write(path):
    """Why ``path`` cannot be written as a file (an ``OSError``'s text), or ``None``.

    Writing is tried, so that every reason (a missing or read-only folder, a file system
    that refuses new files, permissions root does not bypass) is found before any work: an
    existing file is opened for writing without being truncated, a new one is created and
    removed again. A run that then fails leaves no output file behind, and an existing one as
    it was."""
    p = Path(path)
    if p.is_dir():
        return os.strerror(errno.EISDIR)
    if p.exists() and not p.is_file():
        # A pipe or a device (/dev/stdout): opening it to try could block; ask instead.
        return None if os.access(p, os.W_OK) else os.strerror(errno.EACCES)
    try:
        if p.exists():
            os.close(os.open(p, os.O_WRONLY))
        else:
            os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            p.unlink()
    except OSError as e:
        return e.strerror
    return None


def cannot_read(path):
    """Why ``path`` cannot be read as a file (an ``OSError``'s text), or ``None``; opening it
    is tried, nothing is read."""
    p = Path(path)
    if p.is_dir():
        return os.strerror(errno.EISDIR)
    if p.exists() and not p.is_file():
        # A pipe or a device (/dev/stdin): opening it to try could block or lose data.
        return None
    try:
        os.close(os.open(p, os.O_RDONLY))
    except OSError as e:
        return e.strerror
    return None


def write_atomically(path, data):
    """Write ``data`` to ``path`` through a temporary file beside it, renamed to ``path`` only
    once every byte is written and flushed: ``path`` is the whole new file or, on any failure
    (an ``OSError`` is raised), as it was, and no temporary file is left. The file gets the
    permissions an existing ``path`` had, or those a new file gets (the umask's). A pipe or a
    device (``/dev/stdout``) is written directly: it cannot be renamed over."""
    p = Path(path)
    if p.exists() and not p.is_file():
        with open(p, "wb") as f:
            f.write(data)
        return
    if p.exists():
        mode = p.stat().st_mode & 0o7777
    else:
        umask = os.umask(0o022)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, temp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".part")
    try:
        os.chmod(temp, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise

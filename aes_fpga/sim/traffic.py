"""Cycle-accurate stream traffic in Amaranth's simulator, and the core benchmark built on it.

Every testbench counts its own clock edges from time 0, so cycle numbers agree across them: a
transfer "at cycle k" is one where valid and ready were both high between edges k and k+1.

- :func:`run_streams` offers payloads on any component's input streams and takes payloads from
  its output stream with a given ready pattern, recording the cycle of every transfer;
- :func:`run_core` uses it to offer a scripted sequence of key loads and requests to a core and
  records at which cycle each request was accepted and each result delivered;
- :func:`bench` drives saturating traffic through a core, checks every result against
  :mod:`aes_fpga.model` and reports latency and throughput in cycles.
"""

import random
from collections import defaultdict, deque

from .. import model
from .rerun import Rerunnable, kept

__all__ = ["run_streams", "run_core", "bench", "OP_PATTERNS", "WrongResult"]

#: Request op sequences :func:`bench` can generate (``n`` = request number).
OP_PATTERNS = ("alternate", "encrypt", "decrypt", "random")



class WrongResult(RuntimeError):
    """A simulated design answered, but not what the model says: its figures mean nothing.

    A :class:`RuntimeError` like a stall, so a caller that only reports "no figures" can catch
    both; one that tells them apart catches this first.
    """


_KEY_BITS = {16: 0, 24: 1, 32: 2}   # key length in bytes -> KeyBits value of the interface


def run_core(dut, *, requests, rk_writes=(), o_ready=lambda cycle: True, max_cycles=20000):
    """Offer a sequence of key loads and requests to ``dut`` and record what happened when.

    Parameters
    ----------
    dut : amaranth.lib.wiring.Component
        A core with the ``i``/``o`` streams of :mod:`aes_fpga.cores.interface`, plus ``rk``
        and/or ``key`` streams if the sequence loads keys.
    requests : iterable of dict
        In order, each one of:

        - a request: ``block``, ``op``, ``slot``, ``tag`` and an optional ``"wait"`` (idle cycles
          on ``i`` before offering it), offered on ``i``;
        - ``{"rk": [...]}``: round-key writes (dicts of
          :func:`~aes_fpga.cores.interface.round_key_write_layout` fields) offered on ``rk``;
        - ``{"key": {"key": int, "key_bits": 0 | 1 | 2, "slot": n}}``: a key load offered on
          ``key`` (a 128/192-bit key sits in the most significant bits of the 256).

        The core decides when a key load may happen (e.g. not while blocks are in flight); the
        driver offers one item at a time, in order, so a request after a key load waits for it.
    rk_writes : iterable of dict, optional
        Round-key writes offered before everything in ``requests``.
    o_ready : callable, optional
        ``o.ready`` at cycle ``c`` is ``o_ready(c)``; always ready by default.
    max_cycles : int, optional
        Neither side runs past this cycle, so a core that stops accepting or answering cannot
        hang the caller: the lists returned are then incomplete.

    Returns
    -------
    accepted : list of (int, dict)
        ``(cycle, request)`` for each request accepted on ``i``, in order.
    results : list of (int, int, int)
        ``(cycle, block, tag)`` for each result taken from ``o``, in output order.

    Raises
    ------
    ValueError
        If the sequence loads keys through a stream ``dut`` does not have.
    """
    items = ([{"rk": list(rk_writes)}] if rk_writes else []) + list(requests)
    for port in ("rk", "key"):
        if any(port in r for r in items) and not hasattr(dut, port):
            raise ValueError(f"requests: {port!r} items need a core with a {port!r} stream; "
                             f"{type(dut).__name__} has none")
    offers, blocks = [], []
    for item in items:
        if "rk" in item:
            offers += [("rk", w) for w in item["rk"]]
        elif "key" in item:
            offers.append(("key", item["key"]))
        else:
            blocks.append((len(offers), item))
            offers.append(("i", {k: v for k, v in item.items() if k != "wait"},
                           item.get("wait", 0)))
    taken, outputs = run_streams(dut, offers, count=len(blocks), o_ready=o_ready,
                                 max_cycles=max_cycles)
    accepted = [(taken[n], req) for n, req in blocks if n < len(taken)]
    results = [(cycle, p.block, p.tag) for cycle, p in outputs]
    return accepted, results


def run_streams(dut, offers, *, count, output="o", o_ready=lambda cycle: True,
                max_cycles=20000):
    """Offer payloads on ``dut``'s input streams one at a time, in order, and take ``count``
    payloads from its output stream, recording the cycle of every transfer.

    Parameters
    ----------
    dut : amaranth.lib.wiring.Component
        Any component with the named :class:`amaranth.lib.stream.Signature` ports.
    offers : iterable of tuple
        ``(stream, payload)`` or ``(stream, payload, wait)``: the name of an input stream of
        ``dut``, a payload it accepts (an int, or a dict for a structure), and idle cycles
        before offering it (``wait``, default 0). An offer is held valid until taken; the next
        one is offered in the cycle after, so back-to-back offers on one stream keep ``valid``
        high, and an offer on another stream starts only once the previous one was taken.
    count : int
        Payloads to take from ``output``.
    output : str, optional
        The name of ``dut``'s output stream.
    o_ready : callable, optional
        ``ready`` of ``output`` at cycle ``c`` is ``o_ready(c)``; always ready by default.
    max_cycles : int, optional
        Neither side runs past this cycle, so a design that stops accepting or answering cannot
        hang the caller: the lists returned are then shorter than asked.

    Returns
    -------
    taken : list of int
        The cycle each offer was taken in, in order.
    outputs : list of (int, payload)
        ``(cycle, payload)`` for each payload taken from ``output``, the payload as
        ``ctx.get`` reads it (an int, or a :class:`amaranth.lib.data.Const` for a layout).

    Raises
    ------
    ValueError
        If ``dut`` has no stream of a name given.
    """
    offers = [(o[0], o[1], o[2] if len(o) > 2 else 0) for o in offers]
    for name in dict.fromkeys([output, *(o[0] for o in offers)]):
        if not hasattr(dut, name):
            raise ValueError(f"{type(dut).__name__} has no stream {name!r}")
    job = _Job(offers, count, o_ready, max_cycles)
    _harness(dut, output).run(job)
    return job.taken, job.outputs


class _Job:
    """One :func:`run_streams` call: what to offer and take, and what happened."""

    def __init__(self, offers, count, o_ready, max_cycles):
        self.offers, self.count, self.o_ready, self.max_cycles = offers, count, o_ready, max_cycles
        self.taken, self.outputs = [], []


class _Harness:
    """A simulation of one component with the two testbenches of :func:`run_streams`, which
    read what to do from the current :class:`_Job`: a :class:`~aes_fpga.sim.rerun.Rerunnable`,
    reset rather than built again when the component is simulated again."""

    def __init__(self, dut, output):
        self.dut, self.output, self.job = dut, output, None
        self.sim = Rerunnable(dut, [self._send, self._receive])

    def run(self, job):
        self.job = job
        self.sim.run()

    async def _send(self, ctx):
        job, cycle = self.job, 0
        for name, payload, wait in job.offers:
            port = getattr(self.dut, name)
            for _ in range(wait):
                await ctx.tick()
                cycle += 1
            ctx.set(port.payload, payload)
            ctx.set(port.valid, 1)
            while cycle < job.max_cycles:
                ready = ctx.get(port.ready)
                await ctx.tick()
                cycle += 1
                if ready:
                    break
            else:
                return
            job.taken.append(cycle - 1)
            # A transfer is over once taken: an item left valid while the next one waits (or
            # goes to another stream) would be a second, unintended transfer.
            ctx.set(port.valid, 0)

    async def _receive(self, ctx):
        job, port, cycle = self.job, getattr(self.dut, self.output), 0
        while len(job.outputs) < job.count and cycle < job.max_cycles:
            ready = bool(job.o_ready(cycle))
            ctx.set(port.ready, ready)
            if ready and ctx.get(port.valid):
                job.outputs.append((cycle, ctx.get(port.payload)))
            await ctx.tick()
            cycle += 1


def _harness(dut, output):
    """The simulation of ``dut`` for ``output``, kept on the component."""
    return kept(dut, ("run_streams", output), lambda: _Harness(dut, output))


def _ops(pattern, blocks, rng):
    if pattern == "alternate":   # every other block decrypts: both directions share the ring
        return [n % 2 for n in range(blocks)]
    if pattern == "encrypt":
        return [0] * blocks
    if pattern == "decrypt":
        return [1] * blocks
    if pattern == "random":
        return [rng.randrange(2) for _ in range(blocks)]
    raise ValueError(f"op_pattern: {pattern!r} is not known; choose from "
                     f"{', '.join(OP_PATTERNS)}")


def bench(dut, *, key_bytes, blocks, op_pattern="alternate", seed=0, load=None, slot=0,
          max_cycles=None):
    """Saturate ``dut`` with requests, verify every result and measure latency and throughput.

    One key is loaded into ``slot``, then ``blocks`` random blocks are offered back to back on
    ``i`` (``i.valid`` is never dropped while requests remain) and ``o.ready`` is always high,
    so the core alone sets the pace.

    Parameters
    ----------
    dut : amaranth.lib.wiring.Component
        A core with the streams of :mod:`aes_fpga.cores.interface`, simulated from its initial
        state (a component simulated before is reset, not built again).
    key_bytes : bytes or int
        The key (16, 24 or 32 bytes), or its length in bytes, in which case a key of that length
        is drawn from ``seed``.
    blocks : int
        Requests to send, at least 1.
    op_pattern : str, optional
        ``"alternate"`` (request ``n`` has op ``n % 2``: encryptions and decryptions
        interleaved), ``"encrypt"``, ``"decrypt"`` or ``"random"`` (from ``seed``).
    seed : int, optional
        Seeds the blocks (and the key and ops where drawn).
    load : {"key", "rk", None}, optional
        How the key gets into the core: ``"key"`` sends it on the ``key`` stream (the core
        expands it); ``"rk"`` writes both ops' round keys from
        :func:`aes_fpga.cores.drab_locus.round_key_writes` on ``rk``. None picks ``"key"`` if
        the core has a ``key`` stream, else ``"rk"``.
    slot : int, optional
        Key slot to load and use.
    max_cycles : int, optional
        Simulation bound; by default generous for any core of this library
        (``10000 + 200 * blocks``).

    Returns
    -------
    dict
        ``blocks``; ``key_bits`` (128/192/256); ``load``; ``op_pattern``;
        ``latency_cycles``: cycles from a request's acceptance to its result (result cycle minus
        accept cycle), if the same for every block, else None; ``latency_min`` and
        ``latency_max``; ``first_accept`` and ``last_result``: their cycle numbers;
        ``cycles``: ``last_result - first_accept + 1``, the clock cycles from the one in which
        the first request was taken up to and including the one in which the last result was
        taken (key loading before the first request is not counted, pipeline fill and drain
        are); ``blocks_per_cycle``: ``blocks / cycles``; ``verified``: True (every result
        matched :func:`aes_fpga.model.encrypt_block` / :func:`~aes_fpga.model.decrypt_block`).

    Raises
    ------
    WrongResult
        If a result differs from the model or answers no outstanding request: a benchmark of
        wrong answers must not produce figures.
    RuntimeError
        If ``max_cycles`` comes before every request is accepted and answered (a core that
        stalls or loses a block).
    ValueError
        For a bad argument, or a ``load`` the core has no stream for.
    """
    if not isinstance(blocks, int) or blocks < 1:
        raise ValueError(f"blocks: {blocks!r} is out of range; allowed 1 or more")
    rng = random.Random(seed)
    if isinstance(key_bytes, int) and not isinstance(key_bytes, bool):
        if key_bytes not in _KEY_BITS:
            raise ValueError(f"key_bytes: {key_bytes!r} is not a key length; allowed 16, 24, 32")
        key = rng.randbytes(key_bytes)
    elif isinstance(key_bytes, (bytes, bytearray)) and len(key_bytes) in _KEY_BITS:
        key = bytes(key_bytes)
    else:
        raise ValueError(f"key_bytes: {key_bytes!r} is neither a 16, 24 or 32-byte key nor one "
                         f"of the lengths 16, 24, 32")
    if load is None:
        load = "key" if hasattr(dut, "key") else "rk"
    if load not in ("key", "rk"):
        raise ValueError(f"load: {load!r} is not known; choose from 'key', 'rk'")
    if not hasattr(dut, load):
        raise ValueError(f"load: {load!r} needs a core with a {load!r} stream; "
                         f"{type(dut).__name__} has none")
    if max_cycles is None:
        max_cycles = 10000 + 200 * blocks

    if load == "key":
        # The interface puts a shorter key in the most significant bits of the 256.
        key_int = int.from_bytes(key, "big") << (256 - 8 * len(key))
        items = [{"key": {"key": key_int, "key_bits": _KEY_BITS[len(key)], "slot": slot}}]
    else:
        from ..cores.drab_locus import round_key_writes
        items = [{"rk": round_key_writes(key, 0, slot) + round_key_writes(key, 1, slot)}]

    ops = _ops(op_pattern, blocks, rng)
    tag_mask = (1 << len(dut.i.payload.tag)) - 1
    reqs = [{"block": rng.getrandbits(128), "op": op, "slot": slot, "tag": n & tag_mask}
            for n, op in enumerate(ops)]
    accepted, results = run_core(dut, requests=items + reqs, max_cycles=max_cycles)

    # Tags wrap (tag_width bits), so a result answers the oldest outstanding request with its
    # tag. That is right whenever blocks with equal tags leave in the order they came in: when
    # tags are unique among the blocks in flight, or when the core keeps order (it does for
    # one key length, and every block here uses the same key).
    outstanding = defaultdict(deque)
    for n, (cycle, req) in enumerate(accepted):
        outstanding[req["tag"]].append((cycle, n, req))
    latencies = []
    for cycle, block, tag in results:
        if not outstanding[tag]:
            raise WrongResult(f"result 0x{block:032x} with tag {tag} at cycle {cycle} "
                                 f"answers no outstanding request")
        acc_cycle, n, req = outstanding[tag].popleft()
        f = model.encrypt_block if req["op"] == 0 else model.decrypt_block
        expected = f(key, req["block"])
        if block != expected:
            raise WrongResult(
                f"request {n} ({'decrypt' if req['op'] else 'encrypt'} 0x{req['block']:032x}, "
                f"AES-{8 * len(key)} key {key.hex()}, tag {tag}): result at cycle {cycle} is "
                f"0x{block:032x}, the model says 0x{expected:032x}")
        latencies.append(cycle - acc_cycle)
    # Checked after the results that did arrive, so a wrong answer is reported as such even
    # when the core also stalled.
    if len(accepted) < blocks or len(results) < blocks:
        raise RuntimeError(f"simulation stopped at max_cycles={max_cycles}: {len(accepted)} of "
                           f"{blocks} requests accepted, {len(results)} results delivered")

    first_accept = accepted[0][0]
    last_result = results[-1][0]
    cycles = last_result - first_accept + 1
    lo, hi = min(latencies), max(latencies)
    return {
        "blocks": blocks,
        "key_bits": 8 * len(key),
        "load": load,
        "op_pattern": op_pattern,
        "latency_cycles": lo if lo == hi else None,
        "latency_min": lo,
        "latency_max": hi,
        "first_accept": first_accept,
        "last_result": last_result,
        "cycles": cycles,
        "blocks_per_cycle": blocks / cycles,
        "verified": True,
    }

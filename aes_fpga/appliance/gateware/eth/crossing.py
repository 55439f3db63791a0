"""A clock domain crossing FIFO whose read side starts every path at a register: for a reader
at 125 MHz on a slow FPGA (the RGMII transmitter)."""

from amaranth.hdl import Cat, Module, Mux, ResetSignal, Signal
from amaranth.lib import cdc, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["ReadRegisteredAsyncFIFO"]


def gray(value):
    """The Gray code of the unsigned ``value``."""
    return value ^ (value >> 1)


def plus(value, n):
    """``value + n`` in ``value``'s width (a pointer wraps)."""
    return (value + n)[:len(value)]


def from_gray(code):
    """The unsigned value of the Gray code ``code``: each bit the XOR of itself and those
    above it."""
    bits = [code[-1]]
    for k in reversed(range(len(code) - 1)):
        bits.insert(0, bits[0] ^ code[k])
    return Cat(*bits)


class ReadRegisteredAsyncFIFO(wiring.Component):
    """An asynchronous FIFO (Gray-coded pointers, each synchronised by two flip-flops into the
    other domain) with the ports of :class:`amaranth.lib.fifo.AsyncFIFO` that a stream needs:
    ``w_en``, ``w_data``, ``w_rdy`` in ``w_domain``; ``r_en``, ``r_data``, ``r_rdy`` and
    ``r_level`` in ``r_domain``.

    What differs: ``r_rdy`` is a flip-flop (whether the FIFO is empty, registered), and
    ``r_data`` is the storage's asynchronous read (LUT RAM) at the read pointer, itself a
    flip-flop. So a reader that decides ``r_en`` from ``r_rdy`` and registers ``r_data`` has
    no path through the pointers' comparison, their adder or the storage's address, where
    :class:`~amaranth.lib.fifo.AsyncFIFO` runs from its comparison through the reader's
    ``r_en`` and the pointer's adder into its read port's address.

    Latency: an entry written is readable after the third read clock edge following the
    write's (two synchroniser stages and the registered empty flag: one edge more than
    :class:`~amaranth.lib.fifo.AsyncFIFO`). Throughput: one entry a cycle each
    side. ``r_level`` (entries readable, from the synchronised write pointer: it may lag)
    is combinational. Reset: the write domain's; the read side follows it through an
    :class:`~amaranth.lib.cdc.AsyncFFSynchronizer` and empties itself.

    Parameters
    ----------
    width : int
        Bits of an entry.
    depth : int
        Entries (a power of 2, 2 or more).
    w_domain, r_domain : str
        The write and the read clock domains.
    """

    def __init__(self, *, width, depth, w_domain, r_domain):
        if not isinstance(depth, int) or depth < 2 or depth & (depth - 1):
            raise ValueError(f"depth: {depth!r} is not a power of 2 of at least 2")
        self.width = width
        self.depth = depth
        self.w_domain = w_domain
        self.r_domain = r_domain
        super().__init__({
            "w_en": In(1), "w_data": In(width), "w_rdy": Out(1),
            "r_en": In(1), "r_data": Out(width), "r_rdy": Out(1),
            "r_level": Out(range(depth + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        bits = self.depth.bit_length()          # the address and a wrap bit
        w, r = m.d[self.w_domain], m.d[self.r_domain]
        m.submodules.storage = storage = Memory(shape=self.width, depth=self.depth, init=[])
        w_port = storage.write_port(domain=self.w_domain)
        r_port = storage.read_port(domain="comb")

        # Read side's pointer in Gray code, first: it crosses to the write side.
        consume_r_gry = Signal(bits, reset_less=True)

        # Write side: the pointer in binary (the address) and in Gray code (what crosses).
        produce_w_bin = Signal(bits)
        produce_w_gry = Signal(bits)
        consume_w_gry = Signal(bits)
        m.submodules.consume_cdc = cdc.FFSynchronizer(consume_r_gry, consume_w_gry,
                                                      o_domain=self.w_domain)
        full = ((produce_w_gry[-2:] == ~consume_w_gry[-2:])
                & (produce_w_gry[:-2] == consume_w_gry[:-2]))
        do_write = self.w_en & ~full
        m.d.comb += [self.w_rdy.eq(~full), w_port.addr.eq(produce_w_bin[:-1]),
                     w_port.data.eq(self.w_data), w_port.en.eq(do_write)]
        with m.If(do_write):
            w += [produce_w_bin.eq(plus(produce_w_bin, 1)),
                  produce_w_gry.eq(gray(plus(produce_w_bin, 1)))]

        # Read side: the pointer in binary (the address) and in Gray code (the comparison),
        # and the Gray code of the pointer after the next read, kept in a register, so the
        # empty flag's next value is two comparisons and a multiplexer. Reset comes from the
        # write side (whose pointer restarts at zero): these are reset_less and follow it.
        produce_r_gry = Signal(bits)
        m.submodules.produce_cdc = cdc.FFSynchronizer(produce_w_gry, produce_r_gry,
                                                      o_domain=self.r_domain)
        consume_r_bin = Signal(bits, reset_less=True)
        after_gry = Signal(bits, init=1, reset_less=True)     # gray(consume_r_bin + 1)
        empty = Signal(init=1)
        do_read = self.r_en & ~empty
        m.d.comb += [self.r_rdy.eq(~empty), r_port.addr.eq(consume_r_bin[:-1]),
                     self.r_data.eq(r_port.data),
                     self.r_level.eq(from_gray(produce_r_gry) - consume_r_bin)]
        r += empty.eq(Mux(do_read, after_gry == produce_r_gry, consume_r_gry == produce_r_gry))
        with m.If(do_read):
            r += [consume_r_bin.eq(plus(consume_r_bin, 1)), consume_r_gry.eq(after_gry),
                  after_gry.eq(gray(plus(consume_r_bin, 2)))]

        r_rst = Signal()
        m.submodules.rst_cdc = cdc.AsyncFFSynchronizer(
            ResetSignal(self.w_domain, allow_reset_less=True), r_rst, o_domain=self.r_domain)
        with m.If(r_rst):
            start = from_gray(produce_r_gry)
            r += [consume_r_bin.eq(start), consume_r_gry.eq(produce_r_gry),
                  after_gry.eq(gray(plus(start, 1))), empty.eq(1)]
        return m

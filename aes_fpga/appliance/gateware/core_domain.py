"""A core in a clock domain of its own, behind the same stream interface in ``sync``."""

from amaranth.hdl import DomainRenamer, Module
from amaranth.lib import cdc, fifo, wiring

from ...cores.interface import core_members
from ...stage import HoldStage

__all__ = ["CoreDomain"]


class CoreDomain(wiring.Component):
    """``core`` clocked by ``domain``, its ``key``, ``i`` and ``o`` streams crossing to and
    from ``sync`` through :class:`~amaranth.lib.fifo.AsyncFIFO` s: the common core interface
    (:mod:`aes_fpga.cores.interface`) again, so a mode engine takes it as it takes the core.

    It lets the byte-serial network layers run at the line's byte clock (125 MHz at
    1000 Mbit/s) while the core keeps the clock it closes timing at: a core of a block per
    ``n`` of its cycles at ``f`` MHz gives ``16 f / n`` MB/s whatever ``sync`` is.

    Throughput: a block a cycle into the core and one every other ``sync`` cycle out of it
    (the results leave through a :class:`~aes_fpga.stage.HoldStage`; the core's own rate is
    the limit). Latency: the core's, plus each crossing's (the write, two synchroniser
    stages of the other domain and the read: about 3 cycles of the reading domain and 1 of
    the writing one, each way), plus a cycle of ``sync`` for the results' stage.
    Back-pressure on ``o`` fills ``o``'s FIFO, then stalls the core, then fills
    ``i``'s FIFO; nothing is lost. ``key_rejected`` crosses as a pulse
    (:class:`~amaranth.lib.cdc.PulseSynchronizer`).

    Order: a key and the requests written after it cross through FIFOs of equal latency, the
    key's first, so a request never reaches the core before a key written a cycle or more
    earlier (a key and a request written in the same ``sync`` cycle may arrive together, as
    they would at the core itself).

    Reset: the FIFOs empty on their write domain's reset; ``domain``'s reset must come with
    ``sync``'s (a board's reset synchroniser per clock, from one source).

    Parameters
    ----------
    core : a core with the common interface (``key``, ``i``, ``o``, ``key_rejected``)
    domain : str
        The core's clock domain (not ``sync``).
    depth : int
        Entries of the request and result FIFOs (a power of 2; 16 covers the crossings' round
        trip at a block a cycle).
    """

    def __init__(self, core, *, domain="core", depth=16):
        if not isinstance(domain, str) or not domain.isidentifier() or domain == "sync":
            error = f"domain: {domain!r} is not a clock domain name other than 'sync'"
        elif not isinstance(depth, int) or depth < 4 or depth & (depth - 1):
            error = f"depth: {depth!r} is not a power of 2 from 4"
        else:
            error = None
        if error is not None:
            self._MustUse__used = True      # refused: never elaborated
            raise ValueError(error)
        self.core = core
        self.domain = domain
        self.depth = depth
        self.key_slots = core.key_slots
        self.key_sizes = core.key_sizes
        self.tag_width = core.o.payload.shape().size - 128
        super().__init__(core_members(self.key_slots, self.tag_width))

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = DomainRenamer(self.domain)(self.core)
        for name, depth, into_core in (("key", 4, True), ("i", self.depth, True),
                                       ("o", self.depth, False)):
            outer, inner = getattr(self, name), getattr(core, name)
            width = outer.payload.shape().size
            w_domain, r_domain = ("sync", self.domain) if into_core else (self.domain, "sync")
            m.submodules[f"{name}_fifo"] = f = fifo.AsyncFIFO(
                width=width, depth=depth, w_domain=w_domain, r_domain=r_domain)
            source, sink = (outer, inner) if into_core else (inner, outer)
            if not into_core:
                # The results leave through a register both ways: the reader's ``ready`` (in
                # an appliance, the end of a chain from its reply stream) then stops here,
                # not in the FIFO's read pointer and read port.
                m.submodules.o_stage = stage = HoldStage(outer.payload.shape())
                sink = stage.i
                wiring.connect(m, stage.o, wiring.flipped(outer))
            m.d.comb += [f.w_en.eq(source.valid), f.w_data.eq(source.payload),
                         source.ready.eq(f.w_rdy),
                         sink.valid.eq(f.r_rdy), sink.payload.eq(f.r_data),
                         f.r_en.eq(sink.ready)]
        m.submodules.rejected = pulse = cdc.PulseSynchronizer(self.domain, "sync")
        m.d.comb += [pulse.i.eq(core.key_rejected), self.key_rejected.eq(pulse.o)]
        return m

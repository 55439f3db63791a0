"""What the three T-table datapaths and cores share: their options and ports, the all-zero key's
round keys their memories start with, the eight-place ring of the basic and round modules, the
output FIFO, and the core made of a datapath behind the key schedule."""

from types import SimpleNamespace

from amaranth.hdl import Cat, Signal
from amaranth.lib import fifo, wiring

from ..interface import check_core_options, datapath_members

__all__ = ["zero_key_writes", "TTableDatapath", "shift_ring", "admit"]


def zero_key_writes(key_slots, key_bits):
    """The round-key writes (``(slot, op, write)``, ``write`` as
    :func:`~aes_fpga.cores.drab_locus.round_key_writes` gives it) of the all-zero key of
    ``key_bits`` in every key slot and op: what a round-key memory holds before any key is
    loaded."""
    from ..drab_locus import round_key_writes
    for slot in range(key_slots):
        for op in (0, 1):
            for w in round_key_writes(bytes(key_bits // 8), op, slot):
                yield slot, op, w


class TTableDatapath(wiring.Component):
    """What every T-table datapath has: the options, checked, and the datapath ports
    (:func:`~aes_fpga.cores.interface.datapath_members`).

    Parameters
    ----------
    key_slots, tag_width, key_sizes
        As for :class:`~aes_fpga.cores.ttable.round.TTableRoundDatapath`.
    fifo_depth : int or None
        Output FIFO depth; None (only where a subclass sets its own default) is checked as 1.
    """

    def __init__(self, *, key_slots=1, tag_width=8, fifo_depth=16, key_sizes=(128, 192, 256)):
        self.key_sizes = check_core_options(self, key_slots, tag_width,
                                            1 if fifo_depth is None else fifo_depth, key_sizes)
        self.key_slots = key_slots
        self.tag_width = tag_width
        self.fifo_depth = fifo_depth
        super().__init__(datapath_members(key_slots, tag_width))

    @property
    def slot_bits(self):
        """Width of a key-slot number."""
        return max(1, (self.key_slots - 1).bit_length())

    def output_fifo(self, m):
        """The output FIFO (submodule ``ofifo``, ``fifo_depth`` results with their tags)."""
        m.submodules.ofifo = ofifo = fifo.SyncFIFO(
            width=len(self.o.payload.as_value()), depth=self.fifo_depth)
        return ofifo

    def write_results(self, m, ofifo, block, tag, write):
        """Put ``block`` and ``tag`` into ``ofifo`` when ``write``; ``o`` is the FIFO's output."""
        m.d.comb += [
            ofifo.w_data.eq(Cat(block, tag)),
            ofifo.w_en.eq(write),
            self.o.valid.eq(ofifo.r_rdy),
            self.o.payload.eq(ofifo.r_data),
            ofifo.r_en.eq(self.o.ready),
        ]


def shift_ring(m, ring, stage):
    """Move the records of a ring (``stage``, one per place, from
    :meth:`~aes_fpga.cores.ring.RingControl.records` with an ``rnd`` counter) one place a
    cycle. The block at the last place finishes its round at the next cycle; after its last
    round it leaves, and its place may take a new block in that same cycle.

    Returns
    -------
    tail : Value
        The record at the last place.
    leaving : Signal
        The block at the last place has done its last round.
    free : Signal
        The first place may take a new block: as ``leaving | ~tail.valid``, but from a
        flip-flop (registered from the place before the last).
    """
    n = len(stage)
    for k in range(n - 1):
        m.d.sync += stage[k + 1].eq(stage[k])
    tail = stage[n - 1]
    leaving = Signal()
    m.d.comb += leaving.eq(tail.valid & (tail.rnd == ring.nr_of(tail)))
    free = Signal(init=1)
    pre = stage[n - 2]
    m.d.sync += free.eq(~pre.valid | (pre.rnd == ring.nr_of(pre)))
    return tail, leaving, free


def admit(m, datapath, ring, stage, tail, leaving, free):
    """The entry of a ring of :func:`shift_ring`: a request is accepted when ``free`` (from
    flip-flops: :func:`shift_ring`'s, with any condition of the datapath's own) says the
    first place may take it, its key slot is not locked, no round key is written in this
    cycle (the write port also reads the initial key) and its result will have room in the
    output FIFO. Every term of ``i.ready`` is a flip-flop (or a lookup by the request's key
    slot), so ``accept`` is one LUT and what it drives at most one more. The first place
    takes the accepted block (round 1), or the record at the last place (its round counted
    on, or emptied when it leaves).

    Returns
    -------
    SimpleNamespace
        ``accept`` (a request is taken now), ``rk_write`` (to be driven: a round-key write is
        accepted now), ``exit_now`` and ``exit_kslot`` (to be driven: a result and its key
        slot go into the output FIFO now) and ``slot_busy`` (one flip-flop per key slot, from
        :meth:`~aes_fpga.cores.ring.RingControl.slots_busy`).
    """
    req = datapath.i.payload
    accept = Signal()
    exit_now = Signal()
    exit_kslot = Signal(datapath.slot_bits)
    rk_write = Signal()
    slot_locked = Signal()
    full = ring.output_full(m, accept)
    slot_busy = ring.slots_busy(m, accept, exit_now, exit_kslot)
    m.d.comb += [
        slot_locked.eq(ring.locked()),
        datapath.i.ready.eq(free & ~slot_locked & ~rk_write & ~full),
        accept.eq(datapath.i.valid & datapath.i.ready),
    ]
    entry = ring.entry(req, rnd=1)
    with m.If(accept):
        m.d.sync += [getattr(stage[0], f).eq(v) for f, v in entry.items()]
    with m.Elif(leaving):
        m.d.sync += [stage[0].eq(tail), stage[0].valid.eq(0)]
    with m.Else():
        m.d.sync += [stage[0].eq(tail), stage[0].rnd.eq(tail.rnd + 1)]
    return SimpleNamespace(accept=accept, rk_write=rk_write, exit_now=exit_now,
                           exit_kslot=exit_kslot, slot_busy=slot_busy)

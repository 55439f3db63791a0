"""Control shared by the ring datapaths (DRAB-LOCUS and the T-table cores): each block's record
as it travels round the pipeline, each key slot's round count, and the key-slot lock.

A ring datapath keeps one record per place of its pipeline (``valid``, ``op``, a round or pass
counter, the key ``kslot`` and the ``tag``, plus ``nr`` when the key length may vary) and
shifts it with the block, so every stage reads its block's state at a fixed place. The round
count of a block comes from its key slot, written by the key schedule with the slot's first
round key; with one key length it is a constant and no ``nr`` field or table exists.
"""

from amaranth.hdl import Array, Const, Signal
from amaranth.lib import data

__all__ = ["RingControl"]


class RingControl:
    """Records, round counts and the slot lock of a ring datapath with a key-schedule
    interface (:func:`~.interface.datapath_members`).

    Parameters
    ----------
    datapath
        The datapath (its ``key_slots``, ``tag_width``, ``fifo_depth``, ``lock``,
        ``lock_slot``, ``rk``, ``i`` and ``o`` are used).
    round_counts : iterable of int
        The round counts ``Nr`` its keys may have; the smallest is each slot's initial count.
    counter : (str, int)
        Name and width of the record's round (or pass) counter.
    tags : bool
        Whether the record carries the request's tag (a datapath may keep the tags elsewhere).

    Attributes
    ----------
    fixed_nr : int or None
        The round count when there is only one.
    layout : StructLayout
        A block's record.
    slot_nr : Array of Signal(4)
        Each key slot's round count (only with several).
    """

    def __init__(self, datapath, round_counts, *, counter=("rnd", 4), tags=True):
        nrs = sorted(set(round_counts))
        self.datapath = datapath
        self.fixed_nr = nrs[0] if len(nrs) == 1 else None
        kbits = max(1, (datapath.key_slots - 1).bit_length())
        name, width = counter
        fields = {"valid": 1, "op": 1, name: width, "kslot": kbits}
        if tags:
            fields["tag"] = datapath.tag_width
        self.tags = tags
        if self.fixed_nr is None:
            fields["nr"] = 4
        self.layout = data.StructLayout(fields)
        self._initial_nr = nrs[0]
        self._slot_nr = None

    def records(self, count, name="stage{}"):
        """``count`` record signals, named ``name.format(k)``."""
        return [Signal(self.layout, name=name.format(k)) for k in range(count)]

    @property
    def slot_nr(self):
        if self._slot_nr is None:
            self._slot_nr = Array(Signal(4, init=self._initial_nr, name=f"nr{k}")
                                  for k in range(self.datapath.key_slots))
        return self._slot_nr

    def nr_of(self, record):
        """A record's round count."""
        return Const(self.fixed_nr, 4) if self.fixed_nr is not None else record.nr

    def nr_of_slot(self, slot):
        """The round count of key slot ``slot``."""
        return self.slot_nr[slot] if self.fixed_nr is None else Const(self.fixed_nr, 4)

    def entry(self, req, **counter):
        """The fields of a block entering the ring for request ``req`` (name -> value); the
        counter's start value is given by keyword (``rnd=1``, ``pass_=0``)."""
        fields = {"valid": 1, "op": req.op, **counter, "kslot": req.slot}
        if self.tags:
            fields["tag"] = req.tag
        if self.fixed_nr is None:
            fields["nr"] = self.slot_nr[req.slot]
        return fields

    def locked(self):
        """The request on ``i`` is for a key slot whose keys are being replaced: the key
        schedule locks it, or writes one of its round keys now."""
        dp = self.datapath
        req, rk = dp.i.payload, dp.rk.payload
        return (dp.lock & (dp.lock_slot == req.slot)) | (dp.rk.valid & (rk.slot == req.slot))

    def track_nr(self, m, write):
        """Keep each slot's round count: with several, the key schedule's ``nr`` is taken when
        ``write`` (a round-key write is accepted) carries the slot's first round key."""
        if self.fixed_nr is None:
            rk = self.datapath.rk.payload
            with m.If(write & (rk.index == 0)):
                m.d.sync += self.slot_nr[rk.slot].eq(rk.nr)

    def output_full(self, m, accept):
        """A flip-flop, high while the blocks accepted whose results have not been taken from
        ``o`` would fill the datapath's output FIFO (``fifo_depth`` entries): a block is
        accepted only while it is low, so every result has room and nothing is lost. It is
        registered with the count rather than compared with it, so ``i.ready`` takes it
        straight from a flip-flop."""
        dp = self.datapath
        fifo_depth = dp.fifo_depth
        used = Signal(range(fifo_depth + 1), name="used")
        full = Signal(name="full")
        taken = Signal(name="taken")
        m.d.comb += taken.eq(dp.o.valid & dp.o.ready)
        with m.If(accept & ~taken):
            m.d.sync += [used.eq(used + 1), full.eq(used == fifo_depth - 1)]
        with m.Elif(taken & ~accept):
            m.d.sync += [used.eq(used - 1), full.eq(0)]
        return full

    def slots_busy(self, m, accept, done, done_slot):
        """Flip-flops, one per key slot, high while a block of the slot is in the pipeline:
        counted up when ``accept`` takes a request for it and down when ``done`` (with the
        block's ``done_slot``) puts its result into the output FIFO; at most ``fifo_depth``
        at once, as :meth:`output_full` holds admission to that. Registered from the count
        and a block accepted now, the flag is one cycle conservative: a block that has left
        still counts for one more cycle."""
        dp = self.datapath
        req = dp.i.payload
        busy = Signal(dp.key_slots, name="slot_busy")
        for k in range(dp.key_slots):
            count = Signal(range(dp.fifo_depth + 1), name=f"inflight{k}")
            inc = accept & (req.slot == k)
            dec = done & (done_slot == k)
            m.d.sync += [count.eq(count + inc - dec), busy[k].eq((count != 0) | inc)]
        return busy

"""The sealed replies a device with a secret keeps for retransmitted records (spec
:mod:`aes_fpga.appliance.session_spec`, "Retransmissions"), as the reference device's
:class:`~aes_fpga.appliance.sessions.SessionState` keeps them: per session place the replies to
the records whose counters are among the ``W`` highest taken, each with its request's ``seq``.

A record whose counter is kept is answered with the kept reply, not run again. The reference
compares the whole request; here the record is opened first and a kept reply is given to a
record whose tag verified, with the kept counter and ``seq``: a genuine record is fixed by its
tag (its session, ``seq``, length, counter and bytes), so the two differ only for a forged
record that passes GCM's tag, which cannot be made without the session key. (A kept reply is
given only to a record of its session that verifies; it is a reply already on the wire.)

Layout: the window ``W`` is a power of two; the reply to counter ``c`` of place ``p`` is entry
``p W + (c mod W)`` (the ``W`` highest counters differ mod ``W``), whose payload bytes after
the status live in a block RAM at ``entry * stride``, ``stride`` the longest sealed reply's
bytes rounded up to a power of two. Cost: ``held * W * stride`` bytes of block RAM (4 KiB for
two places, window 1 and a 1044-byte max payload); per entry a 64-bit counter, a ``seq`` and a
length in a LUT RAM (:func:`kept_entry_layout`, read at the entry of the record held: no
multiplexer over the entries' registers), and a valid flag in a register (a new session
clears its place's flags at once).
"""

from amaranth.hdl import Cat, Const, Signal
from amaranth.lib import data
from amaranth.lib.memory import Memory

from .. import spec
from ..session_spec import RECORD_REPLY_OVERHEAD

__all__ = ["KeptRecords", "RamReader", "check_record_window", "kept_entry_layout"]


class RamReader:
    """A byte stream (``valid``, ``payload``, ``ready``) read from a block RAM's read port:
    :meth:`start` gives the first address and the count; each byte is read into the port, then
    into an output register (so the RAM's read ends at a flip-flop)."""

    def __init__(self, m, rport, depth, name):
        self.addr = Signal(range(depth), name=f"{name}_addr")
        self.left = Signal(range(depth + 1), name=f"{name}_left")
        self.r_valid = Signal(name=f"{name}_r_valid")
        self.valid = Signal(name=f"{name}_valid")
        self.payload = Signal(8, name=f"{name}_byte")
        self.ready = Signal(name=f"{name}_ready")
        fire = self.valid & self.ready
        move = Signal(name=f"{name}_move")
        issue = Signal(name=f"{name}_issue")
        m.d.comb += [move.eq(self.r_valid & (~self.valid | fire)),
                     issue.eq((self.left != 0) & (~self.r_valid | move)),
                     rport.en.eq(issue), rport.addr.eq(self.addr)]
        with m.If(issue):
            m.d.sync += [self.addr.eq(self.addr + 1), self.left.eq(self.left - 1),
                         self.r_valid.eq(1)]
        with m.Elif(move):
            m.d.sync += self.r_valid.eq(0)
        with m.If(move):
            m.d.sync += [self.payload.eq(rport.data), self.valid.eq(1)]
        with m.Elif(fire):
            m.d.sync += self.valid.eq(0)

    def start(self, addr, count):
        """The statements that start reading ``count`` bytes from ``addr`` (``sync``)."""
        return [self.addr.eq(addr), self.left.eq(count), self.r_valid.eq(0),
                self.valid.eq(0)]


def check_record_window(window):
    """A :class:`ValueError` unless ``window`` (the device's ``W``) suits a device with a
    secret: a power of two (the kept replies are indexed by the counter's low bits)."""
    if window & (window - 1):
        raise ValueError(f"window: a device with a secret needs a power of two, got {window}")


def kept_entry_layout():
    """What a kept reply's entry holds besides its bytes: its record's ``counter``, its
    request's ``seq`` and its payload's ``length`` (status included)."""
    return data.StructLayout({"counter": 64, "seq": 16, "length": range(spec.MAX_PAYLOAD + 1)})


class KeptRecords:
    """The kept sealed replies of ``held`` session places, window ``window``, replies of at most
    ``max_payload`` bytes after their status (see the module docstring).

    :meth:`datapath` builds it beside a :class:`~.session_records.RecordLayer` (its ``place``,
    ``counter`` and outer request give the entry); ``hit`` says the record opened is a kept
    one; :meth:`store` keeps the reply being sealed (its bytes are written as they leave);
    :attr:`reader` sends a kept reply's bytes again (:meth:`start_replay`)."""

    def __init__(self, held, window, max_payload):
        check_record_window(window)
        self.held, self.window = held, window
        self.bits = (window - 1).bit_length()
        self.stride = 1 << (max_payload + RECORD_REPLY_OVERHEAD - 1).bit_length()
        n = held * window
        self.valid = Signal(n, name="kept_record_valid")
        self.hit = Signal(name="kept_record_hit")
        #: The entry's reply length (status included), read at the record held.
        self.length = Signal(range(spec.MAX_PAYLOAD + 1), name="kept_record_length")
        self.at = Signal(range(self.stride), name="kept_record_at")
        self.depth = n * self.stride

    def datapath(self, m, layer, counters):
        """Build it in ``m``: the look-up of the record ``layer`` holds, the bytes of its sealed
        reply written as they leave, the place's entries dropped when ``counters`` start a
        new session there."""
        self.entry = entry = Signal(range(self.held * self.window), name="kept_record_entry")
        m.d.comb += entry.eq(Cat(layer.counter[:self.bits], layer.place))
        # The entry of the reply being sealed (its record's own registers: the next record
        # may be opened meanwhile).
        sealed = Signal.like(entry, name="kept_record_sealed")
        m.d.comb += sealed.eq(Cat(layer.s_counter[:self.bits], layer.s_place))
        seq = layer.outer_req.payload.seq
        m.submodules.kept_record_entries = entries = Memory(
            shape=kept_entry_layout(), depth=self.held * self.window, init=[])
        self.entry_write = entries.write_port()
        here = entries.read_port(domain="comb")
        m.d.comb += [here.addr.eq(entry), self.entry_write.addr.eq(sealed),
                     self.length.eq(here.data.length)]
        # (The entry's comparison is registered: the record's counter and ``seq`` are known
        # hundreds of cycles before its verdict reads ``hit``, and an entry is written only
        # when a reply is sealed, long before the next record's verdict.)
        # (In 16-bit parts, each a register: the LUT RAM's read and a part's comparison are
        # all that sits between flip-flops.)
        kept, held = Cat(here.data.counter, here.data.seq), Cat(layer.counter, seq)
        same = Signal(len(kept) // 16, name="kept_record_same")
        m.d.sync += [same[k].eq(kept[16 * k:16 * k + 16] == held[16 * k:16 * k + 16])
                     for k in range(len(same))]
        m.d.comb += self.hit.eq(self.valid.bit_select(entry, 1) & same.all()
                                & counters.in_window)
        m.submodules.kept_records = ram = Memory(shape=8, depth=self.depth, init=[])
        wport = ram.write_port()
        odata = layer.outer_data
        write = layer.seal_busy & odata.valid & odata.ready
        m.d.comb += [wport.addr.eq(Cat(self.at, sealed)), wport.data.eq(odata.payload),
                     wport.en.eq(write)]
        with m.If(write):
            m.d.sync += self.at.eq(self.at + 1)
        with m.If(counters.start):
            for k in range(self.window):
                m.d.sync += self.valid.bit_select(Cat(Const(k, self.bits),
                                                      counters.start_place), 1).eq(0)
        self.reader = RamReader(m, ram.read_port(), self.depth, "kept_record")

    def store(self, m, layer, length):
        """Keep the reply just sealed (``length``: its payload's bytes, status included) for
        the record ``layer`` holds (its bytes are in): the entry written (``comb``, under the
        caller's conditions) and the statements returned for ``sync``."""
        w = self.entry_write
        m.d.comb += [w.en.eq(-1), w.data.counter.eq(layer.s_counter),
                     w.data.seq.eq(layer.s_seq), w.data.length.eq(length)]
        return [self.valid.bit_select(Cat(layer.s_counter[:self.bits], layer.s_place), 1)
                .eq(1), self.at.eq(0)]

    def start_replay(self):
        """The statements that start sending the hit entry's bytes after its status."""
        return self.reader.start(Cat(Const(0, (self.stride - 1).bit_length()), self.entry),
                                 self.length - 1)

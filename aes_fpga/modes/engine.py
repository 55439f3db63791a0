"""The mode engine: ECB, CBC, CTR and, in a GCM build, GCM around any core.

See :mod:`aes_fpga.modes` for the modes and the messages.
"""

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ..params import Mode, Op
from ..stage import HoldStage
from .gcm import (
    COUNT_BITS,
    GHASH_VARIANTS,
    Entry,
    cut,
    entry_layout,
    head_flags,
    head_layout,
    keep_bytes,
    lengths_block,
)
from .ghash import GHash

__all__ = ["ModeEngine", "mode_request_layout", "mode_response_layout"]


def mode_request_layout(key_slots, tag_width=0, gcm=False):
    """One beat of a message. A message is a packet: its ``first`` beat starts it and carries
    ``mode``, ``op`` and ``slot`` and, in ``data``, its IV (the CBC IV, the initial CTR
    counter block, or GCM's J0 = nonce || 00000001; ignored for ECB); each later beat is one
    block (``data``) of it, whose ``mode``, ``op`` and ``slot`` are ignored, with a ``tag``
    that comes back with its result.

    With ``gcm`` the beat has three more fields, which only a GCM message's later beats use:
    ``aad`` (the block is additional authenticated data), ``final`` (the message's last beat:
    it asks for the tag) and ``nbytes`` (1 to 16: the bytes of the block that belong to the
    message; below 16 only in the last block of its kind, and in a decryption's ``final``
    beat the length T of the expected tag in ``data``)."""
    if not isinstance(tag_width, int) or not 0 <= tag_width <= 64:
        raise ValueError(f"tag_width: {tag_width!r} is out of range; allowed 0 to 64")
    fields = {"data": 128, "first": 1, "mode": Mode, "op": Op, "slot": range(key_slots),
              "tag": tag_width}
    if gcm:
        fields.update({"aad": 1, "final": 1, "nbytes": range(17)})
    return data.StructLayout(fields)


def mode_response_layout(tag_width=0, gcm=False):
    """One result: the processed block (``data``) and its request's ``tag``; with ``gcm``
    also ``auth_ok``, high on the result of a GCM decryption's ``final`` beat when the
    expected tag matched (low on every other result; that result's ``data`` repeats the
    previous result's)."""
    fields = {"data": 128, "tag": tag_width}
    if gcm:
        fields["auth_ok"] = 1
    return data.StructLayout(fields)


class ModeEngine(wiring.Component):
    """ECB/CBC/CTR (and GCM with ``gcm``) around ``core`` (which it makes a submodule; its
    ``key`` stream is passed through as ``key``).

    Streams: ``i`` takes messages (:func:`mode_request_layout`: a ``first`` beat with the
    parameters and IV, then the blocks), ``o`` gives the processed blocks (``data``) in order,
    one per block (the ``first`` beat gives none). Messages are processed one after another: a
    ``first`` beat waits until every block of the previous message has left the core, so
    results never overtake each other even when messages use keys of different lengths; a
    message without blocks only sets the parameters and the chaining value. GCM messages are
    described in :mod:`aes_fpga.modes`.

    Throughput: the core's for ECB, CTR and CBC decryption (DRAB-LOCUS AES-128: one block per
    10 cycles sustained); one block per core latency for CBC encryption; GCM's data blocks as
    CTR's, as long as GHASH keeps up (see :mod:`aes_fpga.modes`). Latency: the core's, plus
    nothing (the output XOR is combinational from the core's output).

    A GCM build decides each step a cycle before it takes it, at its input (a beat: a block
    into the core, an entry into the queue) and at the queue's head (an entry out), so that
    the valid/ready paths start from flip-flops (the routed clock, see the README): in every
    mode it takes a block every 3 cycles at most (any other beat every 2) and gives a result
    every 3 cycles at most; its latency is the core's plus a cycle before the core, one in the
    register that takes the core's results, one at the head and one in the output register;
    CBC encryption takes 3 cycles more per block than without GCM (the ciphertext chains on
    from the output register).

    Back-pressure on ``o`` propagates into the core; nothing is lost.

    Parameters
    ----------
    core : a core with the common interface
    depth : int
        Blocks in flight at most (the FIFO of values the results are XORed with); a power of
        two.
    tag_width : int
        Bits of ``tag`` each block carries to its result (kept beside the XOR values, so a
        few bits cost nothing where that FIFO's LUT-RAM has spare width).
    gcm : None, "bram" or "lut"
        None: ECB, CBC and CTR only (and the hardware of an engine without GCM). Otherwise GCM
        too, with the :class:`~aes_fpga.modes.ghash.GHash` of that variant.
    ghash_digit : int
        The GHASH's ``digit`` (see :class:`~aes_fpga.modes.ghash.GHash`); GCM builds only.
    """

    def __init__(self, core, *, depth=16, tag_width=0, gcm=None, ghash_digit=8):
        if not self.accepts(core):
            self._MustUse__used = core._MustUse__used = True     # (refused: never elaborated)
            raise ValueError(f"core: {type(core).__name__} has no key stream (it takes round "
                             f"keys); the mode engine needs a core that loads its own keys")
        self.core = core
        if not isinstance(depth, int) or depth < 2 or depth & (depth - 1):
            raise ValueError(f"depth: {depth!r} is not a power of two of at least 2")
        if gcm is not None and gcm not in GHASH_VARIANTS:
            raise ValueError(f"gcm: {gcm!r} is not allowed; choose None or one of "
                             f"{', '.join(map(repr, GHASH_VARIANTS))}")
        self.depth = depth
        self.tag_width = tag_width
        self.gcm = gcm
        self.ghash = None
        if gcm is not None:
            self.ghash = GHash(variant=gcm, digit=ghash_digit)
        key_slots = core.key_slots
        super().__init__({
            "key": In(stream.Signature(core.key.payload.shape())),
            "i": In(stream.Signature(mode_request_layout(key_slots, tag_width, gcm is not None))),
            "o": Out(stream.Signature(mode_response_layout(tag_width, gcm is not None))),
        })

    @staticmethod
    def accepts(core):
        """Whether the engine takes ``core``, in every mode, GCM included: a core with the
        common interface's ``key`` stream, which loads its own keys. A core that takes round
        keys (``drab-locus-datapath``) is refused: the engine has no keys to give it, and GCM
        needs H = E_K(0^128) computed from the slot's key."""
        return "key" in core.signature.members

    #: Cycles a GCM build adds to the core's latency between a block taken at ``i`` and its
    #: result valid at ``o``: the register that takes the core's results and the output
    #: register (the steps decided a cycle ahead cost none when the engine is idle).
    GCM_EXTRA_LATENCY = 2

    def latency(self, key_bits):
        """Cycles from a lone block taken at ``i`` to its result valid at ``o``, idle engine,
        ``o`` ready: the core's, plus :data:`GCM_EXTRA_LATENCY` in a GCM build."""
        return self.core.latency(key_bits) + (0 if self.gcm is None else self.GCM_EXTRA_LATENCY)

    @property
    def tag_latency(self):
        """GCM builds: the most cycles from the ``o`` transfer of a message's last data block
        to that of its tag (or verdict) that the GHASH makes, ``o`` always ready: that block
        waits for the GHASH at most ``cycles_per_block``, the lengths block follows it, the
        GHASH's ``latency``, one cycle into the output register, and one more for a verdict,
        compared from a register (at least ``cycles_per_block + latency + 1``, when the GHASH
        is idle as the block comes).
        E_K(J0) goes into the core at the final beat, after the last data block, and is back
        by then unless it waits for a free slot: on DRAB-LOCUS, when the data blocks fill the
        ring's last group (a multiple of 12 blocks), up to the ring's 12 stages more. (At the
        final beat it costs no time otherwise; at the first beat it would delay every data
        block by a slot.)"""
        if self.ghash is None:
            raise AttributeError("tag_latency: the engine has no GCM")
        return 2 * self.ghash.cycles_per_block + self.ghash.latency + 1

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self.core
        wiring.connect(m, wiring.flipped(self.key), core.key)
        gcm = self.gcm is not None
        if gcm:
            m.submodules.ghash = self.ghash
        s = self._queue(m, 128 + self.tag_width + (head_layout().size if gcm else 0))

        # The message in progress, from its first beat.
        s.op = Signal(Op)
        s.slot = Signal.like(core.i.payload.slot)
        # CBC: the chaining value; CTR: the next counter block, as four 32-bit words with a
        # registered carry between them (a 128-bit increment is too long a carry chain for one
        # cycle). A carry still moving up holds the next block back; it moves one word per
        # cycle, so a block waits at most 3 cycles, once every 2**32 blocks. (GCM counts with
        # inc32: the low word only, no carry; it starts from inc32(J0), the low word 2, as J0's
        # is 1 with a 96-bit IV.)
        s.chain = Signal(128)
        s.carry = Signal(3)           # carry[n]: word n + 1 is still to be incremented
        # carry != 0, in a flip-flop of its own: the carry bits then drive the words they
        # increment, and the control reads this one (the placer keeps each beside its loads)
        s.moving = Signal()

        s.is_ctr = Signal()
        s.cbc_enc = Signal()
        s.cbc_dec = Signal()
        if gcm:
            # (the counter last: its increment, the latest of the chain's loads to be decided,
            # is then the chain's last multiplexer, one LUT in front of its flip-flops)
            self._gcm_input(m, s)
            self._gcm_output(m, s)
            self._counter(m, s)
        else:
            self._input(m, s)
            self._counter(m, s)
            self._output(m, s)
        self._pointers(m, s)
        return m

    def _queue(self, m, width):
        # What each block's result is XORed with, in the order the core returns results: a
        # LUT-RAM queue with bare pointers. ``in_flight`` counts its entries (the blocks in the
        # core); ``room`` and ``drained`` are registered comparisons of it, updated from the
        # current value and the increments, so no counter compare sits on a valid/ready path.
        depth = self.depth
        m.submodules.pending = pending = Memory(shape=width, depth=depth, init=[])
        s = SimpleNamespace()
        s.p_w = pending.write_port()
        s.p_r = pending.read_port(domain="comb")
        s.p_wp = Signal(range(depth))
        s.p_rp = Signal(range(depth))
        s.in_flight = Signal(range(depth + 1))
        s.room = Signal(init=1)       # in_flight < depth
        s.drained = Signal(init=1)    # in_flight == 0
        return s

    def _input(self, m, s):
        """ECB/CBC/CTR: a block in, its value into the queue."""
        core, req = self.core, self.i.payload
        to_core = Mux(s.is_ctr, s.chain, Mux(s.cbc_enc, req.data ^ s.chain, req.data))
        xor_with = Mux(s.is_ctr, req.data, Mux(s.cbc_dec, s.chain, 0))

        # A first beat waits for the previous message to drain; a CBC-encrypt block waits for
        # the previous block's result; no block goes in without room for its XOR value.
        may_send = self._may_send(m, s)
        starts = self._core_input(
            m, s, to_core, valid=self.i.valid & ~req.first & may_send,
            ready=Mux(req.first, s.drained & ~s.moving, core.i.ready & may_send))
        self._queue_write(m, s, Cat(xor_with, req.tag), s.sent)
        s.pushed = s.sent
        self._start(m, s, starts, req.mode == Mode.CTR, s.chain.eq(req.data), s.carry.eq(0))
        s.carry_out = None
        s.counts = None
        s.dec_load = None
        s.read = None

    # (The core's input, shared by the engine without GCM (:meth:`_input`) and with it
    # (:meth:`_gcm_input`), in the order the first builds it, which keeps its netlist.)

    @staticmethod
    def _may_send(m, s):
        """A block may go into the core: room for its queue entry, a CBC encryption's
        previous block out, no counter carry moving."""
        may_send = Signal()
        m.d.comb += may_send.eq(s.room & (~s.cbc_enc | s.drained) & ~s.moving)
        return may_send

    def _core_input(self, m, s, to_core, *, valid, ready):
        """The core's input (``to_core``, ``valid``) and the engine's ``i.ready``; ``s.sent``
        (a block went into the core); returns ``starts`` (a first beat is taken)."""
        core, req = self.core, self.i.payload
        starts = Signal()
        s.sent = sent = Signal()
        m.d.comb += [
            core.i.payload.block.eq(to_core),
            core.i.payload.op.eq(Mux(s.is_ctr, Op.ENCRYPT, s.op)),
            core.i.payload.slot.eq(s.slot),
            core.i.valid.eq(valid),
            self.i.ready.eq(ready),
            starts.eq(self.i.valid & self.i.ready & req.first),
            sent.eq(core.i.valid & core.i.ready),
        ]
        return starts

    @staticmethod
    def _queue_write(m, s, entry, en):
        """Write ``entry`` into the queue when ``en``; the queue's read address."""
        m.d.comb += [s.p_w.addr.eq(s.p_wp), s.p_w.data.eq(entry), s.p_w.en.eq(en),
                     s.p_r.addr.eq(s.p_rp)]

    def _start(self, m, s, starts, is_ctr, *more):
        """A message's first beat taken (``starts``): its op, slot and mode (``is_ctr``: the
        core's blocks are counter blocks), and ``more``."""
        req = self.i.payload
        with m.If(starts):
            m.d.sync += [s.op.eq(req.op), s.slot.eq(req.slot), s.is_ctr.eq(is_ctr),
                         s.cbc_enc.eq((req.mode == Mode.CBC) & (req.op == Op.ENCRYPT)),
                         s.cbc_dec.eq((req.mode == Mode.CBC) & (req.op == Op.DECRYPT)),
                         *more]

    def _counter(self, m, s):
        words = [s.chain[32 * n:32 * (n + 1)] for n in range(4)]
        dec_load = s.sent & s.cbc_dec if s.dec_load is None else s.dec_load
        # Each word plus one (with its carry out).
        incs = [Cat(word, 0) + 1 for word in words]
        if s.counts is not None:
            # (a GCM build: the loads exclude each other, and the increment comes last)
            with m.If(dec_load):
                m.d.sync += s.chain.eq(self.i.payload.data)
            # A GCM build's sums are registered: its blocks go in 3 cycles apart at least, the
            # first a cycle after the IV is loaded at least, and a carry increments a word that
            # did not change in the cycle before; so each sum is the word's when it is taken,
            # and no adder sits between the chain and its loads.
            sums = [Signal(33, name=f"inc{n}", reset_less=True) for n in range(4)]
            m.d.sync += [sum_.eq(inc) for sum_, inc in zip(sums, incs, strict=True)]
            incs = sums
        with m.If(s.sent & s.is_ctr if s.counts is None else s.counts):
            low = incs[0]
            carry_out = low[32] if s.carry_out is None else low[32] & s.carry_out
            m.d.sync += [words[0].eq(low[:32]), s.carry[0].eq(carry_out)]
        # (a carry starts only while none moves, and a message starts, clearing them, only
        # while none moves and no block goes in: so the carry sets below are the next carry.
        # A word carries out when all its bits are set: said so without GCM, where the sums
        # are an adder's, not registers)
        outs = [inc[32] if s.counts is not None else word.all()
                for inc, word in zip(incs, words, strict=True)]
        moves = [(s.sent & s.is_ctr if s.counts is None else s.counts) & outs[0]
                 & (1 if s.carry_out is None else s.carry_out)]
        for n in range(1, 4):
            with m.If(s.carry[n - 1]):
                up = incs[n]
                m.d.sync += words[n].eq(up[:32])
                if n < 3:
                    m.d.sync += s.carry[n].eq(up[32])
                    moves.append(s.carry[n - 1] & outs[n])
                m.d.sync += s.carry[n - 1].eq(0)
        m.d.sync += s.moving.eq(Cat(*moves).any())
        if s.counts is None:
            with m.If(dec_load):
                m.d.sync += s.chain.eq(self.i.payload.data)

    def _output(self, m, s):
        """ECB/CBC/CTR: the result XOR its value, straight out."""
        core = self.core
        result = core.o.payload.block ^ s.p_r.data[:128]
        s.taken = taken = Signal()
        m.d.comb += [
            self.o.payload.data.eq(result),
            self.o.payload.tag.eq(s.p_r.data[128:]),
            self.o.valid.eq(core.o.valid),
            core.o.ready.eq(self.o.ready),
            taken.eq(core.o.valid & self.o.ready),
        ]
        # CBC encryption: the ciphertext just produced chains into the next block.
        with m.If(taken & s.cbc_enc):
            m.d.sync += s.chain.eq(result)

    def _pointers(self, m, s):
        pushed, taken, depth = s.pushed, s.taken, self.depth
        with m.If(pushed):
            m.d.sync += s.p_wp.eq(s.p_wp + 1)
        with m.If(taken if s.read is None else s.read):
            m.d.sync += s.p_rp.eq(s.p_rp + 1)
        with m.If(pushed & ~taken):
            m.d.sync += [s.in_flight.eq(s.in_flight + 1), s.room.eq(s.in_flight != depth - 1),
                         s.drained.eq(0)]
        with m.Elif(taken & ~pushed):
            m.d.sync += [s.in_flight.eq(s.in_flight - 1), s.room.eq(1),
                         s.drained.eq(s.in_flight == 1)]

    # ---- GCM builds ----------------------------------------------------------------------

    def _gcm_input(self, m, s):
        """Every mode's beats in; a GCM message's beats become queue entries (:class:`Entry`):
        its first beat a HASH_KEY entry (the block 0 to the core) after it, AAD beats AAD
        entries (no core), data beats DATA entries (the counter to the core), its final beat
        a LENGTHS entry, then a TAG entry (J0 to the core). A first beat while a GHASH is open
        (a GCM message that never got its final beat) first closes it: LENGTHS, then FLUSH.

        Each of these steps takes two cycles at least: one decides it
        (:meth:`_gcm_decide`, into flip-flops), the next does it, once the core takes its
        block if it sends one. What the decision read stays true until then: the beat is held
        (a stream's rule), and while nothing goes in, room and an empty queue can only come
        and a moving carry only end. So the core's ``valid``, the engine's ``ready``, the
        queue entry and every update of the engine's state follow flip-flops and the core's
        ``ready``, not the beat's fields through the decision's logic. (GCM needs a step
        every 10 cycles.)"""
        core, req = self.core, self.i.payload
        s.is_gcm = is_gcm = Signal()
        g = SimpleNamespace(
            send_h=Signal(),            # the message's block 0 (for H) is still to go in
            gh_first_in=Signal(),       # the next entry for GHASH is its message's first block
            len_done=Signal(),          # the beat presented has had its LENGTHS entry
            gh_open=Signal(),           # entries for GHASH went in since the last LENGTHS ... TAG
            aad_n=Signal(COUNT_BITS), data_n=Signal(COUNT_BITS))
        # H is kept while the key of its slot stays: a message on the same slot as the last
        # GCM message, with no key loaded since, skips the block 0 and the GHASH's fill.
        h_ok = Signal()
        h_slot = Signal.like(s.slot)
        d = self._gcm_decide(m, s, g)

        # The step is done (``fire``) in the cycle after its decision, or after the core took
        # its block: the core's ``ready`` reaches two flip-flops only.
        fire = d.fire
        with m.If(d.core & core.i.ready):
            m.d.sync += [d.core.eq(0), fire.eq(1)]
        with m.If(fire):
            m.d.sync += [d.acting.eq(0), fire.eq(0)]
        # (J0 differs from the counter in its low word only: the other bits' multiplexers
        # keep to 5 inputs, one LUT each)
        counter = Cat(Mux(d.final, 1, s.chain[:32]), s.chain[32:])
        to_core = Signal(128)
        m.d.comb += to_core.eq(Mux(d.h, 0, Mux(
            s.is_ctr, counter, Mux(s.cbc_enc, req.data ^ s.chain, req.data))))
        self._core_input(m, s, to_core, valid=d.core, ready=fire & d.take)
        starts = Signal()
        m.d.comb += starts.eq(fire & d.start)
        xor_with = Signal(128)
        m.d.comb += xor_with.eq(Mux(d.lengths, lengths_block(g.aad_n, g.data_n),
                                    Mux(d.keep_data, req.data, Mux(s.cbc_dec, s.chain, 0))))
        s.pushed = Signal()
        m.d.comb += s.pushed.eq(fire & d.push)
        # (The queue is written every cycle there is room, at the write pointer, which moves
        # on only when an entry goes in: with room, the word there is no entry's, and its write
        # enable is a flip-flop instead of ``pushed``.)
        self._queue_write(m, s, Cat(xor_with, req.tag, d.entry), s.room)
        with m.If(fire & d.aad):
            m.d.sync += g.aad_n.eq(g.aad_n + req.nbytes)
        with m.If(fire & d.data):
            m.d.sync += g.data_n.eq(g.data_n + req.nbytes)
        with m.If(fire & d.len):
            m.d.sync += g.len_done.eq(1)
        with m.If(fire & (d.aad | d.data | d.len)):
            m.d.sync += [g.gh_open.eq(1), g.gh_first_in.eq(0)]
        # (a final beat's TAG, or a first beat's FLUSH: the GHASH is closed)
        with m.If(fire & (d.final | d.flush)):
            m.d.sync += [g.len_done.eq(0), g.gh_open.eq(0)]
        with m.If(fire & d.h):
            m.d.sync += g.send_h.eq(0)
        gcm_mode = req.mode == Mode.GCM
        key_loads = self.key.valid & self.key.ready
        h_kept = h_ok & (h_slot == req.slot) & ~key_loads
        with m.If(starts & gcm_mode):
            m.d.sync += [h_ok.eq(1), h_slot.eq(req.slot), g.gh_first_in.eq(1)]
        with m.If(key_loads):
            m.d.sync += h_ok.eq(0)
        self._start(m, s, starts, (req.mode == Mode.CTR) | gcm_mode,
                    is_gcm.eq(gcm_mode), g.send_h.eq(gcm_mode & ~h_kept), g.aad_n.eq(0),
                    g.data_n.eq(0))
        # The IV goes into the chain register a cycle after a first beat is there and the
        # previous message's blocks are all out (it no longer needs the chain), whether or
        # not the beat is taken yet (it is loaded again until it is): the load's select is a
        # flip-flop, not the beat's fields and the engine's state through logic. (Not after
        # a cycle that takes the beat: the next beat is presented then; the load of the
        # cycle before is the last, in the edge that takes it.)
        load_iv = Signal()
        m.d.sync += load_iv.eq(self.i.valid & req.first & s.drained & ~s.moving
                               & ~self.i.ready)
        with m.If(load_iv):
            m.d.sync += [s.chain.eq(Mux(gcm_mode, Cat(Const(2, 32), req.data[32:]), req.data)),
                         s.carry.eq(0)]
        s.carry_out = ~is_gcm
        s.counts = fire & d.counts
        s.dec_load = fire & d.dec

    def _gcm_decide(self, m, s, g):
        """The next step of :meth:`_gcm_input`, decided from flip-flops and the beat presented
        while none is decided (``acting`` low), into flip-flops: which step, whether it sends
        a block to the core (``core``: the core's ``valid``), takes the beat (``take``), writes
        a queue entry (``push``; ``entry``, and ``lengths``/``keep_data``, the value's
        selects) and what it updates."""
        req = self.i.payload
        is_gcm = s.is_gcm
        d = SimpleNamespace(**{name: Signal(name=f"d_{name}") for name in (
            "acting", "fire", "core")})
        # (what the step does: read only as it is done, so without a reset)
        d.__dict__.update({name: Signal(name=f"d_{name}", reset_less=True) for name in (
            "take", "push", "start", "h", "len", "flush", "aad", "data", "final", "counts",
            "dec", "lengths", "keep_data")})
        enc = s.op == Op.ENCRYPT
        beat = is_gcm & ~req.first          # a later beat of a GCM message
        b_final = beat & req.final
        b_aad = beat & ~req.final & req.aad
        b_data = beat & ~req.final & ~req.aad
        as_len = Signal()                   # the beat presented first needs a LENGTHS entry
        as_flush = Signal()                 # ... a FLUSH entry
        m.d.comb += [as_len.eq((b_final | (req.first & g.gh_open)) & ~g.len_done),
                     as_flush.eq(req.first & g.gh_open & g.len_done)]
        may_send = self._may_send(m, s)
        free = ~g.send_h & self.i.valid     # (while send_h, the block 0 alone)
        # a later beat to the ring (data, PLAIN, and a final beat once its LENGTHS is in)
        ring = free & ~req.first & may_send & (~is_gcm | Mux(req.final, g.len_done, ~req.aad))
        to_len = free & as_len & s.room
        to_flush = free & as_flush & s.room
        to_aad = free & b_aad & s.room
        to_start = free & req.first & s.drained & ~s.moving & ~g.gh_open
        # What the entry is (while ``send_h``, HASH_KEY whatever the beat presented).
        kind = Signal(3)
        m.d.comb += kind.eq(Mux(g.send_h, Entry.HASH_KEY, Mux(as_len, Entry.LENGTHS, Mux(
            as_flush, Entry.FLUSH, Mux(b_final, Entry.TAG, Mux(b_aad, Entry.AAD, Mux(
                is_gcm, Entry.DATA, Entry.PLAIN)))))))
        # (the entry too, so that the queue's write data come from flip-flops)
        # (decoded, :func:`head_flags`: at the queue's head each flag is a LUT-RAM bit)
        d.entry = Signal(head_layout(), reset_less=True)
        entry = Signal(entry_layout())
        cuts = ~g.send_h & beat & (~req.final | (g.len_done & ~enc))
        m.d.comb += [entry.kind.eq(kind), entry.count.eq(Mux(cuts, req.nbytes[:4], 0)),
                     entry.gh_first.eq(g.gh_first_in)]
        with m.If(~d.acting):
            m.d.sync += [
                # (A beat that can do nothing yet still makes a step, which does nothing: so
                # ``acting`` and ``fire`` follow fewer terms.)
                d.acting.eq(g.send_h | self.i.valid),
                d.fire.eq(~g.send_h & self.i.valid & ~ring),
                d.core.eq(g.send_h | ring),
                d.take.eq(ring | to_aad | to_start),
                d.push.eq(g.send_h | ring | to_len | to_flush | to_aad),
                d.start.eq(to_start),
                d.h.eq(g.send_h),
                d.len.eq(to_len),
                d.flush.eq(to_flush),
                d.aad.eq(to_aad),
                d.data.eq(ring & b_data),
                d.final.eq(ring & b_final),
                d.counts.eq(ring & s.is_ctr),
                d.dec.eq(ring & s.cbc_dec),
                # (an encryption's TAG entry holds 0; a decryption's the expected tag)
                d.lengths.eq(as_len),
                d.keep_data.eq(s.is_ctr & ~(b_final & enc)),
                *[getattr(d.entry, name).eq(flag)
                  for name, flag in head_flags(entry, s.op == Op.DECRYPT).items()],
            ]
        return d

    def _gcm_output(self, m, s):
        """The queue's head: each :class:`Entry` kind to its places (the core's result, GHASH's
        ``h``, ``i`` and ``o``, and ``o`` through a register), taken when all are ready.

        The head is a register, loaded from the queue's memory (its read pointer at the entry
        after the head) as it is taken or while empty, so the decisions start from flip-flops,
        not from a LUT-RAM read; an entry written into an empty queue reaches the head one
        cycle later."""
        gh, tw = self.ghash, self.tag_width
        # The core's results reach the head through a one-entry register that takes one only
        # while empty (the head takes a result every 3 cycles at most): the core's output FIFO
        # then reads on that register's flag alone, and its level, not the head's decision,
        # sets whether it does.
        m.submodules.results = results = HoldStage(self.core.o.payload.shape())
        wiring.connect(m, self.core.o, results.i)
        core = SimpleNamespace(o=results.o)
        head_bits = Signal(128 + tw, reset_less=True)
        present = Signal()          # the head holds an entry
        in_memory = Signal(range(self.depth + 1))   # entries behind the head
        waiting = Signal()          # in_memory != 0
        s.read = read = Signal()
        value = head_bits[:128]
        head = Signal(head_layout(), reset_less=True)
        # The byte mask, registered from the head's count: the head is taken a cycle after it
        # is loaded at the earliest (``take`` decides first), so the mask is there by then,
        # and the LUT-RAM read that loads the head is not followed by the mask's logic.
        keep = Signal(16, reset_less=True)
        m.d.sync += keep.eq(keep_bytes(head.count))
        # The head's steering flags, also in flip-flops of their own that are low while the head
        # is empty, so that no decision needs ``present`` beside them.
        uses_core = Signal()
        to_o = Signal()
        to_gh = Signal()
        takes_y = Signal()
        flags = Cat(uses_core, to_o, to_gh, takes_y)
        queued = data.View(head_layout(), s.p_r.data[128 + tw:])

        # Output and GHASH input registers, each a one-entry pipeline stage.
        o_valid = Signal()
        o_data = Signal(128)
        o_tag = Signal(tw)
        o_check = Signal()          # o holds a decryption's verdict
        # ... and these are its groups of 6 bits that differ (one LUT6 each on a 7-series)
        o_diff = Signal(-(-128 // 6))
        gh_valid = Signal()
        gh_data = Signal(128, reset_less=True)
        gh_first = Signal()
        gh_last = Signal()
        gh_h = Signal()             # the GHASH stage holds H, for ``h`` (else a block for ``i``)
        o_free = ~o_valid | self.o.ready
        # (The GHASH stage takes a block, or H, only when empty, not also as GHASH takes what
        # it holds: GHASH takes a block every 2 cycles at most, so nothing is lost, and GHASH's
        # ``ready``s are not on the head's decisions. H goes through the stage too, so that
        # ``h.valid`` is a flip-flop: GHASH's reaction to it spans 128 bits.)
        gh_free = ~gh_valid

        # The head is taken in two steps: a cycle decides (``take``, a flip-flop) that
        # everything it needs is there: the core's result, room in the output register (empty;
        # not merely being emptied, as ``o.ready`` may fall again) and in the GHASH stage,
        # GHASH's Y (TAG, FLUSH); the next cycle takes it. Each of these stays once there
        # until the head takes it (streams hold ``valid``; only the head fills the output and
        # GHASH stages), so ``taken`` is that flip-flop, and no decision about the queue, the
        # core's output, GHASH or the stages follows a ``valid`` or ``ready`` through logic.
        # An entry then takes two cycles at least, one with a result three (the output
        # register empties first): GCM needs one every 10.
        s.taken = taken = Signal()
        take = Signal()
        ready_now = Signal()
        verdict = Signal()          # a verdict's result is registered: ``o`` takes it now
        m.d.comb += [
            ready_now.eq(present & (~uses_core | core.o.valid) & (~to_gh | gh_free)
                         & (~takes_y | gh.o.valid) & (~to_o | ~(o_valid | verdict))),
            taken.eq(take),
            core.o.ready.eq(uses_core & take),
            gh.o.ready.eq(takes_y & take),
            read.eq((~present | taken) & waiting),
        ]
        m.d.sync += take.eq(~take & ready_now)
        with m.If(read):
            m.d.sync += [head_bits.eq(s.p_r.data[:128 + tw]), present.eq(1),
                         flags.eq(Cat(queued.uses_core, queued.to_o, queued.to_gh,
                                      queued.takes_y)),
                         head.eq(queued)]
        with m.Elif(taken):
            m.d.sync += [present.eq(0), flags.eq(0)]
        with m.If(s.pushed & ~read):
            m.d.sync += [in_memory.eq(in_memory + 1), waiting.eq(1)]
        with m.Elif(read & ~s.pushed):
            m.d.sync += [in_memory.eq(in_memory - 1), waiting.eq(in_memory != 1)]
        # The result, with GHASH's Y XORed in for the tag: an encryption's tag, or a
        # decryption's tag XOR the expected one (cut to T bytes), which never leaves: ``o``
        # repeats the previous result's data then, and ``auth_ok`` says whether every byte
        # was 0.
        y = Mux(head.tag, gh.o.payload, 0)
        result = Signal(128)
        m.d.comb += result.eq(cut(core.o.payload.block ^ value ^ y, keep))
        check = head.check
        # A verdict goes out a cycle later than a result: its bits are compared from the
        # result registered (``res``), not on the way from the results register.
        res = Signal(128, reset_less=True)
        m.d.sync += [res.eq(result), verdict.eq(taken & to_o & check)]
        with m.If(o_free):
            m.d.sync += o_valid.eq((taken & to_o & ~check) | verdict)
        with m.If(verdict):
            m.d.sync += o_diff.eq(Cat(res[j:j + 6].any() for j in range(0, 128, 6)))
        with m.If(taken & to_o):
            # (a verdict leaves ``o_data`` as it was: the previous result, already given)
            with m.If(~check):
                m.d.sync += o_data.eq(result)
            m.d.sync += o_check.eq(check)
            if tw:
                m.d.sync += o_tag.eq(head_bits[128:128 + tw])
        m.d.comb += [
            self.o.valid.eq(o_valid),
            self.o.payload.data.eq(o_data),
            self.o.payload.tag.eq(o_tag),
            self.o.payload.auth_ok.eq(o_check & ~o_diff.any()),
        ]
        # CBC encryption (one block in flight, every entry PLAIN): the ciphertext chains on,
        # from the output register, the cycle after it took it: the next block is decided no
        # earlier (the queue empties then) and goes in a cycle later still. (A first beat's IV,
        # loaded in the same cycle, is loaded again until its beat is taken.)
        chains = Signal()
        m.d.sync += chains.eq(taken & to_o & s.cbc_enc)
        with m.If(chains):
            m.d.sync += s.chain.eq(o_data)

        # GHASH's input: the ciphertext (an encryption's result, else the value), cut; or H
        # (the result of a HASH_KEY entry).
        enc_data = head.enc_data
        with m.If(Mux(gh_h, gh.h.ready, gh.i.ready)):
            m.d.sync += gh_valid.eq(0)
        with m.If(taken & to_gh):
            m.d.sync += [gh_valid.eq(1), gh_h.eq(head.hash_key),
                         gh_data.eq(Mux(head.hash_key, core.o.payload.block, cut(
                             value ^ Mux(enc_data, core.o.payload.block, 0), keep))),
                         gh_first.eq(head.gh_first), gh_last.eq(head.gh_last)]
        m.d.comb += [
            gh.h.valid.eq(gh_valid & gh_h),
            gh.h.payload.eq(gh_data),
            gh.i.valid.eq(gh_valid & ~gh_h),
            gh.i.payload.data.eq(gh_data),
            gh.i.payload.first.eq(gh_first),
            gh.i.payload.last.eq(gh_last),
        ]

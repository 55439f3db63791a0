"""The executor's command handlers: one class per command (one for the table-answered commands),
each bringing its checks, its states of the control FSM and its datapath to
:class:`~.executor.Executor`.

A handler reads and drives the executor's shared state (:class:`~.executor.ExecutorParts`: the
request, the mode engine, the key slots and the message in progress, the reply register); the
executor calls its methods at fixed points of its elaboration (see :mod:`.executor` for the
order and for how to add a command):

======================  =========================================================================
method                  what it gives
======================  =========================================================================
``checks(m)``           ``[(condition, status)]``: its payload validation (spec "Errors and
                        validation order", step 5 then 6), the first true one is the reply's
                        status; it may add the signals its conditions read
``datapath(m)``         logic beside the control FSM (``PROCESS``'s packing and results)
``decide(m)``           the ``DECIDE`` state's branch for a request of this command that passed
                        its checks: the reply descriptor and ``m.next``, its first state
``states(m)``           its FSM states; the last one takes the request (``x.release``) and goes
                        back to ``IDLE``, or goes to ``x.ANSWER`` (reply ``OK``, take it)
======================  =========================================================================

A handler answering with bytes after its status either is a :class:`TableReply` (a table of
bytes; ``INFO``, ``STATS``) or gives ``results``, a byte stream (``PROCESS``, ``RANDOM``).
"""

import operator
from functools import reduce

from amaranth.hdl import Array, Cat, Const, Mux, Signal
from amaranth.lib import data
from amaranth.lib.memory import Memory

from .. import spec
from ..messages import build_info_reply
from .check import field_values

__all__ = ["CommandHandler", "TableReply", "info_reply", "stats_reply", "LoadKey", "Zeroize",
           "Process", "Random", "RawSamples", "ZEROIZE_REQUEST", "PARTIAL_LAST_BLOCK", "any_of"]

#: The ``ZEROIZE`` request payload: one byte, the slot (or ``ALL_SLOTS``).
ZEROIZE_REQUEST = spec.Fields(("slot", 1))

#: The modes whose message may end with a short block, sent cut to its length (stream modes);
#: a message of any other mode is whole blocks. A new stream mode is one more entry.
PARTIAL_LAST_BLOCK = (spec.Mode.CTR,)


def any_of(value, members):
    """``value`` equals one of ``members``: a 1-bit expression."""
    return Cat(*[value == int(x) for x in members]).any()


class CommandHandler:
    """One command's part of the :class:`~.executor.Executor` (see the module docstring).

    ``x`` is the executor's shared state (:class:`~.executor.ExecutorParts`). A subclass sets
    :attr:`command` and implements :meth:`checks`, :meth:`decide` and :meth:`states`.
    """

    #: The :class:`~aes_fpga.appliance.spec.Command` it executes.
    command = None
    #: ``(valid, byte, fire)`` of the bytes it answers with after its status, or ``None``.
    results = None
    #: Its states end in the executor's ``ANSWER`` state (``x.ANSWER``).
    answers = False

    def __init__(self, x):
        self.x = x

    def checks(self, m):
        """``[(condition, status)]``, in the spec's validation order."""
        raise NotImplementedError

    def datapath(self, m):
        """Logic that runs beside the control FSM (none by default)."""

    def decide(self, m):
        """In ``DECIDE``, for a request of this command that passed its checks: start it."""
        raise NotImplementedError

    def states(self, m):
        """Add its states to the control FSM."""
        raise NotImplementedError


class TableReply(CommandHandler):
    """A command without payload, answered with its status and a table of bytes.

    ``rows`` is an :class:`~amaranth.hdl.Array` of the table's 8-bit values, ``length`` the
    reply payload's length (status included, so ``len(rows) + 1``), ``capture`` the statements
    taken when the request is decided (a table of registers shows one moment).

    Its states: ``<COMMAND>_WAIT`` until the reply builder has taken its descriptor (the
    previous reply is out), then ``<COMMAND>`` while the table goes out on ``data``, one byte
    per cycle at ``data.ready``, indexed by the executor's ``x.table_index``, which the tables
    share (one of them is sent at a time).
    """

    def __init__(self, x, command, rows, length, *, capture=()):
        super().__init__(x)
        self.command = command
        self.rows = rows
        self.length = length
        self.capture = list(capture)
        self.state = command.name
        #: It is sending its table (a register, not decoded from the FSM's state).
        self.active = Signal(name=f"in_{command.name.lower()}")

    def checks(self, m):
        return [(self.x.length != 0, spec.Status.BAD_LENGTH)]

    def decide(self, m):
        x = self.x
        with m.If(x.rep_free):
            m.d.sync += [x.reply(spec.Status.OK, self.length), x.table_index.eq(0),
                         *self.capture]
            m.next = f"{self.state}_WAIT"

    def states(self, m):
        x, index = self.x, self.x.table_index
        with m.State(f"{self.state}_WAIT"):
            # The reply builder takes the descriptor once the previous reply is out: from
            # then on ``data`` is the table.
            with m.If(x.rep_free):
                m.d.sync += self.active.eq(1)
                m.next = self.state
        with m.State(self.state):
            with m.If(x.data.ready):
                m.d.sync += index.eq(index + 1)
                with m.If(index == self.length - 2):
                    m.d.sync += x.release.eq(1)
                    m.d.sync += self.active.eq(0)
                    m.next = "IDLE"


def info_reply(x):
    """``INFO``: the device's table (:func:`~aes_fpga.appliance.messages.build_info_reply`)."""
    reply = build_info_reply(x.info)     # status first, then the table
    return TableReply(x, spec.Command.INFO, Array(Const(b, 8) for b in reply[1:]), len(reply))


def stats_reply(x):
    """``STATS``: the number of counters, then each counter (16 bits, big-endian), taken from
    the ``counters`` input when the request is decided, so one reply shows one moment."""
    n_counters = x.n_counters
    snapshot = Signal(data.ArrayLayout(16, n_counters))
    rows = Array([Const(n_counters, 8)]
                 + [snapshot[k].word_select(1 - b, 8)
                    for k in range(n_counters) for b in range(2)])
    return TableReply(x, spec.Command.STATS, rows, 2 + 2 * n_counters,
                      capture=[snapshot.eq(x.counters)])


class LoadKey(CommandHandler):
    """``LOAD_KEY``: hands the request's key (in :class:`~.check.FrameCheck`'s key register,
    cleared when the request is taken) to the core's key schedule; the executor keeps no copy.
    The slot is marked loaded, and a message in progress on it ends."""

    command = spec.Command.LOAD_KEY
    answers = True

    def __init__(self, x):
        super().__init__(x)
        self.fields = field_values(spec.LOAD_KEY_HEADER, x.head)

    def checks(self, m):
        x, load = self.x, self.fields
        key_nbytes = Const(0, 6)            # (an unknown code is refused before its length)
        for size in spec.KeySize:
            key_nbytes = Mux(load["key_size"] == size, size.nbytes, key_nbytes)
        return [
            (x.length < spec.LOAD_KEY_HEADER.size, spec.Status.BAD_LENGTH),
            (load["slot"] >= x.key_slots, spec.Status.BAD_SLOT),
            (~any_of(load["key_size"], x.key_sizes), spec.Status.BAD_KEY_SIZE),
            (x.length != spec.LOAD_KEY_HEADER.size + key_nbytes, spec.Status.BAD_LENGTH),
        ]

    def decide(self, m):
        m.next = "KEY"

    def states(self, m):
        x, me, load = self.x, self.x.me, self.fields
        # The key arrives in FIPS-197 order from the top of the request's key field, the
        # order in which the core takes it.
        key = x.req.payload.key
        placed = Cat(Const(0, len(me.key.payload.key) - len(key)), key)
        with m.State("KEY"):
            m.d.comb += [me.key.valid.eq(x.rep_free), me.key.payload.key.eq(placed),
                         me.key.payload.slot.eq(load["slot"])]
            with m.Switch(load["key_size"]):
                for size in x.key_sizes:
                    with m.Case(size):
                        m.d.comb += me.key.payload.key_bits.eq(size)
            with m.If(me.key.valid & me.key.ready):
                m.d.sync += x.loaded[load["slot"][:x.slot_w]].eq(1)
                with m.If(x.msg_slot == load["slot"][:x.slot_w]):
                    m.d.sync += x.msg_active.eq(0)
                if x.gcm is not None:
                    x.kept.drop(m, load["slot"][:x.slot_w] == x.kept.slot)
                m.next = x.ANSWER


class Zeroize(CommandHandler):
    """``ZEROIZE``: sends the slot (or each slot, for ``ALL_SLOTS``) to the key schedule with
    ``zeroize`` set and marks it empty; a message in progress on it ends. With GCM, the kept
    replies' memory is then cleared but for the replies still kept (those of another slot's
    message; :meth:`~.gcm_process.KeptReplies.start_clear`) before the answer:
    ``window * stride`` cycles more."""

    command = spec.Command.ZEROIZE
    answers = True

    def __init__(self, x):
        super().__init__(x)
        self.fields = field_values(ZEROIZE_REQUEST, x.head)
        self.zero_all = Signal()
        self.key_slot = Signal(x.slot_w)

    def checks(self, m):
        x, slot = self.x, self.fields["slot"]
        return [
            (x.length != ZEROIZE_REQUEST.size, spec.Status.BAD_LENGTH),
            ((slot >= x.key_slots) & (slot != spec.ALL_SLOTS), spec.Status.BAD_SLOT),
        ]

    def decide(self, m):
        slot = self.fields["slot"]
        m.d.sync += [self.zero_all.eq(slot == spec.ALL_SLOTS),
                     self.key_slot.eq(Mux(slot == spec.ALL_SLOTS, 0, slot))]
        m.next = "ZERO"

    def states(self, m):
        x, me, zero_all, key_slot = self.x, self.x.me, self.zero_all, self.key_slot
        with m.State("ZERO"):
            m.d.comb += [me.key.valid.eq(x.rep_free), me.key.payload.key.eq(0),
                         me.key.payload.key_bits.eq(x.key_sizes[0]),
                         me.key.payload.slot.eq(key_slot), me.key.payload.zeroize.eq(1)]
            with m.If(me.key.valid & me.key.ready):
                m.d.sync += x.loaded[key_slot[:x.slot_w]].eq(0)
                with m.If(zero_all | (x.msg_slot == key_slot)):
                    m.d.sync += x.msg_active.eq(0)
                if x.gcm is not None:
                    dropped = zero_all | (key_slot[:x.slot_w] == x.kept.slot)
                    x.kept.drop(m, dropped)
                with m.If(zero_all & (key_slot != x.key_slots - 1)):
                    m.d.sync += key_slot.eq(key_slot + 1)
                with m.Else():
                    if x.gcm is None:
                        m.next = x.ANSWER
                    else:
                        x.kept.start_clear(m, dropped)
                        m.next = "KEPT_CLEAR"
        if x.gcm is not None:
            with m.State("KEPT_CLEAR"):
                # The replies kept under the key are overwritten before the answer.
                with m.If(~x.kept.busy):
                    m.next = x.ANSWER


class Process(CommandHandler):
    """``PROCESS``: the payload stream's bytes into blocks, the blocks into the mode engine,
    the results out byte by byte (:attr:`results`).

    The payload comes one byte per cycle: the IV (``FIRST`` chunks) and the data, gathered
    into blocks for the mode engine; results leave the mode engine block by block and are sent
    one byte per cycle (a short last block of a :data:`PARTIAL_LAST_BLOCK` mode cut to its
    length). The request is taken the cycle after its last block is in the mode engine, so
    the next request is checked and its blocks follow while the previous results are still
    being sent. A ``FIRST`` chunk's IV goes to the mode engine as the first beat of a new
    message, so a ``FIRST`` chunk without data still starts one.
    """

    command = spec.Command.PROCESS

    def __init__(self, x):
        super().__init__(x)
        B = spec.BLOCK_SIZE
        self.fields = process = field_values(spec.PROCESS_HEADER, x.head)
        self.first = (process["flags"] & spec.FLAG_FIRST) != 0
        self.last = (process["flags"] & spec.FLAG_LAST) != 0
        self.iv_len = Mux(self.first, B, 0)
        #: The chunk's data bytes (negative for a payload too short: refused by its length).
        self.dlen = Signal(range(-2 * B, spec.MAX_PAYLOAD + 1))
        #: The reply's length (status included, ``1 + dlen``), a register: see :meth:`datapath`.
        self.reply_length = Signal(range(spec.MAX_PAYLOAD + 1))

    def checks(self, m):
        x, process, first, dlen = self.x, self.fields, self.first, self.dlen
        B, length = spec.BLOCK_SIZE, x.length
        m.d.comb += dlen.eq(length - spec.PROCESS_HEADER_SIZE - self.iv_len)
        partial = reduce(operator.or_, [process["mode"] == mode for mode in PARTIAL_LAST_BLOCK])
        return [
            *self.header_checks(),
            # No GCM here yet: FLAG_AAD is refused in every mode this device offers.
            ((process["flags"] & (spec.FLAGS_RESERVED | spec.FLAG_AAD)) != 0,
             spec.Status.BAD_FLAGS),
            (first & (length < spec.PROCESS_HEADER_SIZE + B), spec.Status.BAD_LENGTH),
            (dlen > x.info.max_process_data, spec.Status.BAD_LENGTH),
            ((dlen[:4] != 0) & ~(partial & self.last), spec.Status.LENGTH_NOT_MULTIPLE_OF_16),
            *self.message_checks(),
        ]

    def header_checks(self):
        """The checks of the payload's length and first three fields (spec step 5), before
        its flags."""
        x, process = self.x, self.fields
        return [
            (x.length < spec.PROCESS_HEADER_SIZE, spec.Status.BAD_LENGTH),
            (process["slot"] >= x.key_slots, spec.Status.BAD_SLOT),
            (~any_of(process["op"], spec.Op), spec.Status.BAD_OP),
            (~any_of(process["mode"], x.info.modes), spec.Status.BAD_MODE),
        ]

    def message_checks(self):
        """The checks of the slot's key and of the message in progress (spec step 6)."""
        x, process, first, p_slot = self.x, self.fields, self.first, self.fields["slot"]
        return [
            (~x.loaded[p_slot[:x.slot_w]], spec.Status.KEY_NOT_LOADED),
            (~first & ~x.msg_active, spec.Status.CHAIN_NOT_STARTED),
            (~first & ((p_slot[:len(x.msg_slot)] != x.msg_slot)
                       | (process["op"][:len(x.msg_op)] != x.msg_op)
                       | (process["mode"][:len(x.msg_mode)] != x.msg_mode)),
             spec.Status.CHAIN_MISMATCH),
        ]

    def datapath(self, m):
        # The reply's length is taken from the request every cycle: the request stays the
        # same from IDLE to DECIDE (two cycles at least), so DECIDE's descriptor takes a
        # register, not the subtraction from the request's length (one LUT level too many).
        # (Truncated for a payload too short, refused by its length.)
        head = spec.PROCESS_HEADER_SIZE - 1       # (the header less the status byte)
        m.d.sync += self.reply_length.eq(
            self.x.length - Mux(self.first, head + spec.BLOCK_SIZE, head))
        self._blocks_in(m)
        self._results_out(m)

    def _blocks_in(self, m):
        # A FIRST chunk's IV is gathered like a block and sent as the message's first beat;
        # then the data. A block is gathered while the one before waits in ``hold`` for the
        # core, which takes a block only when a free slot of its ring passes (up to 11
        # cycles): without the second register that wait would stall the byte stream.
        # Only a stream mode's last block can be short. Its tag says so and ``short_n`` holds
        # its length: the next message starts (its first beat goes in) only once every block
        # of this one has left the mode engine, so one register does.
        x, me, B = self.x, self.x.me, spec.BLOCK_SIZE
        self.short_n = short_n = Signal(range(B + 1))
        self.blk = blk = Signal(8 * B)
        self.blk_iv = blk_iv = Signal()             # blk holds an IV
        self.nb = nb = Signal(range(B + 1))         # bytes gathered into blk
        self.full = full = Signal()                 # blk is complete, waiting for hold
        hold = Signal(8 * B)
        hold_iv = Signal()
        hold_n = Signal(range(B + 1))
        self.hold_valid = hold_valid = Signal()
        self.iv_left = Signal(range(B + 1))
        self.more = Signal()                # iv_left != 0 or data_left != 0, as a register
        self.data_left = Signal(range(spec.MAX_PAYLOAD + 1))
        m.d.comb += [
            me.i.payload.data.eq(hold),
            me.i.payload.first.eq(hold_iv),
            me.i.payload.mode.eq(x.msg_mode),
            me.i.payload.op.eq(x.msg_op),
            me.i.payload.slot.eq(x.msg_slot),
            *([me.i.payload.tag.eq(hold_n != B)] if x.gcm is None else []),
        ]
        if x.gcm is not None:
            # (GCM builds: the beat's kind and byte count, and a tag that says what its result
            # is, see :mod:`.gcm_process`)
            self.blk_final = Signal()
            hold_final = Signal()
            self.gcm_beat(m, hold_n, hold_final)
        sent = Signal()
        self.move = move = Signal()
        self.at = at = Signal(range(B))     # where the next byte goes: a block moved starts anew
        # (A block moves into ``hold`` only once ``hold`` is empty, not in the cycle it is
        # sent: the mode engine's ready would otherwise run on into the payload stream.)
        m.d.comb += [sent.eq(me.i.valid & me.i.ready),
                     move.eq(full & ~hold_valid),
                     at.eq(Mux(move, 0, nb))]
        with m.If(sent):
            m.d.sync += [hold_valid.eq(0), short_n.eq(hold_n)]
        with m.If(move):
            m.d.sync += [hold.eq(blk), hold_iv.eq(blk_iv), hold_n.eq(nb), hold_valid.eq(1),
                         full.eq(0), nb.eq(0)]
            if x.gcm is not None:
                m.d.sync += hold_final.eq(self.blk_final)
        if x.resume_chunks:
            self._resume(m, hold, hold_iv, hold_n, sent)
        else:
            m.d.comb += me.i.valid.eq(hold_valid)

    def _resume(self, m, hold, hold_iv, hold_n, sent):
        # A message's first beat waits in the mode engine until the previous message has left
        # it (about a core latency); a host sends a long message as whole-message chunks, each
        # starting where the last ended, and that wait would come between every two. So the
        # mode engine's state after the last message is followed here (``eng_*``; ``chain``:
        # the next counter of CTR, the last ciphertext of CBC decryption), and a first beat
        # that would set it to what it is already (same slot, op and mode; CTR or CBC
        # decryption with that chaining value, or ECB) is dropped instead of sent: the chunk's
        # blocks follow the last message's without a wait, and every result is the same.
        # Never after a short block (its result's length is in ``short_n``) or a key sent to
        # the core (a key of another length could let results overtake each other), and not
        # in CBC encryption (its chaining value is a result), nor in GCM (a first beat starts
        # its GHASH; in a GCM build the engine's state after a CTR, ECB or CBC message is
        # that of the engine without GCM, its GHASH closed). Decided from registers two
        # cycles after the beat is in ``hold`` (the compare reads settled values: no block is
        # sent meanwhile, and the counter's carry has stopped).
        x, me, B = self.x, self.x.me, spec.BLOCK_SIZE
        eng_valid = Signal()
        eng_slot, eng_op, eng_mode = (Signal.like(x.msg_slot), Signal.like(x.msg_op),
                                      Signal.like(x.msg_mode))
        words = [Signal(32, name=f"chain{n}") for n in range(4)]   # least significant first
        carry = Signal(3)                   # carry[n]: word n + 1 still to be incremented
        seen = Signal()                     # hold has held the first beat for a cycle
        same = Signal()                     # registered: the beat in hold changes nothing
        resume = Signal()
        is_ctr = eng_mode == spec.Mode.CTR
        m.d.sync += [
            seen.eq(self.hold_valid & hold_iv),
            same.eq(eng_valid & (carry == 0) & (eng_slot == x.msg_slot) & (eng_op == x.msg_op)
                    & (eng_mode == x.msg_mode)
                    & ((eng_mode == spec.Mode.ECB) | is_ctr
                       | ((eng_mode == spec.Mode.CBC) & (eng_op == spec.Op.DECRYPT)))
                    & ((eng_mode == spec.Mode.ECB) | (hold == Cat(*words)))),
        ]
        m.d.comb += [resume.eq(hold_iv & seen & same),
                     me.i.valid.eq(self.hold_valid & (~hold_iv | seen) & ~resume)]
        with m.If(self.hold_valid & resume):
            m.d.sync += self.hold_valid.eq(0)
        with m.If(sent & hold_iv):
            m.d.sync += [eng_valid.eq(1), eng_slot.eq(x.msg_slot), eng_op.eq(x.msg_op),
                         eng_mode.eq(x.msg_mode), Cat(*words).eq(hold), carry.eq(0)]
        with m.Elif(sent):
            with m.If(hold_n != B):
                m.d.sync += eng_valid.eq(0)
            with m.If(is_ctr):
                low = Cat(words[0], 0) + 1
                m.d.sync += [words[0].eq(low[:32]), carry[0].eq(low[32])]
            with m.Else():
                m.d.sync += Cat(*words).eq(hold)
        for n in range(1, 4):
            with m.If(carry[n - 1]):
                up = Cat(words[n], 0) + 1
                m.d.sync += [words[n].eq(up[:32]), carry[n - 1].eq(0)]
                if n < 3:
                    m.d.sync += carry[n].eq(up[32])
        with m.If(me.key.valid & me.key.ready):
            m.d.sync += eng_valid.eq(0)

    def _results_out(self, m):
        # A result block is taken from the mode engine into a shift register (its first byte
        # on top) and sent from there; the next is taken as its last byte leaves. (A shift
        # register, not a byte select of the mode engine's output, so the core's output and
        # the XOR are not on one path with a 16-way multiplexer.)
        me, B = self.x.me, spec.BLOCK_SIZE
        res = Signal(8 * B)
        res_valid = Signal()
        res_left = Signal(range(B + 1))     # bytes of it still to send
        out_fire = Signal()
        res_last = Signal()
        m.d.comb += [res_last.eq(res_left == 1),
                     me.o.ready.eq(~res_valid | (out_fire & res_last))]
        with m.If(out_fire):
            m.d.sync += [res.eq(res << 8), res_left.eq(res_left - 1)]
            with m.If(res_last):
                m.d.sync += res_valid.eq(0)
        if self.x.gcm is None:
            with m.If(me.o.valid & me.o.ready):
                m.d.sync += [res.eq(me.o.payload.data), res_valid.eq(1),
                             res_left.eq(Mux(me.o.payload.tag, self.short_n, B))]
        else:
            # A result's tag is its length (a decryption's verdict has none: it is taken by
            # GcmProcess as the reply's status, never into ``res``).
            verdict = self.result_verdict(me.o.payload.tag)
            m.d.comb += me.o.ready.eq(Mux(verdict, self.take_verdict,
                                          ~res_valid | (out_fire & res_last)))
            with m.If(me.o.valid & me.o.ready & ~verdict):
                m.d.sync += [res.eq(me.o.payload.data), res_valid.eq(1),
                             res_left.eq(self.result_length(me.o.payload.tag))]
        self.results = (res_valid, res[-8:], out_fire)

    def decide(self, m):
        x, process = self.x, self.fields
        with m.If(x.rep_free):
            m.d.sync += [
                x.msg_active.eq(~self.last), x.msg_slot.eq(process["slot"]),
                x.msg_op.eq(process["op"]), x.msg_mode.eq(process["mode"]),
                x.reply(spec.Status.OK, self.reply_length),
                self.iv_left.eq(self.iv_len), self.data_left.eq(self.dlen),
                self.more.eq(self.first | (x.length != spec.PROCESS_HEADER_SIZE)),  # dlen != 0
            ]
            m.next = "PROCESS"

    def gather_byte(self, m, in_iv, *full_too):
        """The payload byte taken in this cycle into the block being gathered (the IV's bytes
        first, ``in_iv``, then the data's), a block full at its 16th byte or the request's
        last; ``full_too``: more statements for the cycle a block fills (a subclass's)."""
        iv_left, data_left, at = self.iv_left, self.data_left, self.at
        m.d.sync += self.more.eq(Mux(in_iv, (iv_left != 1) | (data_left != 0), data_left != 1))
        # Byte n of a block is its n-th most significant (FIPS-197 order).
        m.d.sync += [self.blk.word_select(~at, 8).eq(self.x.payload.payload),
                     self.nb.eq(at + 1)]
        with m.If(in_iv):
            m.d.sync += iv_left.eq(iv_left - 1)
        with m.Else():
            m.d.sync += data_left.eq(data_left - 1)
        with m.If((at == spec.BLOCK_SIZE - 1) | (~in_iv & (data_left == 1))):
            m.d.sync += [self.full.eq(1), self.blk_iv.eq(in_iv), *full_too]

    def gather_block(self, m, in_iv, block, *full_too):
        """A whole block of the payload taken in this cycle (``block``, its first byte most
        significant): the IV (``in_iv``, all 16 of its bytes still to come) or 16 data bytes
        (at least 16 still to come); as :meth:`gather_byte` would after its 16 bytes."""
        B, iv_left, data_left = spec.BLOCK_SIZE, self.iv_left, self.data_left
        m.d.sync += [self.blk.eq(block), self.nb.eq(B), self.full.eq(1),
                     self.blk_iv.eq(in_iv), *full_too,
                     self.more.eq(Mux(in_iv, data_left != 0, data_left != B))]
        with m.If(in_iv):
            m.d.sync += iv_left.eq(0)
        with m.Else():
            m.d.sync += data_left.eq(data_left - B)

    def states(self, m):
        payload = self.x.payload
        with m.State("PROCESS"):
            # IV first (FIRST chunks), then data; the request is taken once its last block
            # is in the mode engine (a subclass may add beats after the payload, and end
            # elsewhere: :meth:`block_full`, :meth:`after_payload`, :meth:`done`).
            take = payload.valid & payload.ready
            in_iv = self.iv_left != 0
            blocks = None if self.x.records is None else self.x.records.blocks
            with m.If(self.more):
                if blocks is None:
                    m.d.comb += payload.ready.eq(~self.full | self.move)
                else:
                    # A record's inner request: its first blocks whole, when the record
                    # layer has them (see :class:`~.session_records.RecordLayer`).
                    whole = blocks.valid & (~self.full | self.move) & (self.at == 0)
                    m.d.comb += [payload.ready.eq((~self.full | self.move) & ~blocks.valid),
                                 blocks.ready.eq(whole)]
                    with m.If(whole):
                        self.gather_block(m, in_iv, blocks.payload,
                                          *self.block_full(in_iv))
                with m.If(take):
                    self.gather_byte(m, in_iv, *self.block_full(in_iv))
            self.after_payload(m)
            with m.Elif(~self.full & ~self.hold_valid):
                self.done(m)

    def block_full(self, in_iv):
        """More statements for the cycle a block of the payload fills (none here)."""
        return ()

    def after_payload(self, m):
        """``m.Elif`` branches of ``PROCESS`` once the payload is in, before its end (none
        here)."""

    def done(self, m):
        """``PROCESS``'s end, every block in the mode engine: take the request."""
        m.d.sync += self.x.release.eq(1)
        m.next = "IDLE"


class Random(CommandHandler):
    """``RANDOM``: ``count`` words of the entropy source (the executor's ``entropy_words``
    stream, :class:`~aes_fpga.entropy.EntropySource`'s ``o``), gathered into a block RAM of
    :func:`~aes_fpga.appliance.spec.max_random_words` words before the reply, then sent one
    byte per cycle, each word's most significant byte first.

    Why gather first: the reply's length goes out before its bytes, and a source that fails
    withdraws its word and gives no more; a reply begun could not be finished. So the words are
    taken (one per 16 cycles at most: each is shifted into the RAM a byte a cycle) until all
    are in, and only then is the reply ``OK``; a source that fails meanwhile makes it
    ``ENTROPY_UNAVAILABLE`` (the words taken are dropped, never sent). Latency: ``count`` words
    of the source (576 cycles each at its defaults), then the reply. Without an entropy source
    (``info.entropy`` false) the handler is one check: ``UNKNOWN_COMMAND``.
    """

    command = spec.Command.RANDOM

    def __init__(self, x):
        super().__init__(x)
        self.fields = field_values(spec.RANDOM_REQUEST, x.head)
        self.max_words = spec.max_random_words(x.info.max_payload)
        self.depth = spec.BLOCK_SIZE * self.max_words
        self.count = Signal(range(self.max_words + 1), name=f"{self.name}_count")
        #: Sending the words (a register, like a table's ``active``).
        self.active = Signal(name=f"in_{self.name}")

    @property
    def name(self):
        return self.command.name.lower()

    @property
    def enabled(self):
        """The device has the command (else it answers ``UNKNOWN_COMMAND``)."""
        return self.x.info.entropy

    def checks(self, m):
        x = self.x
        if not self.enabled:
            return [(Const(1), spec.Status.UNKNOWN_COMMAND)]
        return [
            (x.length != spec.RANDOM_REQUEST.size, spec.Status.BAD_LENGTH),
            (self.fields["count"] > self.max_words, spec.Status.BAD_LENGTH),
            *self.state_checks(),
        ]

    def state_checks(self):
        """The checks of the source's state (spec step 6)."""
        return [(self.x.entropy_state != spec.EntropyStatus.OK,
                 spec.Status.ENTROPY_UNAVAILABLE)]

    def datapath(self, m):
        if not self.enabled:
            return
        m.submodules[f"{self.name}_ram"] = mem = Memory(shape=8, depth=self.depth, init=[])
        self.wport = mem.write_port()
        self.waddr = Signal(range(self.depth + 1), name=f"{self.name}_waddr")
        m.d.comb += self.wport.addr.eq(self.waddr[:len(self.wport.addr)])
        self.fill_path(m)
        self.send_path(m, mem.read_port())

    def fill_path(self, m):
        """The words taken go into ``shift`` and from there into the RAM, a byte a cycle."""
        B = spec.BLOCK_SIZE
        self.shift = shift = Signal(8 * B)
        self.shift_n = shift_n = Signal(range(B + 1))
        self.words_left = Signal(range(self.max_words + 1))
        m.d.comb += [self.wport.data.eq(shift[-8:]), self.wport.en.eq(shift_n != 0)]
        with m.If(shift_n != 0):
            m.d.sync += [shift.eq(shift << 8), shift_n.eq(shift_n - 1),
                         self.waddr.eq(self.waddr + 1)]

    def send_path(self, m, rport):
        """Sending: a byte is read from the RAM (``rd``, ``reads_left`` to go) into the read
        port, then into the output register ``q`` (``left`` bytes still to send), so the RAM's
        clock-to-output time ends at a flip-flop (on ECP5 it is most of a 100 MHz cycle)."""
        self.rd = rd = Signal(range(self.depth + 1))
        self.reads_left = reads_left = Signal(range(self.depth + 1))
        self.left = left = Signal(range(self.depth + 1))
        r_valid = Signal()                  # the read port holds a byte not yet in ``q``
        q_valid = Signal()
        q = Signal(8)
        fire = Signal()
        move = Signal()
        issue = Signal()
        m.d.comb += [move.eq(r_valid & (~q_valid | fire)),
                     issue.eq(self.active & (reads_left != 0) & (~r_valid | move)),
                     rport.en.eq(issue), rport.addr.eq(rd[:len(rport.addr)])]
        with m.If(issue):
            m.d.sync += [rd.eq(rd + 1), reads_left.eq(reads_left - 1), r_valid.eq(1)]
        with m.Elif(move):
            m.d.sync += r_valid.eq(0)
        with m.If(move):
            m.d.sync += [q.eq(rport.data), q_valid.eq(1)]
        with m.Elif(fire):
            m.d.sync += q_valid.eq(0)
        with m.If(fire):
            m.d.sync += left.eq(left - 1)
        self.results = (q_valid, q, fire)

    def decide(self, m):
        if not self.enabled:
            return                      # (never reached: refused by its check)
        # (A count of 0 goes through the gathering too: one place fills the reply descriptor,
        # so its multiplexer has one input more, not three.)
        count = self.fields["count"]
        m.d.sync += [self.count.eq(count), self.waddr.eq(0), *self.start_fill(count)]
        m.next = f"{self.command.name}_FILL"

    def start_fill(self, count):
        """The statements that start gathering ``count`` blocks."""
        return [self.words_left.eq(count)]

    def fill_state(self, m):
        """The ``_FILL`` state's body: take the words, refuse if the source fails."""
        x, B, words, shift_n = self.x, spec.BLOCK_SIZE, self.x.entropy_words, self.shift_n
        m.d.comb += words.ready.eq((shift_n == 0) & (self.words_left != 0))
        with m.If(words.valid & words.ready):
            m.d.sync += [self.shift.eq(words.payload), shift_n.eq(B),
                         self.words_left.eq(self.words_left - 1)]
        self.gathered(m, (self.words_left == 0) & (shift_n == 0),
                      x.entropy_state == spec.EntropyStatus.FAILED)

    def gathered(self, m, done, failed):
        """Every byte is in the RAM (``done``), or the source has ``failed``: the reply
        (``OK`` and the bytes, ``ENTROPY_UNAVAILABLE``), once the register is free."""
        x, name, count = self.x, self.command.name, self.count
        with m.If((done | failed) & x.rep_free):
            m.d.sync += x.reply(Mux(failed, spec.Status.ENTROPY_UNAVAILABLE, spec.Status.OK),
                                Mux(failed, 1, 1 + spec.BLOCK_SIZE * count))
            with m.If(failed | (count == 0)):
                m.d.sync += x.release.eq(1)
                m.next = "IDLE"
            with m.Else():
                m.next = f"{name}_WAIT"

    def states(self, m):
        x, name = self.x, self.command.name
        if not self.enabled:
            return
        with m.State(f"{name}_FILL"):
            self.fill_state(m)
        with m.State(f"{name}_WAIT"):
            # The reply builder takes the descriptor once the previous reply is out.
            with m.If(x.rep_free):
                m.d.sync += [self.active.eq(1), self.rd.eq(0),
                             self.reads_left.eq(spec.BLOCK_SIZE * self.count),
                             self.left.eq(spec.BLOCK_SIZE * self.count)]
                m.next = name
        with m.State(name):
            _, _, fire = self.results
            with m.If(fire & (self.left == 1)):
                m.d.sync += [self.active.eq(0), x.release.eq(1)]
                m.next = "IDLE"


class RawSamples(Random):
    """``ENTROPY_RAW`` (a diagnostic build's, ``info.entropy_raw``): ``count`` blocks of 128
    consecutive raw samples (the executor's ``entropy_sample`` on the cycles
    ``entropy_sample_valid`` is high: :class:`~aes_fpga.entropy.EntropySource`'s ``sample``
    tap), whatever the source's state, packed 8 a byte (the first in the most significant
    bit) into a block RAM of its own, then sent as :class:`Random` sends its words. Latency:
    ``128 count`` samples, then the reply."""

    command = spec.Command.ENTROPY_RAW

    @property
    def enabled(self):
        return self.x.info.entropy_raw

    def state_checks(self):
        return []

    def fill_path(self, m):
        x = self.x
        self.bits = bits = Signal(7)                 # the byte's samples so far
        self.nbits = nbits = Signal(range(8))
        self.bytes_left = Signal(range(self.depth + 1))
        self.filling = filling = Signal()
        take = filling & x.entropy_sample_valid
        m.d.comb += [self.wport.data.eq(Cat(x.entropy_sample, bits)),
                     self.wport.en.eq(take & (nbits == 7))]
        with m.If(take):
            m.d.sync += [bits.eq(Cat(x.entropy_sample, bits[:6])), nbits.eq(nbits + 1)]
            with m.If(nbits == 7):
                m.d.sync += [self.waddr.eq(self.waddr + 1),
                             self.bytes_left.eq(self.bytes_left - 1)]
                with m.If(self.bytes_left == 1):
                    m.d.sync += filling.eq(0)

    def start_fill(self, count):
        return [self.bytes_left.eq(spec.BLOCK_SIZE * count), self.nbits.eq(0),
                self.filling.eq(count != 0)]

    def fill_state(self, m):
        self.gathered(m, ~self.filling, Const(0))

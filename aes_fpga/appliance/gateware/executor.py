"""The appliance's command layer in gateware: checked requests in, replies out (spec "Commands",
steps 5 and 6 of "Errors and validation order"), around a :class:`~aes_fpga.modes.ModeEngine`.

:class:`Executor` knows nothing of COBS, CRCs or the transport: it takes whole requests from
:class:`~.check.FrameCheck` and gives reply descriptors and reply payload bytes to
:class:`~.reply.ReplyBuilder`.
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ...modes import ModeEngine
from .. import spec
from ..messages import build_info_reply
from .check import field_values, first_failure, request_layout

__all__ = ["Executor", "reply_layout", "ZEROIZE_REQUEST"]

#: The ``ZEROIZE`` request payload: one byte, the slot (or ``ALL_SLOTS``).
ZEROIZE_REQUEST = spec.Fields(("slot", 1))


def reply_layout():
    """One reply (:attr:`Executor.reply`): the request's ``command`` and ``seq`` (the reply
    opcode is made from the command by the reply builder), the reply payload's ``length``
    (status included) and its ``status``; the payload bytes after the status come on
    :attr:`Executor.data`."""
    return data.StructLayout({
        "command": 8 * spec.HEADER.size_of("command"),
        "seq": 8 * spec.HEADER.size_of("seq"),
        "length": range(spec.MAX_PAYLOAD + 1),
        "status": 8,
    })


class Executor(wiring.Component):
    """Executes checked requests: ``INFO``, ``LOAD_KEY``, ``ZEROIZE``, ``PROCESS`` and ``STATS``.

    ``req`` and ``payload`` come from :class:`~.check.FrameCheck`. A request whose frame
    status is not ``OK`` is answered with that status. Otherwise its payload is validated in
    the spec's order (condition bits registered, then the first failure taken and
    registered: 3 cycles) and
    the request executed; every request gives one descriptor on ``reply`` and ``length - 1``
    bytes on ``data`` (``INFO``'s table, ``PROCESS``'s results), in request order.

    ``PROCESS`` takes the payload stream one byte per cycle: the IV (``FIRST`` chunks) and the
    data, gathered into blocks for the mode engine; results leave the mode engine block by
    block and are sent one byte per cycle (a partial last CTR block cut to its length). The
    request is taken the cycle after its last block is in the mode engine, so the next request
    is checked and its blocks follow while the previous results are still being sent.

    Timing: ``req.ready`` and the decision taken for a request are registers (a request is
    taken the cycle after it is done with; its status is registered before it is acted on),
    each result block is shifted out of a register, and a gathered block moves to the mode
    engine's input register only once that is empty, so no valid/ready path runs from the
    frame check through the executor into the core or the reply.

    State: the key slots' ``loaded`` flags and the message in progress (slot, op, mode); the
    chaining value lives in the mode engine. A ``FIRST`` chunk's IV goes to the mode engine as
    the first beat of a new message, so a ``FIRST`` chunk without data still starts one.

    Keys: ``LOAD_KEY`` hands the request's key (in :class:`~.check.FrameCheck`'s key register,
    cleared when the request is taken) to the core's key schedule; the executor keeps no copy.
    ``ZEROIZE`` sends the slot (or each slot) to the key schedule with ``zeroize`` set and
    marks it empty.

    ``STATS`` answers with the ``counters`` inputs (16 bits each), taken when the request is
    decided, so one reply shows one moment.

    Parameters
    ----------
    core : a core with the common interface
    info : DeviceInfo
        What the device reports and enforces (slots, key sizes, modes, max payload).
    counters : int
        How many counters ``STATS`` reports (0 to 255): the ``counters`` input port's length.
    """

    def __init__(self, core, info, *, counters=0):
        if not 0 <= counters <= 255:
            raise ValueError(f"counters: {counters!r} is not in range 0 .. 255")
        self.core = core
        self.info = info
        self.n_counters = counters
        #: The longest key the device takes, in bytes: the size of the request's key field.
        self.key_bytes = max(size // 8 for size in info.key_sizes)
        super().__init__({
            "req": In(stream.Signature(request_layout(self.key_bytes))),
            "payload": In(stream.Signature(8)),
            "reply": Out(stream.Signature(reply_layout())),
            "data": Out(stream.Signature(8)),
            "counters": In(data.ArrayLayout(16, counters)),
        })

    def elaborate(self, platform):
        P = spec
        info = self.info
        S = info.key_slots
        m = Module()
        # A block's tag: it is a CTR message's short last block.
        m.submodules.modes = me = ModeEngine(self.core, tag_width=1)
        B = P.BLOCK_SIZE

        req = self.req.payload
        head = lambda n: req.head[n]     # noqa: E731
        process = field_values(P.PROCESS_HEADER, head)
        load = field_values(P.LOAD_KEY_HEADER, head)
        zeroize = field_values(ZEROIZE_REQUEST, head)
        length = req.length

        # ---- key slots and the message in progress -------------------------------------
        loaded = Array(Signal(name=f"loaded{s}") for s in range(S))
        slot_w = max(1, (S - 1).bit_length())
        msg_active = Signal()
        # (As wide as a valid value: a request reaches CHAIN_MISMATCH only with valid fields.)
        msg_slot = Signal(slot_w)
        msg_op = Signal(max(P.Op).bit_length())
        msg_mode = Signal(max(P.Mode).bit_length())

        # ---- validation (spec step 5, then 6), one list per command --------------------
        def any_of(value, members):
            return Cat(*[value == int(x) for x in members]).any()

        first = (process["flags"] & P.FLAG_FIRST) != 0
        last = (process["flags"] & P.FLAG_LAST) != 0
        iv_len = Mux(first, B, 0)
        dlen = Signal(range(-2 * B, P.MAX_PAYLOAD + 1))
        m.d.comb += dlen.eq(length - P.PROCESS_HEADER_SIZE - iv_len)
        sizes = [P.KeySize.from_bits(b) for b in info.key_sizes]
        key_nbytes = Const(0, 6)            # (an unknown code is refused before its length)
        for size in P.KeySize:
            key_nbytes = Mux(load["key_size"] == size, size.nbytes, key_nbytes)
        flags_reserved = 0xFF & ~(P.FLAG_FIRST | P.FLAG_LAST)
        p_slot = process["slot"]
        checks = {
            P.Command.INFO: [(length != 0, P.Status.BAD_LENGTH)],
            P.Command.STATS: [(length != 0, P.Status.BAD_LENGTH)],
            P.Command.LOAD_KEY: [
                (length < P.LOAD_KEY_HEADER.size, P.Status.BAD_LENGTH),
                (load["slot"] >= S, P.Status.BAD_SLOT),
                (~any_of(load["key_size"], sizes), P.Status.BAD_KEY_SIZE),
                (length != P.LOAD_KEY_HEADER.size + key_nbytes, P.Status.BAD_LENGTH),
            ],
            P.Command.ZEROIZE: [
                (length != ZEROIZE_REQUEST.size, P.Status.BAD_LENGTH),
                ((zeroize["slot"] >= S) & (zeroize["slot"] != P.ALL_SLOTS), P.Status.BAD_SLOT),
            ],
            P.Command.PROCESS: [
                (length < P.PROCESS_HEADER_SIZE, P.Status.BAD_LENGTH),
                (p_slot >= S, P.Status.BAD_SLOT),
                (~any_of(process["op"], P.Op), P.Status.BAD_OP),
                (~any_of(process["mode"], info.modes), P.Status.BAD_MODE),
                ((process["flags"] & flags_reserved) != 0, P.Status.BAD_FLAGS),
                (first & (length < P.PROCESS_HEADER_SIZE + B), P.Status.BAD_LENGTH),
                (dlen > info.max_process_data, P.Status.BAD_LENGTH),
                ((dlen[:4] != 0) & ~((process["mode"] == P.Mode.CTR) & last),
                 P.Status.LENGTH_NOT_MULTIPLE_OF_16),
                (~loaded[p_slot[:slot_w]], P.Status.KEY_NOT_LOADED),
                (~first & ~msg_active, P.Status.CHAIN_NOT_STARTED),
                (~first & ((p_slot[:len(msg_slot)] != msg_slot)
                           | (process["op"][:len(msg_op)] != msg_op)
                           | (process["mode"][:len(msg_mode)] != msg_mode)),
                 P.Status.CHAIN_MISMATCH),
            ],
        }
        # Stage 1 registers every condition; stage 2 takes the first failure of the command.
        conds = {c: Signal(len(checks[c]), name=f"fail_{c.name.lower()}") for c in checks}
        known = Signal()
        status = Signal(8)
        command_status = Const(P.Status.UNKNOWN_COMMAND, 8)   # (refused by FrameCheck)
        for command in reversed(P.Command):
            command_status = Mux(req.command == command, first_failure(
                [(conds[command][n], s) for n, (_, s) in enumerate(checks[command])],
                P.Status.OK), command_status)
        m.d.comb += status.eq(Mux(known, command_status, req.status))
        # Stage 3 registers that status and the command, so what DECIDE does (and so the
        # request's ``ready``) depends on registers only.
        r_status = Signal(8)
        r_ok = Signal()
        is_cmd = {c: Signal(name=f"is_{c.name.lower()}") for c in P.Command}

        # ---- replies: one descriptor register ------------------------------------------
        rep_valid = Signal()
        rep = Signal(reply_layout())
        m.d.comb += [self.reply.valid.eq(rep_valid), self.reply.payload.eq(rep)]
        with m.If(self.reply.valid & self.reply.ready):
            m.d.sync += rep_valid.eq(0)
        rep_free = ~rep_valid

        def reply(status_value, length_value=1):
            return [rep_valid.eq(1), rep.command.eq(req.command), rep.seq.eq(req.seq),
                    rep.status.eq(status_value), rep.length.eq(length_value)]

        # ---- PROCESS: bytes into blocks, blocks into the mode engine -------------------
        # A FIRST chunk's IV is gathered like a block and sent as the message's first beat;
        # then the data. A block is gathered while the one before waits in ``hold`` for the
        # core, which takes a block only when a free slot of its ring passes (up to 11
        # cycles): without the second register that wait would stall the byte stream.
        # Only a CTR message's last block can be short. Its tag says so and ``short_n`` holds
        # its length: the next message starts (its first beat goes in) only once every block
        # of this one has left the mode engine, so one register does.
        short_n = Signal(range(B + 1))
        blk = Signal(8 * B)
        blk_iv = Signal()                   # blk holds an IV
        nb = Signal(range(B + 1))           # bytes gathered into blk
        full = Signal()                     # blk is complete, waiting for hold
        hold = Signal(8 * B)
        hold_iv = Signal()
        hold_n = Signal(range(B + 1))
        hold_valid = Signal()
        iv_left = Signal(range(B + 1))
        more = Signal()                     # iv_left != 0 or data_left != 0, as a register
        data_left = Signal(range(P.MAX_PAYLOAD + 1))
        m.d.comb += [
            me.i.payload.data.eq(hold),
            me.i.payload.first.eq(hold_iv),
            me.i.payload.mode.eq(msg_mode),
            me.i.payload.op.eq(msg_op),
            me.i.payload.slot.eq(msg_slot),
            me.i.payload.tag.eq(hold_n != B),
            me.i.valid.eq(hold_valid),
        ]
        sent = Signal()
        move = Signal()
        at = Signal(range(B))               # where the next byte goes: a block moved starts anew
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

        # ---- results out, byte by byte -------------------------------------------------
        # A result block is taken from the mode engine into a shift register (its first byte
        # on top) and sent from there; the next is taken as its last byte leaves. (A shift
        # register, not a byte select of the mode engine's output, so the core's output and
        # the XOR are not on one path with a 16-way multiplexer.)
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
        with m.If(me.o.valid & me.o.ready):
            m.d.sync += [res.eq(me.o.payload.data), res_valid.eq(1),
                         res_left.eq(Mux(me.o.payload.tag, short_n, B))]

        # ---- INFO's table ----------------------------------------------------------------
        info_reply = build_info_reply(info)     # status first, then the table
        info_rom = Array(Const(b, 8) for b in info_reply[1:])
        info_index = Signal(range(max(len(info_reply), 2 + 2 * self.n_counters)))

        # ---- STATS' table: the count, then each counter, taken when the request is decided
        n_counters = self.n_counters
        stats_len = 2 + 2 * n_counters                     # status included
        snapshot = Signal(data.ArrayLayout(16, n_counters))
        stats_rom = Array([Const(n_counters, 8)]
                          + [snapshot[k].word_select(1 - b, 8)
                             for k in range(n_counters) for b in range(2)])

        # ---- keys ------------------------------------------------------------------------
        # The key arrives in FIPS-197 order from the top of the request's key field, the
        # order in which the core takes it.
        key = req.key
        placed = Cat(Const(0, len(me.key.payload.key) - len(key)), key)
        zero_all = Signal()
        key_slot = Signal(slot_w)
        zero_bits = sizes[0]

        # ---- control ---------------------------------------------------------------------
        in_info = Signal()          # (a register: the INFO state, not decoded from the FSM's)
        in_stats = Signal()         # (the same for STATS)
        # The request is taken (``req.ready``) the cycle after it is done with, from a register:
        # the frame check resets its ring pointers and key register on the take, and the FSM's
        # decisions would otherwise run on into them.
        release = Signal()
        m.d.comb += self.req.ready.eq(release)
        m.d.sync += release.eq(0)
        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.req.valid & ~release):
                    m.d.sync += [conds[c].eq(Cat(cond for cond, _ in checks[c]))
                                 for c in checks]
                    m.d.sync += known.eq(req.status == P.Status.OK)
                    m.d.sync += [flag.eq(req.command == c) for c, flag in is_cmd.items()]
                    m.next = "STATUS"
            with m.State("STATUS"):
                m.d.sync += [r_status.eq(status), r_ok.eq(status == P.Status.OK)]
                m.next = "DECIDE"
            with m.State("DECIDE"):
                with m.If(~r_ok):
                    # Answered with the status alone (the payload is not read).
                    with m.If(rep_free):
                        m.d.sync += reply(r_status)
                        m.d.sync += release.eq(1)
                        m.next = "IDLE"
                with m.Elif(is_cmd[P.Command.INFO]):
                    with m.If(rep_free):
                        m.d.sync += [reply(P.Status.OK, len(info_reply)), info_index.eq(0)]
                        m.next = "INFO_WAIT"
                with m.Elif(is_cmd[P.Command.STATS]):
                    with m.If(rep_free):
                        m.d.sync += [reply(P.Status.OK, stats_len), info_index.eq(0),
                                     snapshot.eq(self.counters)]
                        m.next = "STATS_WAIT"
                with m.Elif(is_cmd[P.Command.LOAD_KEY]):
                    m.next = "KEY"
                with m.Elif(is_cmd[P.Command.ZEROIZE]):
                    m.d.sync += [zero_all.eq(zeroize["slot"] == P.ALL_SLOTS),
                                 key_slot.eq(Mux(zeroize["slot"] == P.ALL_SLOTS, 0,
                                                 zeroize["slot"]))]
                    m.next = "ZERO"
                with m.Else():
                    with m.If(rep_free):
                        m.d.sync += [
                            msg_active.eq(~last), msg_slot.eq(p_slot), msg_op.eq(process["op"]),
                            msg_mode.eq(process["mode"]),
                            reply(P.Status.OK, 1 + dlen),
                            iv_left.eq(iv_len), data_left.eq(dlen),
                            more.eq(first | (length != P.PROCESS_HEADER_SIZE)),   # (dlen != 0)
                        ]
                        m.next = "PROCESS"

            with m.State("INFO_WAIT"):
                # The reply builder takes INFO's descriptor once the previous reply is out:
                # from then on ``data`` is the table.
                with m.If(rep_free):
                    m.d.sync += in_info.eq(1)
                    m.next = "INFO"
            with m.State("INFO"):
                with m.If(self.data.ready):
                    m.d.sync += info_index.eq(info_index + 1)
                    with m.If(info_index == len(info_reply) - 2):
                        m.d.sync += release.eq(1)
                        m.d.sync += in_info.eq(0)
                        m.next = "IDLE"

            with m.State("STATS_WAIT"):
                with m.If(rep_free):
                    m.d.sync += in_stats.eq(1)
                    m.next = "STATS"
            with m.State("STATS"):
                with m.If(self.data.ready):
                    m.d.sync += info_index.eq(info_index + 1)
                    with m.If(info_index == stats_len - 2):
                        m.d.sync += release.eq(1)
                        m.d.sync += in_stats.eq(0)
                        m.next = "IDLE"

            with m.State("KEY"):
                m.d.comb += [me.key.valid.eq(rep_free), me.key.payload.key.eq(placed),
                             me.key.payload.slot.eq(load["slot"])]
                with m.Switch(load["key_size"]):
                    for size in sizes:
                        with m.Case(size):
                            m.d.comb += me.key.payload.key_bits.eq(size)
                with m.If(me.key.valid & me.key.ready):
                    m.d.sync += loaded[load["slot"][:slot_w]].eq(1)
                    with m.If(msg_slot == load["slot"][:slot_w]):
                        m.d.sync += msg_active.eq(0)
                    m.next = "DONE"

            with m.State("ZERO"):
                m.d.comb += [me.key.valid.eq(rep_free), me.key.payload.key.eq(0),
                             me.key.payload.key_bits.eq(zero_bits),
                             me.key.payload.slot.eq(key_slot), me.key.payload.zeroize.eq(1)]
                with m.If(me.key.valid & me.key.ready):
                    m.d.sync += loaded[key_slot[:slot_w]].eq(0)
                    with m.If(zero_all | (msg_slot == key_slot)):
                        m.d.sync += msg_active.eq(0)
                    with m.If(zero_all & (key_slot != S - 1)):
                        m.d.sync += key_slot.eq(key_slot + 1)
                    with m.Else():
                        m.next = "DONE"

            with m.State("DONE"):
                # LOAD_KEY and ZEROIZE are answered, and taken, the cycle after the core took
                # the key, so the core's key ``ready`` does not run on into the frame check.
                # Taking a LOAD_KEY clears the key register: the core has the key.
                with m.If(rep_free):        # (free since the key was sent)
                    m.d.sync += reply(P.Status.OK)
                    m.d.sync += release.eq(1)
                    m.next = "IDLE"

            with m.State("PROCESS"):
                # IV first (FIRST chunks), then data; the request is taken once its last block
                # is in the mode engine.
                take = self.payload.valid & self.payload.ready
                in_iv = iv_left != 0
                with m.If(more):
                    m.d.comb += self.payload.ready.eq(~full | move)
                    with m.If(take):
                        m.d.sync += more.eq(Mux(in_iv, (iv_left != 1) | (data_left != 0),
                                                data_left != 1))
                        # Byte n of a block is its n-th most significant (FIPS-197 order).
                        m.d.sync += [blk.word_select(~at, 8).eq(self.payload.payload),
                                     nb.eq(at + 1)]
                        with m.If(in_iv):
                            m.d.sync += iv_left.eq(iv_left - 1)
                        with m.Else():
                            m.d.sync += data_left.eq(data_left - 1)
                        with m.If((at == B - 1) | (~in_iv & (data_left == 1))):
                            m.d.sync += [full.eq(1), blk_iv.eq(in_iv)]
                with m.Elif(~full & ~hold_valid):
                    m.d.sync += release.eq(1)
                    m.next = "IDLE"

        # ``data``: INFO's table while its reply is sent, else the mode engine's results.
        table = in_info | in_stats
        m.d.comb += [
            self.data.valid.eq(Mux(table, 1, res_valid)),
            self.data.payload.eq(Mux(in_info, info_rom[info_index],
                                     Mux(in_stats, stats_rom[info_index], res[-8:]))),
            out_fire.eq(~table & self.data.valid & self.data.ready),
        ]
        return m

"""The appliance's protocol engine: :mod:`aes_fpga.appliance.spec` in gateware, around a core.

:class:`ProtocolEngine` takes the bytes a host sends (``rx``, the UART already removed), decodes
COBS frames into a frame buffer, checks them and answers on ``tx`` exactly as
:class:`aes_fpga.appliance.DeviceModel` does, running ``PROCESS`` chunks through a
:class:`~aes_fpga.modes.ModeEngine` around the core. Every number of the protocol (opcodes,
status codes, sizes, flags, magic) is taken from :mod:`aes_fpga.appliance.spec` at elaboration.

Data flow, one request at a time::

    rx -> COBS decode -> frame buffer (content bytes) -> CRC / header check -> command
       -> (LOAD_KEY, ZEROIZE: core key stream; PROCESS: blocks through ModeEngine, results
          written back in place) -> reply bytes + CRC -> CobsEncoder -> tx

While a request is checked, executed and answered, ``rx`` is not ready (back-pressure), so a
host that sends while the device is busy loses nothing; ``BUSY`` is therefore never sent. The
next request waits in front of ``rx`` (in the appliance, in its receive FIFO) while a reply
leaves, which is what lets a host pipeline requests (the protocol's window).
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import crc, data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from ...cores import DEFAULT_CORE, make_core
from ...modes import ModeEngine
from .. import spec
from ..frame import MAX_ENCODED_FRAME
from ..messages import DeviceInfo, build_info_reply

__all__ = ["ProtocolEngine", "CobsEncoder", "ENCODER_LAYOUT"]

#: Payload of :attr:`CobsEncoder.i`: one content byte and whether it ends the frame.
ENCODER_LAYOUT = data.StructLayout({"data": 8, "last": 1})

# A COBS group holds at most this many data bytes (code 0xFF).
_COBS_RUN = 254


class CobsEncoder(wiring.Component):
    """COBS-encodes frames (as :func:`aes_fpga.appliance.cobs.cobs_encode`), each ending in 0x00.

    Content bytes enter on ``i`` (``last`` marks a frame's final byte); encoded bytes leave on
    ``o``. A group's bytes are held in a 254-byte buffer until its code byte is known (the next
    zero, the 254th byte or the end of the frame), then sent as code byte and data.

    Throughput: one byte per cycle on each side, but not both at once: ``i`` waits while a group
    is sent. Latency: up to 254 content bytes. Back-pressure on ``o`` stalls ``i``.
    """

    i: In(stream.Signature(ENCODER_LAYOUT))
    o: Out(stream.Signature(8))

    def elaborate(self, platform):
        m = Module()
        # 256 entries, so that the group counters can never address past the end.
        m.submodules.buf = buf = Memory(shape=8, depth=256, init=[])
        wp = buf.write_port()
        rp = buf.read_port(domain="comb")

        count = Signal(range(_COBS_RUN + 1))   # data bytes of the group being filled
        size = Signal(range(_COBS_RUN + 1))    # data bytes of the group being sent
        sent = Signal(range(_COBS_RUN + 1))
        # After the group: back to filling, an empty final group (0x01) then 0x00, or 0x00.
        then_one = Signal()
        then_end = Signal()

        byte, last = self.i.payload.data, self.i.payload.last
        m.d.comb += [wp.addr.eq(count), wp.data.eq(byte), rp.addr.eq(sent)]

        def after_group():
            """The state after a group's last byte: the trailing 0x01 group, the delimiter,
            or back to filling the next group."""
            with m.If(then_one):
                m.next = "ONE"
            with m.Elif(then_end):
                m.next = "END"
            with m.Else():
                m.next = "FILL"

        with m.FSM():
            with m.State("FILL"):
                m.d.comb += self.i.ready.eq(1)
                with m.If(self.i.valid):
                    with m.If(byte == 0):
                        # The zero ends the group; a frame ending in zero needs an empty group.
                        m.d.sync += [size.eq(count), count.eq(0), sent.eq(0),
                                     then_one.eq(last), then_end.eq(0)]
                        m.next = "CODE"
                    with m.Else():
                        m.d.comb += wp.en.eq(1)
                        with m.If(last | (count == _COBS_RUN - 1)):
                            # A full run ends the group without a zero; at the end of the frame
                            # no empty group follows (the shortest form).
                            m.d.sync += [size.eq(count + 1), count.eq(0), sent.eq(0),
                                         then_one.eq(0), then_end.eq(last)]
                            m.next = "CODE"
                        with m.Else():
                            m.d.sync += count.eq(count + 1)
            with m.State("CODE"):
                m.d.comb += [self.o.valid.eq(1),
                             self.o.payload.eq(Mux(size == _COBS_RUN, 0xFF, size + 1))]
                with m.If(self.o.ready):
                    with m.If(size != 0):
                        m.next = "DATA"
                    with m.Else():
                        after_group()
            with m.State("DATA"):
                m.d.comb += [self.o.valid.eq(1), self.o.payload.eq(rp.data)]
                with m.If(self.o.ready):
                    m.d.sync += sent.eq(sent + 1)
                    with m.If(sent == size - 1):
                        after_group()
            with m.State("ONE"):
                m.d.comb += [self.o.valid.eq(1), self.o.payload.eq(1)]
                with m.If(self.o.ready):
                    m.next = "END"
            with m.State("END"):
                m.d.comb += [self.o.valid.eq(1), self.o.payload.eq(0)]
                with m.If(self.o.ready):
                    m.next = "FILL"
        return m


def _first_failure(checks, ok):
    """The status of the first true condition of ``checks`` [(condition, status)], else
    ``ok``: the validation order of the protocol as a priority chain."""
    result = Const(int(ok), 8) if isinstance(ok, int) else ok
    for cond, status in reversed(checks):
        result = Mux(cond, int(status), result)
    return result


class ProtocolEngine(wiring.Component):
    """The AES appliance behind its byte streams: :mod:`aes_fpga.appliance.spec` around a core.

    ``rx`` takes the bytes the host sends, ``tx`` gives the bytes to send back; both are
    8-bit :mod:`amaranth.lib.stream` interfaces (put a UART on them for the real appliance).
    The engine answers every request exactly as :class:`aes_fpga.appliance.DeviceModel` with
    :attr:`info` does.

    Operation: a whole frame is received into the frame buffer (COBS decoded on the fly, CRC-32
    computed as it arrives), then checked in the protocol's order, executed, and its reply
    sent; ``rx`` is not ready from a frame's delimiter until the reply's last byte has entered
    the COBS encoder. ``PROCESS`` reads each block from the buffer (16 cycles), sends it through
    the :class:`~aes_fpga.modes.ModeEngine` and writes its result back in place (16 cycles, in
    parallel), so a chunk takes about 20 cycles per block plus the core's latency (CBC
    encryption: the core's latency per block, being serial); ``LOAD_KEY``
    and ``ZEROIZE`` hand keys to the core's key schedule (which then needs
    :func:`~aes_fpga.cores.drab_locus.key_load_cycles`; later blocks of that slot wait in the
    core). Frames arrive at up to one byte per cycle; replies leave at about one byte per two
    cycles (the encoder buffers each COBS group before sending it), far above any UART rate.

    Chaining: the message in progress (slot, op, mode) is kept here, the chaining value in the
    :class:`~aes_fpga.modes.ModeEngine`; a ``FIRST`` chunk's IV is held until the message's
    first block is sent, so a ``FIRST`` chunk without data still starts the message.

    Keys are write-only: key bytes go from the frame buffer to the key stream only, the key
    register is cleared once the core has taken the key, the whole frame buffer (and the header
    register holding the first key bytes) is overwritten with zeros after every ``LOAD_KEY``
    frame, accepted or refused (one cycle per buffer byte: 2048 for ``MAX_PAYLOAD``), and no
    reply contains key material.
    ``ZEROIZE`` sends the slot to the core's key schedule with ``zeroize`` set, which overwrites
    every round key of the slot (both ops) with zeros, and marks the slot empty, so ``PROCESS``
    answers ``KEY_NOT_LOADED``.

    ``BUSY`` is never sent: ``rx`` is back-pressured instead.

    Parameters
    ----------
    core : DrabLocus, optional
        The core (with the common core interface); by default a
        :class:`~aes_fpga.cores.DrabLocus` with ``key_slots`` and ``key_sizes``.
    key_slots : int
        Key slots (1 to 64) of the default core; must match ``core.key_slots`` when a core is
        given.
    key_sizes : tuple of int
        Key lengths of the default core; a given core's ``key_sizes`` are used instead.
    modes : tuple of protocol.Mode
        Modes to accept (``BAD_MODE`` for others).
    max_payload : int
        Largest payload accepted, reported by ``INFO``; from
        :data:`~aes_fpga.appliance.spec.MIN_MAX_PAYLOAD` to
        :data:`~aes_fpga.appliance.spec.MAX_PAYLOAD`.
        The frame buffer holds the content of the largest frame, ``max_payload + 9`` bytes,
        rounded up to a power of two (2048 bytes for ``MAX_PAYLOAD``).
    core_name : str
        Reported by ``INFO``.
    window : int
        Requests a host may have unanswered (``INFO``, see the protocol's *Pipelining*), 1 to
        255. On its own the engine loses nothing whatever the host sends (``rx`` is
        back-pressured); behind a UART without flow control the receive buffer in front of it
        must hold ``window - 1`` frames of :data:`~aes_fpga.appliance.frame.MAX_ENCODED_FRAME` bytes
        (:class:`~aes_fpga.appliance.UartAppliance` sizes its FIFO so).
    build_id : int
        32-bit bitstream identifier reported by ``INFO``.

    Attributes
    ----------
    info : DeviceInfo
        What ``INFO`` reports; ``protocol.DeviceModel(engine.info)`` is the engine's golden
        model.
    """

    def __init__(self, core=None, *, key_slots=4, key_sizes=(128, 192, 256),
                 modes=tuple(spec.Mode), max_payload=spec.MAX_PAYLOAD,
                 core_name="drab-locus", build_id=0, window=1):
        if core is not None:
            if core.key_slots != key_slots:
                raise ValueError(f"key_slots: {key_slots!r} differs from the core's "
                                 f"{core.key_slots}; give the same number (or leave out the "
                                 f"core)")
            key_sizes = core.key_sizes
        # DeviceInfo checks every value and names the field that is wrong (before a default
        # core is made, which would otherwise be left unused).
        self.info = DeviceInfo(core_name=core_name, build_id=build_id,
                                        key_sizes=key_sizes, key_slots=key_slots, modes=modes,
                                        max_payload=max_payload, window=window)
        if core is None:
            core = make_core(DEFAULT_CORE, key_slots=key_slots, key_sizes=key_sizes, tag_width=0)
        self.core = core
        super().__init__({
            "rx": In(stream.Signature(8)),
            "tx": Out(stream.Signature(8)),
        })

    def elaborate(self, platform):
        P = spec
        info = self.info
        S = info.key_slots
        m = Module()
        m.submodules.modes = me = ModeEngine(self.core)
        m.submodules.encoder = enc = CobsEncoder()
        wiring.connect(m, enc.o, wiring.flipped(self.tx))

        min_frame = P.HEADER_SIZE + P.CRC_SIZE
        # The content of the largest frame, rounded up to a power of two (one block RAM, and
        # no address is ever out of range, e.g. reading past a partial last CTR block).
        depth = 1 << (min_frame + info.max_payload - 1).bit_length()
        m.submodules.buffer = buf = Memory(shape=8, depth=depth, init=[])
        wp = buf.write_port()
        rp = buf.read_port()
        addr_w = max(depth, MAX_ENCODED_FRAME + P.BLOCK_SIZE).bit_length() + 1

        # ---- receive: COBS decode into the buffer, CRC over all but the last 4 bytes --------
        m.submodules.rx_crc = rx_crc = crc.catalog.CRC32_ETHERNET(data_width=8).create()
        enc_len = Signal(range(MAX_ENCODED_FRAME + 1))
        overflow = Signal()
        remain = Signal(8)          # data bytes left in the current group; 0: a code byte next
        zero_pending = Signal()     # the group before the next code byte ended with a zero
        clen = Signal(range(MAX_ENCODED_FRAME + 1))
        tail = Signal(8 * P.CRC_SIZE)       # the last 4 content bytes: the CRC once complete
        # Header and the first payload bytes as received (enough for every field checked).
        head = [Signal(8, name=f"head{i}")
                for i in range(P.HEADER_SIZE + P.PROCESS_HEADER_SIZE)]

        emit = Signal()
        emit_byte = Signal(8)
        with m.If(emit):
            m.d.sync += [clen.eq(clen + 1), tail.eq(Cat(emit_byte, tail[:-8]))]
            for i, h in enumerate(head):
                with m.If(clen == i):
                    m.d.sync += h.eq(emit_byte)
        m.d.comb += [
            rx_crc.data.eq(tail[-8:]),
            rx_crc.valid.eq(emit & (clen >= P.CRC_SIZE)),
            rx_crc.start.eq(clen == P.CRC_SIZE),
        ]

        cmd = head[0]
        seq = Cat(head[2], head[1])
        length = Cat(head[4], head[3])
        p = head[P.HEADER_SIZE:]
        plen = Signal(range(MAX_ENCODED_FRAME + 1))
        m.d.comb += plen.eq(clen - min_frame)

        # ---- message and key state -------------------------------------------------------
        loaded = Array(Signal(name=f"loaded{s}") for s in range(S))
        slot_w = max(1, (S - 1).bit_length())
        msg_active = Signal()
        msg_slot = Signal(8)
        msg_op = Signal(8)
        msg_mode = Signal(8)
        msg_first = Signal()        # the next block sent starts the message (carries msg_iv)
        msg_iv = Signal(128)

        # ---- request fields and checks -----------------------------------------------------
        slot, key_code = p[0], p[1]
        key_offset = 2                      # LOAD_KEY: slot, size code, then the key
        op, mode, flags = p[1], p[2], p[3]
        first = (flags & P.FLAG_FIRST) != 0
        last = (flags & P.FLAG_LAST) != 0
        iv_len = Mux(first, P.BLOCK_SIZE, 0)
        dlen = Signal(range(2 * MAX_ENCODED_FRAME))
        m.d.comb += dlen.eq(plen - P.PROCESS_HEADER_SIZE - iv_len)
        slot_ok = slot < S
        sizes = [P.KeySize.from_bits(b) for b in info.key_sizes]
        key_nbytes = Const(0, 6)            # (an unknown code is refused before its length)
        for size in P.KeySize:
            key_nbytes = Mux(key_code == size, size.nbytes, key_nbytes)
        flags_reserved = 0xFF & ~(P.FLAG_FIRST | P.FLAG_LAST)
        loaded_here = loaded[slot[:slot_w]]

        def any_of(value, members):
            return Cat(*[value == int(x) for x in members]).any()

        status_of = {
            P.Command.INFO: _first_failure([(plen != 0, P.Status.BAD_LENGTH)], P.Status.OK),
            P.Command.LOAD_KEY: _first_failure([
                (plen < key_offset, P.Status.BAD_LENGTH),
                (~slot_ok, P.Status.BAD_SLOT),
                (~any_of(key_code, sizes), P.Status.BAD_KEY_SIZE),
                (plen != key_offset + key_nbytes, P.Status.BAD_LENGTH),
            ], P.Status.OK),
            P.Command.ZEROIZE: _first_failure([
                (plen != 1, P.Status.BAD_LENGTH),
                (~slot_ok & (slot != P.ALL_SLOTS), P.Status.BAD_SLOT),
            ], P.Status.OK),
            P.Command.PROCESS: _first_failure([
                (plen < P.PROCESS_HEADER_SIZE, P.Status.BAD_LENGTH),
                (~slot_ok, P.Status.BAD_SLOT),
                (~any_of(op, P.Op), P.Status.BAD_OP),
                (~any_of(mode, info.modes), P.Status.BAD_MODE),
                ((flags & flags_reserved) != 0, P.Status.BAD_FLAGS),
                (first & (plen < P.PROCESS_HEADER_SIZE + P.BLOCK_SIZE), P.Status.BAD_LENGTH),
                (dlen > info.max_process_data, P.Status.BAD_LENGTH),
                ((dlen % P.BLOCK_SIZE != 0) & ~((mode == P.Mode.CTR) & last),
                 P.Status.LENGTH_NOT_MULTIPLE_OF_16),
                (~loaded_here, P.Status.KEY_NOT_LOADED),
                (~first & ~msg_active, P.Status.CHAIN_NOT_STARTED),
                (~first & ((slot != msg_slot) | (op != msg_op) | (mode != msg_mode)),
                 P.Status.CHAIN_MISMATCH),
            ], P.Status.OK),
        }
        command_status = Const(P.Status.UNKNOWN_COMMAND, 8)
        for command in reversed(P.Command):
            command_status = Mux(cmd == command, status_of[command], command_status)
        status = Signal(8)
        m.d.comb += status.eq(_first_failure([
            (rx_crc.crc != tail, P.Status.BAD_CRC),
            ((length != plen) | (length > P.MAX_PAYLOAD), P.Status.BAD_LENGTH),
        ], command_status))

        # ---- gathering bytes from the buffer into a register (IV, key, data blocks) ---------
        gather = Signal(256)
        g_base = Signal(addr_w)
        g_n = Signal(6)
        g_issued = Signal(6)
        g_got = Signal(6)
        g_read = Signal()
        g_cap = Signal()
        g_done = Signal()
        m.d.sync += g_cap.eq(g_read)
        with m.If(g_read):
            m.d.sync += g_issued.eq(g_issued + 1)
        with m.If(g_cap):
            m.d.sync += [gather.eq(Cat(rp.data, gather[:-8])), g_got.eq(g_got + 1)]
        m.d.comb += g_done.eq((g_got == g_n) & ~g_cap)

        def start_gather(base, n):
            return [g_base.eq(base), g_n.eq(n), g_issued.eq(0), g_got.eq(0)]

        # ---- PROCESS: blocks through the mode engine, results written back in place ---------
        data_base = Signal(addr_w)
        nblocks = Signal(range(P.MAX_PROCESS_DATA // P.BLOCK_SIZE + 2))
        sent = Signal.like(nblocks)
        written = Signal.like(nblocks)
        w_busy = Signal()
        w_byte = Signal(range(P.BLOCK_SIZE))
        w_block = Signal(128)
        w_addr = Signal(addr_w)
        m.d.comb += [w_addr.eq(data_base + written * P.BLOCK_SIZE + w_byte),
                     me.o.ready.eq(~w_busy)]
        with m.If(me.o.valid & me.o.ready):
            m.d.sync += [w_block.eq(me.o.payload.data), w_busy.eq(1), w_byte.eq(0)]
        with m.If(w_busy):
            m.d.sync += [w_block.eq(w_block << 8), w_byte.eq(w_byte + 1)]
            with m.If(w_byte == P.BLOCK_SIZE - 1):
                m.d.sync += [w_busy.eq(0), written.eq(written + 1)]

        m.d.comb += [
            me.i.payload.data.eq(gather[:128]),
            me.i.payload.first.eq(msg_first),
            me.i.payload.iv.eq(msg_iv),
            me.i.payload.mode.eq(msg_mode),
            me.i.payload.op.eq(msg_op),
            me.i.payload.slot.eq(msg_slot),
        ]

        # ---- keys ----------------------------------------------------------------------
        key_code_r = Signal(2)
        key_slot = Signal(8)
        zero_all = Signal()
        zero_bits = sizes[0]
        # A key gathered into the low bytes moves to the most significant ones (FIPS order).
        placed = gather
        for size in P.KeySize:
            placed = Mux(key_code_r == size, gather[:size.bits] << (len(gather) - size.bits),
                         placed)

        # ---- reply: header, payload, CRC into the COBS encoder ------------------------------
        m.submodules.tx_crc = tx_crc = crc.catalog.CRC32_ETHERNET(data_width=8).create()
        rep_cmd = Signal(8)
        rep_seq = Signal(16)
        rep_status = Signal(8)
        rep_len = Signal(range(P.MAX_PAYLOAD + 1))
        rep_info = Signal()         # payload bytes after the status from the INFO table
        k = Signal(range(P.MAX_FRAME + 1))
        k_next = Signal.like(k)
        info_reply = build_info_reply(info)
        info_rom = Array(Const(b, 8) for b in info_reply)
        info_index = (k - P.HEADER_SIZE)[:len(info_reply).bit_length()]
        body_end = P.HEADER_SIZE + rep_len
        crc_index = (k - body_end)[:2]     # 0 .. 3: most significant byte first
        rep_byte = Signal(8)
        with m.Switch(k):
            with m.Case(0):
                m.d.comb += rep_byte.eq(rep_cmd | P.REPLY_BIT)
            with m.Case(1):
                m.d.comb += rep_byte.eq(rep_seq[8:])
            with m.Case(2):
                m.d.comb += rep_byte.eq(rep_seq[:8])
            with m.Case(3):
                m.d.comb += rep_byte.eq(rep_len[8:])
            with m.Case(4):
                m.d.comb += rep_byte.eq(rep_len[:8])
            with m.Case(P.HEADER_SIZE):
                m.d.comb += rep_byte.eq(rep_status)
            with m.Default():
                with m.If(k >= body_end):
                    m.d.comb += rep_byte.eq(tx_crc.crc.word_select(~crc_index, 8))
                with m.Elif(rep_info):
                    m.d.comb += rep_byte.eq(info_rom[info_index])
                with m.Else():
                    m.d.comb += rep_byte.eq(rp.data)
        rep_fire = Signal()
        m.d.comb += [
            enc.i.payload.data.eq(rep_byte),
            enc.i.payload.last.eq(k == body_end + P.CRC_SIZE - 1),
            rep_fire.eq(enc.i.valid & enc.i.ready),
            k_next.eq(k + rep_fire),
            tx_crc.data.eq(rep_byte),
            tx_crc.valid.eq(rep_fire & (k < body_end)),
            tx_crc.start.eq(k == 0),
        ]

        def reply(status_value, length=1, info_table=0):
            return [rep_cmd.eq(cmd), rep_seq.eq(seq), rep_status.eq(status_value),
                    rep_len.eq(length), rep_info.eq(info_table), k.eq(0)]

        # ---- buffer ports: the receiver or the result writer writes, others read ------------
        data_read_addr = data_base + k_next - (P.HEADER_SIZE + 1)
        m.d.comb += rp.addr.eq(Mux(g_read, g_base + g_issued, data_read_addr))

        # ---- control --------------------------------------------------------------------
        wipe = Signal(range(depth))
        with m.FSM() as fsm:
            with m.State("RX"):
                m.d.comb += self.rx.ready.eq(1)
                b = self.rx.payload
                with m.If(self.rx.valid):
                    with m.If(b == 0):
                        m.d.sync += [enc_len.eq(0), overflow.eq(0), remain.eq(0),
                                     zero_pending.eq(0)]
                        # Empty, oversized, truncated or too short: dropped without a reply.
                        with m.If((enc_len != 0) & ~overflow & (remain == 0)
                                  & (clen >= min_frame)):
                            m.next = "CHECK"
                        with m.Else():
                            m.d.sync += clen.eq(0)
                    with m.Elif(enc_len == MAX_ENCODED_FRAME):
                        m.d.sync += overflow.eq(1)
                    with m.Elif(~overflow):
                        m.d.sync += enc_len.eq(enc_len + 1)
                        with m.If(remain == 0):
                            m.d.sync += [remain.eq(b - 1), zero_pending.eq(b != 0xFF)]
                            m.d.comb += [emit.eq(zero_pending), emit_byte.eq(0)]
                        with m.Else():
                            m.d.sync += remain.eq(remain - 1)
                            m.d.comb += [emit.eq(1), emit_byte.eq(b)]
                m.d.comb += [wp.addr.eq(clen), wp.data.eq(emit_byte),
                             wp.en.eq(emit & (clen < depth))]

            with m.State("CHECK"):
                m.d.sync += clen.eq(0)
                with m.If(status != P.Status.OK):
                    m.d.sync += [reply(status), wipe.eq(0)]
                    # A refused LOAD_KEY may still hold key bytes: wipe them too.
                    with m.If(cmd == P.Command.LOAD_KEY):
                        m.next = "WIPE"
                    with m.Else():
                        m.next = "REPLY"
                with m.Elif(cmd == P.Command.INFO):
                    m.d.sync += reply(P.Status.OK, len(info_reply), 1)
                    m.next = "REPLY"
                with m.Elif(cmd == P.Command.LOAD_KEY):
                    m.d.sync += [key_code_r.eq(key_code), key_slot.eq(slot),
                                 *start_gather(P.HEADER_SIZE + key_offset, key_nbytes)]
                    m.next = "KEY_GATHER"
                with m.Elif(cmd == P.Command.ZEROIZE):
                    m.d.sync += [zero_all.eq(slot == P.ALL_SLOTS),
                                 key_slot.eq(Mux(slot == P.ALL_SLOTS, 0, slot))]
                    m.next = "ZERO"
                with m.Else():
                    m.d.sync += [
                        data_base.eq(P.HEADER_SIZE + P.PROCESS_HEADER_SIZE + iv_len),
                        nblocks.eq((dlen + P.BLOCK_SIZE - 1) // P.BLOCK_SIZE),
                        sent.eq(0), written.eq(0),
                        msg_active.eq(~last), msg_slot.eq(slot), msg_op.eq(op),
                        msg_mode.eq(mode),
                        reply(P.Status.OK, 1 + dlen),
                    ]
                    with m.If(first):
                        m.d.sync += start_gather(P.HEADER_SIZE + P.PROCESS_HEADER_SIZE,
                                                 P.BLOCK_SIZE)
                        m.next = "IV_GATHER"
                    with m.Else():
                        m.next = "BLOCK_NEXT"

            with m.State("KEY_GATHER"):
                m.d.comb += g_read.eq(g_issued != g_n)
                with m.If(g_done):
                    m.next = "KEY_SEND"
            with m.State("KEY_SEND"):
                m.d.comb += [me.key.valid.eq(1), me.key.payload.key.eq(placed),
                             me.key.payload.slot.eq(key_slot)]
                with m.Switch(key_code_r):
                    for size in sizes:
                        with m.Case(size):
                            m.d.comb += me.key.payload.key_bits.eq(size)
                with m.If(me.key.ready):
                    # The key leaves the engine's registers as soon as the core has it.
                    m.d.sync += [gather.eq(0), loaded[key_slot[:slot_w]].eq(1),
                                 reply(P.Status.OK), wipe.eq(0)]
                    with m.If(msg_slot == key_slot):
                        m.d.sync += msg_active.eq(0)
                    m.next = "WIPE"
            with m.State("WIPE"):
                # Key bytes do not outlive their LOAD_KEY in the frame buffer either.
                m.d.sync += [wipe.eq(wipe + 1),
                             *[h.eq(0) for h in head[P.HEADER_SIZE + key_offset:]]]
                with m.If(wipe == depth - 1):
                    m.next = "REPLY"

            with m.State("ZERO"):
                m.d.comb += [me.key.valid.eq(1), me.key.payload.key.eq(0),
                             me.key.payload.key_bits.eq(zero_bits),
                             me.key.payload.slot.eq(key_slot), me.key.payload.zeroize.eq(1)]
                with m.If(me.key.ready):
                    m.d.sync += loaded[key_slot[:slot_w]].eq(0)
                    with m.If(zero_all | (msg_slot == key_slot)):
                        m.d.sync += msg_active.eq(0)
                    with m.If(zero_all & (key_slot != S - 1)):
                        m.d.sync += key_slot.eq(key_slot + 1)
                    with m.Else():
                        m.d.sync += reply(P.Status.OK)
                        m.next = "REPLY"

            with m.State("IV_GATHER"):
                m.d.comb += g_read.eq(g_issued != g_n)
                with m.If(g_done):
                    m.d.sync += [msg_iv.eq(gather[:128]), msg_first.eq(1)]
                    m.next = "BLOCK_NEXT"
            with m.State("BLOCK_NEXT"):
                with m.If(sent == nblocks):
                    m.next = "DRAIN"
                with m.Else():
                    m.d.sync += start_gather(data_base + sent * P.BLOCK_SIZE, P.BLOCK_SIZE)
                    m.next = "BLOCK_GATHER"
            with m.State("BLOCK_GATHER"):
                m.d.comb += g_read.eq(g_issued != g_n)
                with m.If(g_done):
                    m.next = "BLOCK_SEND"
            with m.State("BLOCK_SEND"):
                m.d.comb += me.i.valid.eq(1)
                with m.If(me.i.ready):
                    m.d.sync += [sent.eq(sent + 1), msg_first.eq(0)]
                    m.next = "BLOCK_NEXT"
            with m.State("DRAIN"):
                with m.If(written == nblocks):
                    m.next = "REPLY"

            with m.State("REPLY"):
                m.d.comb += enc.i.valid.eq(1)
                with m.If(rep_fire):
                    m.d.sync += k.eq(k + 1)
                    with m.If(enc.i.payload.last):
                        m.next = "RX"

        # The result writer and the wipe own the write port outside RX (rx is not ready there).
        with m.If(fsm.ongoing("WIPE")):
            m.d.comb += [wp.addr.eq(wipe), wp.data.eq(0), wp.en.eq(1)]
        with m.If(w_busy):
            m.d.comb += [wp.addr.eq(w_addr), wp.data.eq(w_block[-8:]),
                         wp.en.eq(w_addr < depth)]
        return m

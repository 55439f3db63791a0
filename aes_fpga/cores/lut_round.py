"""LUT-ROUND: one AES round per cycle in LUTs and flip-flops (no block RAM, no DSP).

After the encryption core of Daoud, Hussein and Rafla ("Optimization of AES using Vivado HLS",
CATA 2019: LUT/FF only, round keys generated beside the rounds), written as RTL, with decryption
and all three key lengths as parameters.

Datapath: one 128-bit state register. A round is, in one cycle,

- encryption: ``s <- MixColumns(ShiftRows(SubBytes(s))) ^ rk`` (no MixColumns in the last round);
- decryption (the straight inverse cipher, so the round keys are used backwards and need no
  InvMixColumns): ``s <- InvMixColumns(InvSubBytes(InvShiftRows(s)) ^ rk)``.

The 16 S-boxes are LUT ROMs (:class:`~aes_fpga.primitives.LutRom`; forward and inverse table
behind one 9-bit address when the core decrypts); InvMixColumns is MixColumns after the column
map ``[5 0 4 0; 0 5 0 4; ...]``, so both directions share one MixColumns.

Key schedule, on the fly: a 256-bit window holds 8 consecutive words of the expanded key. It is
loaded from the key slot with the block and moves 4 words each round, forward (encryption: in
round ``r`` it holds ``w[4r-4..4r+3]``, round key ``r`` in its second half) or backward
(decryption: round key ``Nr - r`` in its first half), through one SubWord (4 S-boxes) shared
by both directions; no multiplexer sits between the window register and the schedule logic. A
key slot stores the window's start for each direction: ``w[0..7]`` (the cipher key, completed
by the schedule's next words for AES-128/192) and, for decryption, ``w[4Nr-4..4Nr+3]`` (the
last two round keys), both computed at key load by running the same schedule forward.
"""

from fractions import Fraction

from amaranth.hdl import Array, Cat, Const, Module, Mux, ResetSignal, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .. import model
from ..hw import (
    gf_mul_const,
    inv_shift_rows,
    mix_column,
    rot_word,
    shift_rows,
    state_byte,
    state_from_bytes,
)
from ..params import KeySize, Op
from ..primitives import LutRom
from .interface import key_layout, request_layout, response_layout

__all__ = ["LutRound", "latency"]

# Step kinds of the schedule control table.
_INIT, _FWD, _BWD = range(3)


def latency(nr):
    """Cycles from request accepted to result valid for ``nr`` rounds: the input AddRoundKey
    cycle, then one cycle per round."""
    return nr + 1


def _rcon(i):
    """Rcon[i] = x^(i-1), for any i >= 1 (the schedule runs past the last word it needs)."""
    rc = 1
    for _ in range(i - 1):
        rc = model.xtime(rc)
    return rc


def _step_info(nk, kind, n):
    """Where SubWord goes in schedule step ``n`` of ``kind`` for ``Nk = nk``: ``(position or
    None, RotWord+Rcon?, rcon)``. Position ``k`` is the new word whose recurrence
    ``w[j] = w[j-Nk] ^ f(w[j-1])`` has a non-trivial ``f``.

    - ``_INIT``: the window holds ``w[Nk-8..Nk-1]`` (the cipher key at its end); new ``w[Nk..]``;
    - ``_FWD``: the window holds ``w[4n..4n+7]``; new ``w[4n+8..4n+11]``;
    - ``_BWD``: the window holds ``w[e-8..e-1]``, ``e = 4 Nr - 4 n + 4``; new ``w[e-12..e-9]``,
      each from the recurrence of word ``j = e - 12 + k + Nk``.
    """
    nr = nk + 6
    if kind == _INIT:
        j0 = nk
    elif kind == _FWD:
        j0 = 4 * n + 8
    else:
        j0 = 4 * nr - 4 * n + 4 - 12 + nk
    for k in range(4):
        j = j0 + k
        if j % nk == 0:
            return k, True, _rcon(j // nk)
        if nk == 8 and j % 8 == 4:
            return k, False, 0
    return None, False, 0


def _sub_word(m, word):
    return Cat(*(_rom(m, word.word_select(b, 8), model.SBOX) for b in range(4)))


def _rom(m, addr, table):
    """``table[addr]`` (8-bit entries) from a LUT ROM added to ``m``."""
    rom = LutRom(table, 8)
    m.submodules += rom
    m.d.comb += rom.addr.eq(addr)
    return rom.data


def _imc_pre(word):
    """The column map P with InvMixColumns = MixColumns o P: ``b'_i = 5 b_i ^ 4 b_(i+2)``."""
    b = [word.word_select(3 - i, 8) for i in range(4)]
    return Cat(*reversed([gf_mul_const(b[i], 5) ^ gf_mul_const(b[(i + 2) % 4], 4)
                          for i in range(4)]))


def _words(value):
    """The 32-bit words of a 256-bit window, word 0 most significant."""
    return [value.word_select(7 - k, 32) for k in range(8)]


def _step(window, nk, forward, pos, t_word, positions):
    """Four new words of the expanded key from an 8-word window (see :func:`_step_info`), with
    the non-trivial ``f`` at position ``pos`` (a signal; ``t_word`` its result) for ``Nk = nk``.
    ``positions`` are the values ``pos`` can take for this ``nk`` and direction (None: no
    SubWord in the step); with one only, no multiplexer is built.

    Also returns the SubWord input for each possible position, computed assuming nothing
    special before it (there is at most one such word per step)."""
    w = _words(window)
    new, free = [None] * 4, [None] * 4
    order = range(4) if forward else range(3, -1, -1)
    sub_in = {}
    for k in order:
        if forward:
            # new word k is w[i+8+k] = w[i+8+k-Nk] ^ f(w[i+7+k])
            base = w[8 + k - nk]
            prev_free, prev = (w[7], w[7]) if k == 0 else (free[k - 1], new[k - 1])
        else:
            # new word k is w[e-12+k] = w[e-12+k+Nk] ^ f(w[e-13+k+Nk])
            base = w[k + nk - 4]
            p = k + nk - 5
            prev_free, prev = (w[p], w[p]) if p >= 0 else (free[3], new[3])
        sub_in[k] = prev_free
        free[k] = base ^ prev_free
        if positions == {k}:
            new[k] = base ^ t_word
        elif k in positions:
            new[k] = base ^ Mux(pos == k, t_word, prev)
        else:
            new[k] = base ^ prev
    return Cat(*reversed(new)), sub_in


class LutRound(wiring.Component):
    """The LUT-ROUND AES core, behind the common core interface (``key``, ``i``, ``o``; see
    :mod:`aes_fpga.cores.interface`).

    One block at a time. Latency: ``Nr + 1`` cycles from request accepted to result valid (11 /
    13 / 15 for AES-128/192/256): one cycle for the initial AddRoundKey, one per round. The
    last round writes the result into an output register, where it waits until taken, and a
    new request is accepted in the next cycle, so saturated traffic sustains one block per
    ``Nr + 1`` cycles. Back-pressure: the last round of a block waits while the previous result
    is still in the output register, and nothing new is accepted meanwhile; no ready depends on
    another stream's ready or valid, except that a waiting key load goes before requests.
    Results leave in request order.

    Key load: ``Nr + 1`` cycles (the schedule runs forward to find the decryption window; 2
    cycles encryption-only), taken only when no block is in flight; requests wait meanwhile.
    Every slot starts with the all-zero key of the shortest supported length. A key whose
    length is not in ``key_sizes`` is dropped with a pulse on ``key_rejected``. A key transfer
    with ``zeroize`` set clears the slot's stored key words (the slot then expands the all-zero
    words as a key of its length).

    Parameters
    ----------
    key_slots : int
        Independent keys, 1 to 64 (each holds 256 bits, 512 with decryption, in flip-flops).
    key_sizes : tuple of int
        Supported key lengths, a non-empty subset of (128, 192, 256).
    tag_width : int
        Bits of the opaque request tag returned with each result (0 to 64).
    decrypt : bool
        Build the decryption path too. Without it the core is encryption-only: ``ops`` is
        ``(Op.ENCRYPT,)`` and the ``op`` field of a request is ignored (every block encrypts).
    """

    RESOURCE_GROUPS = {"": "rounds and key schedule"}

    def __init__(self, *, key_slots=1, key_sizes=(128, 192, 256), tag_width=8, decrypt=True):
        sizes = tuple(sorted(set(key_sizes)))
        if not sizes or any(k not in model.KEY_SIZES for k in sizes):
            raise ValueError(f"key_sizes: {tuple(key_sizes)!r} is not allowed; choose a "
                             "non-empty subset of (128, 192, 256)")
        if not isinstance(decrypt, bool):
            raise ValueError(f"decrypt: {decrypt!r} must be True or False")
        self.key_sizes = sizes
        self.key_slots = key_slots
        self.tag_width = tag_width
        self.decrypt = decrypt
        self.ops = (Op.ENCRYPT, Op.DECRYPT) if decrypt else (Op.ENCRYPT,)
        super().__init__({
            "key": In(stream.Signature(key_layout(key_slots))),
            "i": In(stream.Signature(request_layout(key_slots, tag_width))),
            "o": Out(stream.Signature(response_layout(tag_width))),
            "key_rejected": Out(1),
        })

    def latency(self, key_bits):
        """Cycles from a request accepted to its result, for keys of ``key_bits`` bits."""
        return latency(KeySize.from_bits(key_bits).rounds)

    def blocks_per_cycle(self, key_bits):
        """Sustained throughput with keys of ``key_bits`` bits: one block per ``Nr + 1``."""
        return Fraction(1, latency(KeySize.from_bits(key_bits).rounds))

    def _start_windows(self, key):
        """The slot contents for ``key``: (encryption window w[0..7], decryption window)."""
        nk = len(key) // 4
        w = model._expand(key)
        w += [0] * 8
        nr = nk + 6
        # Past the schedule's end the recurrence goes on (the windows may reach beyond it).
        for i in range(4 * nr + 4, len(w)):
            temp = w[i - 1]
            if i % nk == 0:
                temp = model._sub_word(model._rot_word(temp)) ^ (_rcon(i // nk) << 24)
            elif nk > 6 and i % nk == 4:
                temp = model._sub_word(temp)
            w[i] = w[i - nk] ^ temp

        def pack(words):
            return sum(x << (32 * (7 - k)) for k, x in enumerate(words))
        return pack(w[0:8]), pack(w[4 * nr - 4:4 * nr + 4])

    def elaborate(self, platform):
        return self._elaborate_ram()
        m = Module()
        sizes = [KeySize.from_bits(b) for b in self.key_sizes]
        nr_max = max(s.rounds for s in sizes)
        dec = self.decrypt

        # ---- key slots ---------------------------------------------------------------------
        zero_fwd, zero_bwd = self._start_windows(bytes(sizes[0].nbytes))
        kf = Array(Signal(256, init=zero_fwd, name=f"kf{n}") for n in range(self.key_slots))
        kb = Array(Signal(256, init=zero_bwd, name=f"kb{n}") for n in range(self.key_slots))
        ksz = Array(Signal(KeySize, init=sizes[0], name=f"ksz{n}")
                    for n in range(self.key_slots))

        # ---- control -----------------------------------------------------------------------
        busy = Signal()             # rounds in progress
        done = Signal()             # the state holds a result not yet taken
        loading = Signal()          # key load in progress
        rnd = Signal(range(nr_max + 1))
        size = Signal(KeySize, init=sizes[0])
        op = Signal(Op)
        tag = Signal(self.tag_width)
        state = Signal(128)
        # The result leaves from its own register, so the state takes the next block at once
        # and no ready depends on o.ready combinationally.
        out_block = Signal(128)
        out_tag = Signal(self.tag_width)
        window = Signal(256)
        load_slot = Signal.like(self.key.payload.slot)

        req = self.i.payload
        accept = Signal()
        m.d.comb += [
            self.key.ready.eq(~busy & ~loading),
            self.i.ready.eq(~busy & ~loading & ~self.key.valid),
            accept.eq(self.i.valid & self.i.ready),
            self.o.valid.eq(done),
            self.o.payload.block.eq(out_block),
            self.o.payload.tag.eq(out_tag),
        ]
        req_op = req.op if dec else Const(Op.ENCRYPT, Op)
        key_ok = Signal()
        m.d.comb += key_ok.eq(Cat(*(self.key.payload.key_bits == s for s in sizes)).any())
        start_load = Signal()
        m.d.comb += [start_load.eq(self.key.valid & self.key.ready & key_ok
                                   & ~self.key.payload.zeroize),
                     self.key_rejected.eq(self.key.valid & self.key.ready & ~key_ok)]

        # ---- key schedule step: one SubWord shared by every kind of step --------------------
        cur_size = Signal(KeySize)
        kind = Signal(range(3))
        n = Signal(range(nr_max + 1))
        src = window
        pos = Signal(3)             # 4 = no SubWord in this step
        rot = Signal()
        rcon = Signal(8)
        with m.Switch(Cat(n, kind, cur_size)):
            for s in sizes:
                for kd in ((_INIT, _FWD, _BWD) if dec else (_INIT, _FWD)):
                    for step in range(0 if kd == _INIT else 1, nr_max + 1):
                        # the window steps from round 1 (and load cycle 1) on: step n = rnd - 1
                        p, r, rc = _step_info(s.nbytes // 4, kd, step - 1)
                        with m.Case(step | kd << len(n) | int(s) << (len(n) + 2)):
                            m.d.comb += [pos.eq(4 if p is None else p), rot.eq(r),
                                         rcon.eq(rc)]
            with m.Default():
                m.d.comb += pos.eq(4)
        t_word = Signal(32)
        sub_in = Signal(32)
        new_by_size = {}
        sub_in_cases = []
        positions_of = {}
        for s in sizes:
            nk = s.nbytes // 4
            news, ins = {}, {}
            for forward in ((True, False) if dec else (True,)):
                kinds = (_INIT, _FWD) if forward else (_BWD,)
                positions = {_step_info(nk, kd, step)[0]
                             for kd in kinds for step in range(nr_max)}
                news[forward], ins[forward] = _step(src, nk, forward, pos, t_word, positions)
                positions_of[s, forward] = positions
            new_by_size[s] = news
            sub_in_cases.append((s, ins))
        with m.Switch(cur_size):
            for s, ins in sub_in_cases:
                with m.Case(s):
                    for forward, by_pos in ins.items():
                        cond = (kind != _BWD) if forward else (kind == _BWD)
                        for p, expr in by_pos.items():
                            possible = positions_of[s, forward] - {None}
                            if possible == {p}:
                                with m.If(cond):
                                    m.d.comb += sub_in.eq(expr)
                            elif p in possible:
                                with m.If(cond & (pos == p)):
                                    m.d.comb += sub_in.eq(expr)
        rotated = Signal(32)
        m.d.comb += [rotated.eq(Mux(rot, rot_word(sub_in), sub_in)),
                     t_word.eq(_sub_word(m, rotated) ^ Cat(Const(0, 24), rcon))]
        new = Signal(128)
        with m.Switch(cur_size):
            for s, news in new_by_size.items():
                with m.Case(s):
                    m.d.comb += new.eq(news[True])
                    if dec:
                        with m.If(kind == _BWD):
                            m.d.comb += new.eq(news[False])
        # The window after a step: forward, the new words go in at the end; backward, in front.
        # (Cat is least significant first: word 0 is bits 255:224.)
        stepped = Mux(kind == _BWD, Cat(src[128:], new), Cat(new, src[:128])) if dec \
            else Cat(new, src[:128])

        # ---- rounds ------------------------------------------------------------------------
        last = Signal()
        m.d.comb += last.eq(rnd == Mux(size == KeySize.AES128, 10,
                                       Mux(size == KeySize.AES192, 12, 14)))
        is_dec = Signal()
        m.d.comb += is_dec.eq(op == Op.DECRYPT)
        # Named signals between the stages: each one is used many times over (every bit of a
        # MixColumns output reads several bytes), and the simulator would copy an expression
        # into each use.
        rk = Signal(128)
        subbed = Signal(128)
        u = Signal(128)
        mixed = Signal(128)
        round_out = Signal(128)
        if dec:
            table = list(model.SBOX) + list(model.INV_SBOX)
            shifted = Signal(128)
            pre = Signal(128)
            m.d.comb += [
                rk.eq(Mux(is_dec, window[128:], window[:128])),
                shifted.eq(Mux(is_dec, inv_shift_rows(state), shift_rows(state))),
                subbed.eq(state_from_bytes(_rom(m, Cat(state_byte(shifted, b), is_dec), table)
                                           for b in range(16))),
                u.eq(subbed ^ Mux(is_dec, rk, 0)),
                pre.eq(Mux(is_dec, Cat(*reversed([_imc_pre(u.word_select(3 - c, 32))
                                                  for c in range(4)])), u)),
                mixed.eq(Cat(*reversed([mix_column(pre.word_select(3 - c, 32))
                                        for c in range(4)]))),
                round_out.eq(Mux(last, u, mixed) ^ Mux(is_dec, 0, rk)),
            ]
        else:
            m.d.comb += [
                rk.eq(window[:128]),
                subbed.eq(state_from_bytes(_rom(m, state_byte(shift_rows(state), b), model.SBOX)
                                           for b in range(16))),
                mixed.eq(Cat(*reversed([mix_column(subbed.word_select(3 - c, 32))
                                        for c in range(4)]))),
                round_out.eq(Mux(last, subbed, mixed) ^ rk),
            ]

        slot_kf, slot_kb = kf[req.slot], kb[req.slot]
        first_rk = Mux(req_op == Op.DECRYPT, slot_kb[:128], slot_kf[128:]) if dec \
            else slot_kf[128:]

        # ---- sequencing --------------------------------------------------------------------
        m.d.comb += [cur_size.eq(size), kind.eq(Mux(op == Op.DECRYPT, _BWD, _FWD)), n.eq(rnd)]
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += done.eq(0)
        with m.If(accept):
            # The window starts as stored and steps from round 1 on, so no multiplexer sits in
            # front of the schedule logic.
            m.d.sync += [state.eq(req.block ^ first_rk),
                         window.eq(Mux(req_op == Op.DECRYPT, slot_kb, slot_kf) if dec else slot_kf),
                         busy.eq(1),
                         rnd.eq(1), size.eq(ksz[req.slot]), op.eq(req_op), tag.eq(req.tag)]
        with m.Elif(busy & ~last):
            m.d.sync += [state.eq(round_out), window.eq(stepped), rnd.eq(rnd + 1)]
        with m.Elif(busy & (~done | self.o.ready)):
            # the last round completes only into a free (or being freed) output register
            m.d.sync += [out_block.eq(round_out), out_tag.eq(tag), busy.eq(0), done.eq(1)]

        # Key load: cycle 0 puts the key at the window's end; cycle 1 completes w[0..7] from it
        # (an _INIT step); then Nr - 1 forward steps reach w[4Nr-4..4Nr+3].
        kp = self.key.payload
        with m.If(start_load):
            for s in sizes:
                with m.If(kp.key_bits == s):
                    # the key (most significant bits of the 256) moved to the window's end
                    m.d.sync += window.eq(kp.key >> (256 - s.bits))
            m.d.sync += [ksz[kp.slot].eq(kp.key_bits), size.eq(kp.key_bits),
                         load_slot.eq(kp.slot), rnd.eq(0), op.eq(Op.ENCRYPT), loading.eq(1)]
        with m.Elif(self.key.valid & self.key.ready & kp.zeroize):
            m.d.sync += [kf[kp.slot].eq(0), kb[kp.slot].eq(0)]
        with m.Elif(loading & (rnd == 0)):
            m.d.comb += kind.eq(_INIT)
            full = Signal(256)
            for s in sizes:
                with m.If(size == s):
                    if s.bits == 256:
                        m.d.comb += full.eq(window)
                    else:
                        extra = 256 - s.bits
                        m.d.comb += full.eq(Cat(new[128 - extra:], window[:s.bits]))
            m.d.sync += [kf[load_slot].eq(full), window.eq(full), rnd.eq(1)]
            if not dec:
                m.d.sync += loading.eq(0)
        with m.Elif(loading):
            m.d.sync += [window.eq(stepped), rnd.eq(rnd + 1)]
            nr_now = Mux(size == KeySize.AES128, 10, Mux(size == KeySize.AES192, 12, 14))
            with m.If(rnd == nr_now - 1):
                m.d.sync += [kb[load_slot].eq(stepped), loading.eq(0)]
        return m

    def _elaborate_aes128(self):
        """AES-128 only: the round-key register holds one round key (4 words), the next one
        depends on it alone, and it is loaded with the request's first key before the request
        is accepted, so it feeds the schedule step and the AddRoundKey of every cycle (the
        first included) with no multiplexer in between."""
        m = Module()
        dec = self.decrypt
        nr = 10
        key0 = bytes(16)
        k_last = model._expand(key0)[4 * nr:4 * nr + 4]
        # The slots clear on reset explicitly (below), together with zeroize, so that both share
        # the flip-flops' synchronous reset pin instead of a multiplexer per bit.
        kf = Array(Signal(128, name=f"kf{n}", reset_less=True) for n in range(self.key_slots))
        k_last = sum(x << (32 * (3 - k)) for k, x in enumerate(k_last))
        kb = Array(Signal(128, name=f"kb{n}", init=k_last, reset_less=True)
                   for n in range(self.key_slots)) if dec else None

        busy = Signal()
        last = Signal()             # the round in progress is the last one
        done = Signal()
        loading = Signal()          # decryption key: stepping forward to the last round key
        rnd = Signal(range(nr + 1))
        op_dec = Signal()           # the block in flight decrypts
        tag = Signal(self.tag_width)
        state = Signal(128)
        out_block = Signal(128)
        out_tag = Signal(self.tag_width)
        rk = Signal(128)            # the round key of the next state update
        rc = Signal(8)              # Rcon of the next schedule step
        step_back = Signal()        # the next schedule step runs backward
        rk_ok = Signal()            # rk holds the first round key of (rk_slot, rk_dec)
        rk_slot = Signal.like(self.i.payload.slot)
        rk_dec = Signal()
        load_slot = Signal.like(self.key.payload.slot)

        req = self.i.payload
        req_dec = (req.op == Op.DECRYPT) if dec else Const(0)
        idle = Signal()
        accept = Signal()
        m.d.comb += [
            idle.eq(~busy & ~loading),
            self.key.ready.eq(idle),
            self.i.ready.eq(idle & ~self.key.valid & rk_ok & (rk_slot == req.slot)
                            & (rk_dec == req_dec)),
            accept.eq(self.i.valid & self.i.ready),
            self.o.valid.eq(done),
            self.o.payload.block.eq(out_block),
            self.o.payload.tag.eq(out_tag),
        ]
        kp = self.key.payload
        key_ok = Signal()
        m.d.comb += key_ok.eq(kp.key_bits == KeySize.AES128)
        start_load = Signal()
        m.d.comb += [start_load.eq(self.key.valid & self.key.ready & key_ok & ~kp.zeroize),
                     self.key_rejected.eq(self.key.valid & self.key.ready & ~key_ok)]

        # ---- key schedule step on rk: K_(r+1) forward, K_(r-1) backward ---------------------
        w = [rk.word_select(3 - k, 32) for k in range(4)]
        sub_in = Signal(32)
        m.d.comb += sub_in.eq(Mux(step_back, w[2] ^ w[3], w[3]) if dec else w[3])
        t = Signal(32)
        m.d.comb += t.eq(_sub_word(m, rot_word(sub_in)) ^ Cat(Const(0, 24), rc))
        fwd = [None] * 4
        fwd[0] = w[0] ^ t
        for k in range(1, 4):
            fwd[k] = w[k] ^ fwd[k - 1]
        stepped = Signal(128)
        if dec:
            bwd = [w[0] ^ t, w[1] ^ w[0], w[2] ^ w[1], w[3] ^ w[2]]
            m.d.comb += stepped.eq(Mux(step_back, Cat(*reversed(bwd)), Cat(*reversed(fwd))))
        else:
            m.d.comb += stepped.eq(Cat(*reversed(fwd)))
        rc_next = Mux(step_back, _inv_xtime(rc), _xtime(rc)) if dec else _xtime(rc)

        # ---- rounds ------------------------------------------------------------------------
        sub = Signal(128)
        mixed = Signal(128)
        nxt = Signal(128)
        if dec:
            table = list(model.SBOX) + list(model.INV_SBOX)
            shifted = Signal(128)
            u = Signal(128)
            pre = Signal(128)
            m.d.comb += [
                shifted.eq(Mux(op_dec, inv_shift_rows(state), shift_rows(state))),
                sub.eq(state_from_bytes(_rom(m, Cat(state_byte(shifted, b), op_dec), table)
                                        for b in range(16))),
                u.eq(sub ^ rk),
                pre.eq(Mux(op_dec, Cat(*reversed([_imc_pre(u.word_select(3 - c, 32))
                                                  for c in range(4)])), sub)),
                mixed.eq(Cat(*reversed([mix_column(pre.word_select(3 - c, 32))
                                        for c in range(4)]))),
                nxt.eq(Mux(accept, req.block ^ rk,
                           Mux(last, u, Mux(op_dec, mixed, mixed ^ rk)))),
            ]
        else:
            m.d.comb += [
                sub.eq(state_from_bytes(_rom(m, state_byte(shift_rows(state), b), model.SBOX)
                                        for b in range(16))),
                mixed.eq(Cat(*reversed([mix_column(sub.word_select(3 - c, 32))
                                        for c in range(4)]))),
                nxt.eq(rk ^ Mux(accept, req.block, Mux(last, sub, mixed))),
            ]

        # ---- sequencing --------------------------------------------------------------------
        finish = Signal()
        m.d.comb += finish.eq(busy & last & (~done | self.o.ready))
        preload = Signal()
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += done.eq(0)
        m.d.sync += rk_ok.eq(0)
        zeroize = Signal()
        m.d.comb += zeroize.eq(self.key.valid & self.key.ready & kp.zeroize)
        for n in range(self.key_slots):
            with m.If(ResetSignal()):
                m.d.sync += kf[n].eq(0)
                if dec:
                    m.d.sync += kb[n].eq(k_last)
            with m.Elif(zeroize & (kp.slot == n)):
                m.d.sync += kf[n].eq(0)
                if dec:
                    m.d.sync += kb[n].eq(0)
            with m.Elif(start_load & (kp.slot == n)):
                m.d.sync += kf[n].eq(kp.key >> 128)
        with m.If(start_load):
            if dec:
                m.d.sync += [rk.eq(kp.key >> 128), rc.eq(1), step_back.eq(0),
                             load_slot.eq(kp.slot), rnd.eq(1), loading.eq(1)]
        with m.Elif(zeroize):
            pass
        with m.Elif(accept):
            m.d.sync += [state.eq(nxt), rk.eq(stepped), rc.eq(rc_next), busy.eq(1),
                         rnd.eq(1), last.eq(0), op_dec.eq(req_dec), tag.eq(req.tag)]
        with m.Elif(busy & ~last):
            m.d.sync += [state.eq(nxt), rk.eq(stepped), rc.eq(rc_next), rnd.eq(rnd + 1),
                         last.eq(rnd == nr - 1)]
        with m.Elif(finish):
            m.d.sync += [out_block.eq(nxt), out_tag.eq(tag), busy.eq(0), done.eq(1)]
            m.d.comb += preload.eq(1)
        if dec:
            with m.Elif(loading):
                m.d.sync += [rk.eq(stepped), rc.eq(rc_next), rnd.eq(rnd + 1)]
                with m.If(rnd == nr):
                    m.d.sync += [kb[load_slot].eq(stepped), loading.eq(0)]
        with m.Elif(~busy):
            m.d.comb += preload.eq(1)
        with m.If(preload):
            # The next request's first round key, and the Rcon of its first step.
            m.d.sync += [rk.eq(Mux(req_dec, kb[req.slot], kf[req.slot]) if dec
                               else kf[req.slot]),
                         rc.eq(Mux(req_dec, _rcon(nr), 1)), step_back.eq(req_dec),
                         rk_ok.eq(1), rk_slot.eq(req.slot), rk_dec.eq(req_dec)]
        return m


def _xtime(v):
    """``v * x`` in GF(2^8) for an 8-bit signal."""
    return Cat(v[7], v[0] ^ v[7], v[1], v[2] ^ v[7], v[3] ^ v[7], v[4], v[5], v[6])


def _inv_xtime(v):
    """``v / x`` in GF(2^8) for an 8-bit signal (the inverse of :func:`_xtime`)."""
    return Cat(v[1] ^ v[0], v[2], v[3] ^ v[0], v[4] ^ v[0], v[5], v[6], v[7], v[0])


def _round_keys(key):
    """The round keys K_0 .. K_Nr of ``key`` as 128-bit integers."""
    w = model._expand(key)
    return [sum(x << (32 * (3 - k)) for k, x in enumerate(w[4 * r:4 * r + 4]))
            for r in range(len(w) // 4)]


def _elaborate_ram(self):
    m = Module()
    dec = self.decrypt
    sizes = [KeySize.from_bits(b) for b in self.key_sizes]
    slots = self.key_slots
    nr_of = {s: s.rounds for s in sizes}

    def nr_sel(size):
        if len(sizes) == 1:
            return Const(sizes[0].rounds, 4)
        out = Const(sizes[0].rounds, 4)
        for s in sizes[1:]:
            out = Mux(size == s, s.rounds, out)
        return out

    # ---- round keys: 16 entries per slot in LUT RAM, read combinationally -------------------
    init = []
    for _ in range(slots):
        keys = _round_keys(bytes(sizes[0].nbytes))
        init += keys + [0] * (16 - len(keys))
    m.submodules.round_keys = rkm = Memory(shape=128, depth=16 * slots, init=init)
    rd = rkm.read_port(domain="comb")
    wr = rkm.write_port()
    ksz = Array(Signal(KeySize, init=sizes[0], name=f"ksz{n}") for n in range(slots))

    # ---- control -----------------------------------------------------------------------------
    busy = Signal()
    last = Signal()
    done = Signal()
    loading = Signal()
    op_dec = Signal()
    slot = Signal.like(self.i.payload.slot)
    ra = Signal(4)              # index of the round key of the next state update
    end = Signal(4)             # index of the last round's key
    tag = Signal(self.tag_width)
    state = Signal(128)
    out_block = Signal(128)
    out_tag = Signal(self.tag_width)

    req = self.i.payload
    req_dec = (req.op == Op.DECRYPT) if dec else Const(0)
    accept = Signal()
    m.d.comb += [
        self.key.ready.eq(~busy & ~loading),
        self.i.ready.eq(~busy & ~loading & ~self.key.valid),
        accept.eq(self.i.valid & self.i.ready),
        self.o.valid.eq(done),
        self.o.payload.block.eq(out_block),
        self.o.payload.tag.eq(out_tag),
    ]
    req_nr = nr_sel(ksz[req.slot])
    first = Mux(req_dec, req_nr, 0) if dec else Const(0, 4)
    m.d.comb += rd.addr.eq(Mux(busy, Cat(ra, slot), Cat(first, req.slot)))
    rk = rd.data

    # ---- rounds ------------------------------------------------------------------------------
    sub = Signal(128)
    mixed = Signal(128)
    nxt = Signal(128)
    if dec:
        table = list(model.SBOX) + list(model.INV_SBOX)
        shifted = Signal(128)
        u = Signal(128)
        pre = Signal(128)
        m.d.comb += [
            shifted.eq(Mux(op_dec, inv_shift_rows(state), shift_rows(state))),
            sub.eq(state_from_bytes(_rom(m, Cat(state_byte(shifted, b), op_dec), table)
                                    for b in range(16))),
            u.eq(sub ^ rk),
            pre.eq(Mux(op_dec, Cat(*reversed([_imc_pre(u.word_select(3 - c, 32))
                                              for c in range(4)])), sub)),
            mixed.eq(Cat(*reversed([mix_column(pre.word_select(3 - c, 32))
                                    for c in range(4)]))),
            nxt.eq(Mux(accept, req.block ^ rk, Mux(last, u, Mux(op_dec, mixed, mixed ^ rk)))),
        ]
    else:
        m.d.comb += [
            sub.eq(state_from_bytes(_rom(m, state_byte(shift_rows(state), b), model.SBOX)
                                    for b in range(16))),
            mixed.eq(Cat(*reversed([mix_column(sub.word_select(3 - c, 32))
                                    for c in range(4)]))),
            nxt.eq(rk ^ Mux(accept, req.block, Mux(last, sub, mixed))),
        ]

    with m.If(self.o.valid & self.o.ready):
        m.d.sync += done.eq(0)
    with m.If(accept):
        nr = req_nr
        m.d.sync += [state.eq(nxt), busy.eq(1), slot.eq(req.slot), op_dec.eq(req_dec),
                     tag.eq(req.tag), last.eq(0)]
        if dec:
            m.d.sync += [ra.eq(Mux(req_dec, nr - 1, 1)), end.eq(Mux(req_dec, 0, nr))]
        else:
            m.d.sync += [ra.eq(1), end.eq(nr)]
    with m.Elif(busy & ~last):
        step = Mux(op_dec, ra - 1, ra + 1) if dec else ra + 1
        m.d.sync += [state.eq(nxt), ra.eq(step), last.eq(step == end)]
    with m.Elif(busy & (~done | self.o.ready)):
        m.d.sync += [out_block.eq(nxt), out_tag.eq(tag), busy.eq(0), done.eq(1)]

    # ---- key load: the expansion a word a cycle, SubWord a byte a cycle ----------------------
    # The key transfer stays valid (its payload held) until the last round key is written, so
    # the key words are read from it as they are needed. win holds the last Nk_max words, the
    # newest in the least significant word; round key K_r is its last 4 words just after
    # w[4r+3] came in.
    kp = self.key.payload
    key_ok = Signal()
    m.d.comb += key_ok.eq(Cat(*(kp.key_bits == s for s in sizes)).any())
    nw = max(s.nbytes for s in sizes) // 4
    win = Signal(32 * nw)
    wv = [win.word_select(nw - 1 - k, 32) for k in range(nw)]
    size = Signal(KeySize, init=sizes[0])
    i = Signal(6)               # index of the next word
    imod = Signal(3)            # i % Nk
    j = Signal(3)               # SubWord byte
    t = Signal(32)
    rc = Signal(8)
    fresh = Signal()            # win just took a word
    load_end = Signal()
    start = Signal()
    m.d.comb += [
        start.eq(self.key.valid & ~busy & ~loading & (key_ok | kp.zeroize)),
        self.key.ready.eq((~busy & ~loading & ~key_ok & ~kp.zeroize) | load_end),
        self.key_rejected.eq(self.key.valid & ~busy & ~loading & ~key_ok & ~kp.zeroize),
    ]
    nk_m1 = Signal(3)
    if len(sizes) > 1:
        m.d.comb += nk_m1.eq(nr_sel(size) - 7)
    else:
        m.d.comb += nk_m1.eq(sizes[0].nbytes // 4 - 1)
    key_phase = Signal()
    m.d.comb += key_phase.eq(i <= nk_m1)
    rot = Signal()
    need_sub = Signal()
    m.d.comb += [rot.eq(imod == 0),
                 need_sub.eq(~key_phase & ((imod == 0) | ((imod == 4) & (nk_m1 == 7))))]
    x = Mux(rot, rot_word(wv[nw - 1]), wv[nw - 1])
    sbox_addr = Signal(8)
    m.d.comb += sbox_addr.eq(x.word_select(~j[:2], 8))
    sb = _rom(m, sbox_addr, model.SBOX)
    if len(sizes) > 1:
        back = Mux(nk_m1 == 3, wv[nw - 4], Mux(nk_m1 == 5, wv[nw - 6], wv[0]))
    else:
        back = wv[0]
    f = Mux(need_sub, t ^ Cat(Const(0, 24), Mux(rot, rc, 0)), wv[nw - 1])
    key_words = Array(kp.key.word_select(7 - k, 32) for k in range(nw))
    key_word = Mux(kp.zeroize, 0, key_words[i[:3] if nw > 4 else i[:2]])
    new = Mux(key_phase, key_word, back ^ f)
    nr_load = nr_sel(size)
    m.d.comb += [wr.addr.eq(Cat((i[2:] - 1)[:4], kp.slot)), wr.data.eq(win[:128]),
                 wr.en.eq(loading & fresh & (i[:2] == 0) & (i != 0)),
                 load_end.eq(loading & fresh & (i[:2] == 0) & (i[2:] == nr_load + 1))]
    with m.If(start):
        sz = Mux(kp.zeroize, ksz[kp.slot], kp.key_bits)
        m.d.sync += [size.eq(sz), ksz[kp.slot].eq(sz), i.eq(0), imod.eq(0), j.eq(0),
                     rc.eq(1), fresh.eq(0), loading.eq(1)]
    with m.Elif(loading):
        m.d.sync += fresh.eq(0)
        with m.If(load_end):
            m.d.sync += loading.eq(0)
        with m.Elif(need_sub & ~j[2]):
            m.d.sync += [t.eq(Cat(sb, t[:24])), j.eq(j + 1)]
        with m.Else():
            m.d.sync += [win.eq(Cat(new, win[:32 * (nw - 1)])), i.eq(i + 1), fresh.eq(1),
                         j.eq(0), imod.eq(Mux(imod == nk_m1, 0, imod + 1))]
            with m.If(need_sub & rot):
                m.d.sync += rc.eq(_xtime(rc))
    return m


LutRound._elaborate_ram = _elaborate_ram


def _xtime(v):
    """``v * x`` in GF(2^8) for an 8-bit signal."""
    return Cat(v[7], v[0] ^ v[7], v[1], v[2] ^ v[7], v[3] ^ v[7], v[4], v[5], v[6])

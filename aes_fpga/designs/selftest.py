"""The self-test design: an AES core run through the FIPS-197 known answers forever, with the
verdict on LEDs. It is the first thing to put on a new board: if ``passed`` lights up, the
clock, the reset, the core and its memories all work on that part.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..cores.interface import KeyBits, Op
from ..hw import Heartbeat
from ..model import FIPS197_EXAMPLES

__all__ = ["SelfTest", "KNOWN_ANSWERS", "check_entropy_source"]

#: The known answers the design checks: :data:`aes_fpga.model.FIPS197_EXAMPLES` (key length ->
#: ``(key, plaintext, ciphertext)``, bytes, as printed in FIPS-197 Appendix C).
KNOWN_ANSWERS = FIPS197_EXAMPLES

_KEY_BITS = {128: KeyBits.AES128, 192: KeyBits.AES192, 256: KeyBits.AES256}


class SelfTest(wiring.Component):
    """Drive an AES core through the FIPS-197 known answers in a loop and show the verdict.

    For each key length in turn (ascending), the key of FIPS-197 Appendix C is loaded into key
    slot 0 through the core's ``key`` stream, then an ENCRYPT of the plaintext and a DECRYPT of
    the ciphertext are sent on ``i`` back to back, and both results are compared with the
    standard's answers as they come out of ``o``; then the next key length. After the last one a
    round is complete and the loop starts again, forever. ``o.ready`` is held high, so the core
    is never stalled by the self-test.

    Requests carry ``tag = {vector number, op}`` (op in bit 0), so a result is matched to the
    request it answers, and a late result of an earlier vector is told apart and ignored. A
    result with the current vector's tag that differs from the expected block, or that answers
    no outstanding request (a duplicate), is a failure. So is a vector that is not finished
    (key taken, both requests taken, both results back) within ``timeout_cycles`` of its key
    being offered: the vector is then abandoned and the next one starts, so a dead core cannot
    hang the loop. An offer the core has not taken by then is withdrawn; that breaks the stream
    rules, which is acceptable only because the core has already been found faulty.

    Portable: no clock, reset or vendor primitive of its own; everything runs in the ``sync``
    domain of the board module, whose reset restarts the test and clears ``failed``.

    Parameters
    ----------
    core : wiring.Component or callable
        The core under test, made a submodule: a component with the ``key``, ``i`` and ``o``
        streams of :mod:`aes_fpga.cores.interface` and a tag of at least 1 bit, e.g.
        :class:`aes_fpga.cores.DrabLocus`; or a callable (such as the class) that makes one.
    key_sizes : iterable of int, optional
        Key lengths to test; by default the core's ``key_sizes`` attribute. Must be supported
        by the core.
    heartbeat_cycles : int, optional
        ``heartbeat`` toggles every this many cycles: ``f_clk / 2`` blinks at 1 Hz (the default,
        50 000 000, is for a 100 MHz clock; the board module computes it from its clock).
    timeout_cycles : int, optional
        Bound on one vector, from its key being offered to its last result (4096; DrabLocus
        needs at most 657).
    corrupt : bool, optional
        Test/demo switch: flips the least significant bit of one expected value (the ENCRYPT
        answer of the first key length tested) when the design is elaborated, so the board
        shows how a failure looks, and the tests check that one is detected. Never set it for a
        real self-test.
    entropy : EntropySource, optional
        An entropy source (:class:`~aes_fpga.entropy.EntropySource`, or a component with its
        ``o`` stream of 128-bit words and its ``state``) to test beside the core, so that a
        board shows the source starting, staying healthy and conditioning before an appliance
        is built with it: its words are taken as they come and each is compared with the one
        before. The source failing (its health tests: ``state`` ``FAILED``) or a word equal to
        the one before it is a failure; ``passed`` also waits for the source's first word.

    Attributes
    ----------
    passed : Signal, out
        High once at least one complete round of all vectors has passed and no failure ever
        happened (since reset).
    failed : Signal, out
        Latched on the first wrong, unexpected or missing (timed-out) result, until reset.
    heartbeat : Signal, out
        Toggles every ``heartbeat_cycles`` cycles: the design is clocked and out of reset.
    rounds : Signal(16), out
        Completed rounds (passed or not), saturating at 65535: the loop is running.
    busy : Signal, out
        High until the first verdict: the first round is still running and nothing has failed
        yet. Exactly one of ``busy``, ``passed`` and ``failed`` is high at any time.
    entropy_ok : Signal, out
        With ``entropy`` only: the source is healthy (``OK``) and has given at least one word
        (a word equal to the one before it shows on ``failed``).

    Notes
    -----
    Round length with :class:`~aes_fpga.cores.DrabLocus`: a vector takes
    ``key_load_cycles(bits) + latency(Nr) + 2`` cycles
    (:func:`~aes_fpga.cores.drab_locus.key_load_cycles`; the key is offered in cycle ``k``; the
    slot unlocks and the ENCRYPT is accepted at ``k + key_load_cycles``, the DECRYPT one cycle
    later; its result comes ``latency(Nr)`` cycles after that and the next key is offered in the
    following cycle), i.e. 504 / 588 / 693 cycles for AES-128 / 192 / 256. A round is therefore
    504 cycles for ``DrabLocus(key_sizes=(128,))`` and 1785 cycles for ``DrabLocus()`` (all key
    sizes); ``tests/test_design_selftest.py::test_passes_and_round_length`` checks both
    exactly. At 100 MHz that is over 50 000 rounds a second: the verdict is immediate.

    LEDs (the board module maps the ports; the meaning is the same on every board):

    - ``heartbeat`` blinking: the clock runs and the design is out of reset;
    - ``passed`` on: every vector of every key length has passed, and still does;
    - ``failed`` on: some result was wrong or never came (latched until reset);
    - ``busy`` on: no verdict yet. The first round takes microseconds, so ``busy`` that stays on
      (with ``heartbeat`` still) means the design is held in reset or has no clock.

    With ``entropy``, the first verdict waits for the source's start-up (1024 samples) and
    first word (576 cycles at its defaults), a few microseconds more; ``failed`` then also
    means the source failed.

    Raises
    ------
    TypeError
        If ``core`` lacks the core interface, or ``entropy`` an entropy source's ports.
    ValueError
        For a bad argument, or a key length the core does not support.
    """

    def __init__(self, core, *, key_sizes=None, heartbeat_cycles=50_000_000,
                 timeout_cycles=4096, corrupt=False, entropy=None):
        if not isinstance(core, wiring.Component) and callable(core):
            core = core()
        members = getattr(getattr(core, "signature", None), "members", None)
        for name, flow in (("key", In), ("i", In), ("o", Out)):
            if members is None or name not in members or members[name].flow != flow:
                raise TypeError(f"core: {core!r} is not a core: it needs the key, i and o "
                                f"streams of aes_fpga.cores.interface")
        if len(core.i.payload.tag) < 1:
            raise ValueError("core: its tag is 0 bits wide; the self-test needs at least 1 "
                             "(bit 0 tells ENCRYPT from DECRYPT results)")
        supported = getattr(core, "key_sizes", None)
        if key_sizes is None:
            if supported is None:
                raise ValueError(f"key_sizes: {type(core).__name__} has no key_sizes attribute; "
                                 f"say which key lengths to test")
            key_sizes = supported
        key_sizes = tuple(sorted(set(key_sizes)))
        if not key_sizes or any(k not in KNOWN_ANSWERS for k in key_sizes):
            raise ValueError(f"key_sizes: {key_sizes!r} is not allowed; choose a non-empty "
                             f"subset of (128, 192, 256)")
        if supported is not None and not set(key_sizes) <= set(supported):
            raise ValueError(f"key_sizes: {key_sizes!r} includes lengths the core does not "
                             f"support (it supports {tuple(supported)!r})")
        for name, value in (("heartbeat_cycles", heartbeat_cycles),
                            ("timeout_cycles", timeout_cycles)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name}: {value!r} must be an integer of 1 or more")
        if entropy is not None:
            check_entropy_source(entropy)
        self.core = core
        self.key_sizes = key_sizes
        self.heartbeat_cycles = heartbeat_cycles
        self.timeout_cycles = timeout_cycles
        self.corrupt = bool(corrupt)
        self.entropy = entropy
        super().__init__({
            "passed": Out(1),
            "failed": Out(1),
            "heartbeat": Out(1),
            "rounds": Out(16),
            "busy": Out(1),
            **({} if entropy is None else {"entropy_ok": Out(1)}),
        })

    @property
    def status_leds(self):
        """The board's status LEDs: heartbeat, then good news, then bad news."""
        return [self.heartbeat, self.passed, self.failed]

    def vectors(self):
        """Per key length tested, in order: ``(key_bits, key, block, expected_enc, ct,
        expected_dec)``, the integers the hardware uses (``key`` already placed in the most
        significant bits of the 256-bit field; ``corrupt`` applied to the expected values
        only, so the core is still asked the right questions)."""
        rows = []
        for n, bits in enumerate(self.key_sizes):
            key, pt, ct = (int.from_bytes(b, "big") for b in KNOWN_ANSWERS[bits])
            exp_enc = ct ^ (1 if self.corrupt and n == 0 else 0)
            rows.append((bits, key << (256 - bits), pt, exp_enc, ct, pt))
        return rows

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self.core
        rows = self.vectors()
        last_vec = len(rows) - 1

        # ---- heartbeat: independent of the test, so it blinks whatever the core does --------
        m.submodules.heartbeat = heartbeat = Heartbeat(self.heartbeat_cycles)
        m.d.comb += self.heartbeat.eq(heartbeat.o)

        # ---- the vector under test and its constants ---------------------------------------
        vec = Signal(range(len(rows)))
        # Vector number in the tag above the op bit: a late result of an abandoned vector then
        # carries another number and is not taken for an answer to the current one.
        seq = Signal(len(core.i.payload.tag) - 1)
        key_payload = Signal(core.key.payload.shape())
        ct = Signal(128)
        exp_enc = Signal(128)
        exp_dec = Signal(128)
        with m.Switch(vec):
            for n, (bits, key, _pt, enc, c, dec) in enumerate(rows):
                with m.Case(n):
                    m.d.comb += [
                        key_payload.eq(core.key.payload.shape().const(
                            {"key": key, "key_bits": _KEY_BITS[bits], "slot": 0})),
                        ct.eq(c), exp_enc.eq(enc), exp_dec.eq(dec),
                    ]
        pt = Const(rows[0][2], 128)   # the same plaintext for every key length

        # ---- results: always taken, checked against this vector's expected values -----------
        sent = Signal(2)       # requests of this vector accepted, one bit per op
        got = Signal(2)        # their results received
        res = core.o.payload
        res_op = res.tag[0]
        arrived = Signal(2)    # one-hot by op: a result with this vector's number, this cycle
        good = Signal()
        bad = Signal()
        m.d.comb += [
            core.o.ready.eq(1),
            arrived.eq(Mux(core.o.valid & (res.tag[1:] == seq), Mux(res_op, 0b10, 0b01), 0)),
            good.eq((arrived & sent & ~got).any()
                    & (res.block == Mux(res_op, exp_dec, exp_enc))),
            bad.eq(arrived.any() & ~good),
        ]
        got_next = got | arrived
        m.d.sync += got.eq(got_next)

        timer = Signal(range(self.timeout_cycles))
        m.d.sync += timer.eq(timer + 1)
        expired = timer == self.timeout_cycles - 1

        ready = Const(1)                     # what else a pass waits for
        if self.entropy is not None:
            ready, entropy_bad = self._check_entropy(m)
            m.d.comb += self.entropy_ok.eq(ready)
            with m.If(entropy_bad):
                m.d.sync += self.failed.eq(1)
        with m.If(bad):
            m.d.sync += self.failed.eq(1)
        m.d.comb += [self.passed.eq((self.rounds != 0) & ready & ~self.failed),
                     self.busy.eq(~self.passed & ~self.failed)]

        def next_vector():
            # Overrides the updates of sent/got/timer above (later statements win).
            m.d.sync += [sent.eq(0), got.eq(0), timer.eq(0), seq.eq(seq + 1)]
            with m.If(vec == last_vec):
                m.d.sync += vec.eq(0)
                with m.If(self.rounds != 0xFFFF):
                    m.d.sync += self.rounds.eq(self.rounds + 1)
            with m.Else():
                m.d.sync += vec.eq(vec + 1)
            m.next = "KEY"

        def timeout():
            m.d.sync += self.failed.eq(1)
            next_vector()

        def request(op, block):
            m.d.comb += [
                core.i.valid.eq(1),
                core.i.payload.block.eq(block),
                core.i.payload.op.eq(op),
                core.i.payload.slot.eq(0),
                core.i.payload.tag.eq(Cat(Const(op.value, 1), seq)),
            ]

        with m.FSM():
            with m.State("KEY"):
                m.d.comb += [core.key.valid.eq(1), core.key.payload.eq(key_payload)]
                with m.If(expired):
                    timeout()
                with m.Elif(core.key.ready):
                    # The core holds back requests for the slot until the new schedule is
                    # written, so the requests can be offered at once.
                    m.next = "ENCRYPT"
            with m.State("ENCRYPT"):
                request(Op.ENCRYPT, pt)
                with m.If(expired):
                    timeout()
                with m.Elif(core.i.ready):
                    m.d.sync += sent[0].eq(1)
                    m.next = "DECRYPT"
            with m.State("DECRYPT"):
                request(Op.DECRYPT, ct)
                with m.If(expired):
                    timeout()
                with m.Elif(core.i.ready):
                    m.d.sync += sent[1].eq(1)
                    m.next = "WAIT"
            with m.State("WAIT"):
                with m.If(got_next == 0b11):
                    next_vector()
                with m.Elif(expired):
                    timeout()
        return m

    def _check_entropy(self, m):
        """The entropy source beside the core: ``(ok, bad)``, ``ok`` high while it is healthy
        and has given a word, ``bad`` for one cycle when it has failed or a word repeats."""
        from ..entropy import EntropyState
        m.submodules.entropy = src = self.entropy
        prev = Signal(128)
        seen = Signal()                           # a word has come since reset
        check = Signal()                          # a word came last cycle, after another
        same = Signal(4)                          # ... equal to the one before, by 32-bit part
        m.d.comb += src.o.ready.eq(1)
        # The comparison is registered by part, so no path compares 128 bits and latches the
        # verdict in one cycle.
        m.d.sync += [check.eq(src.o.valid & seen),
                     same.eq(Cat(*(src.o.payload[32 * k:32 * k + 32] == prev[32 * k:32 * k + 32]
                                   for k in range(4))))]
        with m.If(src.o.valid):
            m.d.sync += [prev.eq(src.o.payload), seen.eq(1)]
        healthy = src.state == EntropyState.OK
        return healthy & seen, (src.state == EntropyState.FAILED) | (check & same.all())


def check_entropy_source(entropy):
    """``entropy`` if it has an entropy source's ``o`` stream of 128-bit words and its
    ``state`` (see :class:`~aes_fpga.entropy.EntropySource`), else a TypeError."""
    members = getattr(getattr(entropy, "signature", None), "members", None)
    ok = members is not None and "o" in members and "state" in members
    if ok:
        o = members["o"]
        ok = (o.flow == Out and o.is_signature and len(entropy.o.payload) == 128
              and members["state"].flow == Out)
    if not ok:
        raise TypeError(f"entropy: {entropy!r} is not an entropy source: it needs the o stream "
                        f"of 128-bit words and the state of aes_fpga.entropy.EntropySource")
    return entropy

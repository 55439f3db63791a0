"""The sessions' handshake in gateware (aes_fpga.appliance.gateware.session_handshake) against
the reference device's SessionGate, byte for byte: the replies, the failures, the session keys
it hands to the record core and the places it holds."""

import random

import pytest
from amaranth.sim import Simulator

from aes_fpga.appliance import session_spec as S
from aes_fpga.appliance.errors import ProtocolError
from aes_fpga.appliance.frame import Frame
from aes_fpga.appliance.gateware.session_handshake import HandshakeOp, SessionHandshake
from aes_fpga.appliance.sessions import SessionGate
from aes_fpga.appliance.spec import Status
from aes_fpga.cores import Compact8
from aes_fpga.entropy.source import EntropyState

SECRET = bytes(range(7, 39))
MAX_CYCLES = 20_000


class Model:
    """The reference gate with the same device challenges as the gateware's entropy words."""

    def __init__(self, words, held=2):
        self.words = list(words)
        self.entropy_ok = False
        self.gate = SessionGate(SECRET, self.challenge, window=4, held=held)

    def challenge(self):
        return self.words.pop(0) if self.entropy_ok else None

    def answer(self, op, payload):
        command = (S.SessionCommand.OPEN_SESSION if op == HandshakeOp.OPEN_SESSION
                   else S.SessionCommand.AUTHENTICATE)
        try:
            return self.gate.answer(Frame(command, 1, payload), datagram=True, run=None)
        except ProtocolError as e:
            return bytes([e.status])


def beat(op, payload):
    """The gateware request of a handshake request payload."""
    if op == HandshakeOp.OPEN_SESSION:
        return {"op": op, "challenge": int.from_bytes(payload, "big")}
    sid, cryptogram = S.parse_authenticate_request(payload, ValueError)
    return {"op": op, "session_id": int.from_bytes(sid, "big"),
            "cryptogram": int.from_bytes(cryptogram, "big")}


def reply_bytes(op, rep):
    out = bytes([rep.status])
    if op == HandshakeOp.OPEN_SESSION and rep.status == Status.OK:
        out += (rep.session_id.to_bytes(4, "big") + rep.challenge.to_bytes(16, "big")
                + rep.cryptogram.to_bytes(16, "big"))
    return out


def run(script, words, held=2):
    """Run ``script(step)``, where ``await step(op, payload, entropy_ok=True)`` sends one
    request to both and returns ``(model reply, gateware reply, cycles, key beats,
    failures)``; ``step.dut`` and ``step.model`` are the two devices."""
    dut = SessionHandshake(Compact8(key_sizes=(256,)), held=held, first_slot=2)
    model = Model(words, held)

    drawn = [0]        # entropy words the gateware has taken

    async def bench(ctx):
        ctx.set(dut.key.payload, {"key": int.from_bytes(SECRET, "big"), "key_bits": 2,
                                  "slot": 0, "zeroize": 0})
        ctx.set(dut.key.valid, 1)
        await ctx.tick().until(dut.key.ready)
        ctx.set(dut.key.valid, 0)

        async def step(op, payload, entropy_ok=True):
            model.entropy_ok = entropy_ok
            ctx.set(dut.entropy_state, EntropyState.OK if entropy_ok else EntropyState.STARTUP)
            expected = model.answer(op, payload)
            ctx.set(dut.req.payload, beat(op, payload))
            ctx.set(dut.req.valid, 1)
            ctx.set(dut.rep.ready, 1)
            ctx.set(dut.session_key.ready, 1)
            keys, failures = [], 0
            for cycles in range(MAX_CYCLES):
                more = drawn[0] < len(words)
                ctx.set(dut.entropy_words.valid, more)
                if more:
                    ctx.set(dut.entropy_words.payload, int.from_bytes(words[drawn[0]], "big"))
                    drawn[0] += ctx.get(dut.entropy_words.ready)
                if ctx.get(dut.session_key.valid):
                    keys.append(ctx.get(dut.session_key.payload))
                failures += ctx.get(dut.failure)
                if ctx.get(dut.rep.valid):
                    got = reply_bytes(op, ctx.get(dut.rep.payload))
                    await ctx.tick()
                    ctx.set(dut.req.valid, 0)
                    return expected, got, cycles, keys, failures
                await ctx.tick()
            raise AssertionError("no reply in time")

        step.dut, step.model = dut, model
        await script(ctx, step)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()


def held_ids(ctx, dut):
    held = ctx.get(dut.held)
    return sorted(ctx.get(dut.held_ids[k]).to_bytes(4, "big") for k in range(len(dut.held_ids))
                  if held >> k & 1)


def test_the_handshake_against_the_reference_gate():
    rng = random.Random(1)
    words = [rng.randbytes(16) for _ in range(2)]
    host = rng.randbytes(16)

    async def script(ctx, step):
        open_ = HandshakeOp.OPEN_SESSION
        auth = HandshakeOp.AUTHENTICATE
        # No session before the entropy source is up; nothing changes.
        want, got, *_ = await step(open_, host, entropy_ok=False)
        assert got == want == bytes([Status.ENTROPY_FAILED])
        want, got, cycles, _, _ = await step(open_, host)
        assert got == want and want[0] == Status.OK
        sid, device, cryptogram = S.parse_open_reply(got, ValueError)
        assert device == words[0]
        keys = S.derive_session(SECRET, host, device, sid)
        assert cryptogram == keys.device_cryptogram
        # The cryptograms' 6 chained encryptions (the keys wait for AUTHENTICATE): under
        # 2,000 cycles.
        assert 1000 < cycles < 2000
        # A retransmitted OPEN_SESSION: the same reply at once, no challenge drawn.
        want, got, cycles, _, _ = await step(open_, host)
        assert got == want == S.build_open_reply(sid, device, cryptogram) and cycles < 5
        # Wrong id, then wrong cryptogram (counted), then the right one.
        for bad_id, bad_cg, status, failed in ((b"\xff" * 4, keys.host_cryptogram,
                                                Status.UNKNOWN_SESSION, 0),
                                               (sid, bytes(16), Status.BAD_CRYPTOGRAM, 1)):
            want, got, _, beats, failures = await step(
                auth, S.build_authenticate_request(bad_id, bad_cg))
            assert got == want == bytes([status]) and failures == failed and not beats
        assert step.model.gate.failures == 1
        want, got, cycles, beats, _ = await step(auth, S.build_authenticate_request(
            sid, keys.host_cryptogram))
        assert got == want == bytes([Status.OK])
        # The keys' 12 chained encryptions (here the key port takes each beat at once): the
        # whole handshake stays well inside a millisecond.
        assert 2000 < cycles < 4000
        # The session's keys go to slots 2 and 3 (above LOAD_KEY's), AES-256.
        assert [(b.slot, b.key_bits, b.key.to_bytes(32, "big")) for b in beats] == [
            (2, 2, keys.request_key), (3, 2, keys.reply_key)]
        assert held_ids(ctx, step.dut) == step.model.gate.session_ids == [sid]
        # Its retransmission: OK again, no keys sent again, nothing changes.
        want, got, _, beats, _ = await step(auth, S.build_authenticate_request(
            sid, keys.host_cryptogram))
        assert got == want == bytes([Status.OK]) and not beats
        assert held_ids(ctx, step.dut) == [sid]

    run(script, words)


@pytest.mark.slow
def test_places_replaced_oldest_first_and_ended():
    rng = random.Random(2)
    words = [rng.randbytes(16) for _ in range(5)]

    async def script(ctx, step):
        dut, gate = step.dut, step.model.gate

        async def session():
            host = rng.randbytes(16)
            want, got, *_ = await step(HandshakeOp.OPEN_SESSION, host)
            assert got == want
            sid, device, _ = S.parse_open_reply(got, ValueError)
            keys = S.derive_session(SECRET, host, device, sid)
            want, got, _, beats, _ = await step(HandshakeOp.AUTHENTICATE,
                                                S.build_authenticate_request(
                                                    sid, keys.host_cryptogram))
            assert got == want == b"\x00"
            return sid, beats

        sids = [await session() for _ in range(3)]
        # Two places: the third session took the first's place (its slots, 2 and 3).
        assert held_ids(ctx, dut) == sorted(gate.session_ids) == [sids[1][0], sids[2][0]]
        assert [b.slot for b in sids[2][1]] == [2, 3]
        # A record taken: its AUTHENTICATE is no longer answered OK.
        ctx.set(dut.record_taken, 1)
        ctx.set(dut.taken_place, 1)
        await ctx.tick()
        ctx.set(dut.record_taken, 0)
        # CLOSE of place 0, then a new session takes it; ZEROIZE ends all.
        ctx.set(dut.end, 1)
        ctx.set(dut.end_place, 0)
        await ctx.tick()
        ctx.set(dut.end, 0)
        assert held_ids(ctx, dut) == [sids[1][0]]
        # (The model's gate ends a session only by a sealed CLOSE_SESSION: from here on the
        # gateware alone.)
        sid, beats = await session()
        assert [b.slot for b in beats] == [2, 3]
        assert held_ids(ctx, dut) == sorted([sids[1][0], sid])
        ctx.set(dut.end_all, 1)
        await ctx.tick()
        ctx.set(dut.end_all, 0)
        gate.end_all()
        assert held_ids(ctx, dut) == [] == gate.session_ids

    run(script, words)

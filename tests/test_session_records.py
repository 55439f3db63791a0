# amaranth: UnusedElaboratable=no
"""Records in the executor of a device with a secret (aes_fpga.appliance.gateware.
session_records), every reply datagram byte for byte against the reference device with the
same secret and device challenges: a session's records (LOAD_KEY, PROCESS in ECB, CTR and
GCM, STATS, CLOSE_SESSION inside records), and the attacks a host on the link can make (a
flipped ciphertext or header bit, a replayed record, a record copied into another session, a
record before AUTHENTICATE), each refused as the reference refuses it, the next good record
answered as before.

The executor sits between a frame check and a reply builder without CRC (UDP datagrams), its
entropy source replaced by the words the test gives."""

import random

import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from aes_fpga.appliance import session_spec as S
from aes_fpga.appliance.frame import frame_content
from aes_fpga.appliance.gateware.check import FrameCheck
from aes_fpga.appliance.gateware.executor import Executor
from aes_fpga.appliance.gateware.reply import ReplyBuilder
from aes_fpga.appliance.messages import (
    DeviceInfo,
    build_load_key_request,
    build_process_request,
    build_zeroize_request,
)
from aes_fpga.appliance.reference import DeviceModel
from aes_fpga.appliance.spec import (
    ALL_SLOTS,
    ENTROPY_COUNTERS,
    MIN_MAX_PAYLOAD,
    Command,
    EntropyStatus,
    Mode,
    Op,
    Status,
)
from aes_fpga.cores import Compact8
from aes_fpga.entropy.source import EntropyState

SECRET = bytes(range(90, 122))
KEY = bytes(range(16))
RECORD = S.SessionCommand.RECORD
OPEN, AUTH = S.SessionCommand.OPEN_SESSION, S.SessionCommand.AUTHENTICATE
MAX_CYCLES = 50_000
QUIET = 100                     # cycles after a request is taken without a reply: none comes


class Bench:
    """The executor with a secret in its frame layers, and the reference device."""

    def __init__(self, seed=0, max_payload=MIN_MAX_PAYLOAD + 60, gcm="lut", window=1,
                 max_records=S.MAX_RECORDS):
        modes = tuple(Mode) if gcm else tuple(m for m in Mode if m != Mode.GCM)
        info = DeviceInfo(key_slots=1, key_sizes=(128,), modes=modes, window=window,
                          entropy=True, sessions=True, max_payload=max_payload)
        self.executor = Executor(Compact8(key_slots=1, key_sizes=(128,), tag_width=0), info,
                                 counters=len(ENTROPY_COUNTERS), gcm=gcm,
                                 device_secret=SECRET, datagram=True,
                                 max_records=max_records)
        self.check = FrameCheck(max_payload, key_bytes=self.executor.key_bytes, crc=False,
                                gcm=gcm is not None, more_commands=tuple(S.SessionCommand))
        self.reply = ReplyBuilder(crc=False)
        self.rng = random.Random(seed)
        # The reference's device challenge is the gateware's (read from its reply).
        self.challenge = None
        self.model = DeviceModel(info, device_secret=SECRET,
                                 challenge_source=lambda: self.challenge,
                                 max_records=max_records)
        self.seq = 0

    def top(self):
        m = Module()
        m.submodules.executor, m.submodules.check = self.executor, self.check
        m.submodules.reply = self.reply
        wiring.connect(m, self.check.req, self.executor.req)
        wiring.connect(m, self.check.payload, self.executor.payload)
        wiring.connect(m, self.executor.reply, self.reply.desc)
        wiring.connect(m, self.executor.data, self.reply.data)
        return m

    async def datagram(self, ctx, raw):
        """Send one datagram; return the gateware's reply datagram (``b""`` for none)."""
        check, rep = self.check, self.reply
        ctx.set(rep.o.ready, 1)
        beats = [{"data": b, "end": 0, "drop": 0} for b in raw] + [{"end": 1}]
        ctx.set(check.i.valid, 1)
        taken = check.req.valid & check.req.ready
        out, quiet = bytearray(), None
        for _ in range(MAX_CYCLES):
            if beats:
                ctx.set(check.i.payload, beats[0])
            _, _, sent, valid, byte, took = await ctx.tick().sample(
                check.i.ready, rep.o.valid, rep.o.payload, taken)
            if beats and sent:
                beats.pop(0)
                if not beats:
                    ctx.set(check.i.valid, 0)
                continue
            if valid:
                out.append(byte.data)
                if byte.last:
                    return bytes(out)
            elif took and not out:
                quiet = 0
            # (Taken without a reply begun: none comes if none has within QUIET cycles.)
            if quiet is not None:
                quiet += 1
                if quiet > QUIET:
                    return b""
        raise AssertionError("no reply in time")

    async def send(self, ctx, command, payload=b"", *, seq=None, raw=None):
        """One request to both; the replies must be equal; return the reply payload."""
        self.seq += 1
        raw = raw or frame_content(command, self.seq if seq is None else seq, payload,
                                   crc=False)
        # (The entropy source's next word: a fresh one for every request.)
        ctx.set(self.executor.entropy_words.payload, self.rng.getrandbits(128))
        got = await self.datagram(ctx, raw)
        self.challenge = None
        if raw[0] == OPEN and got[5:6] == b"\x00":
            self.challenge = S.parse_open_reply(got[5:], ValueError)[1]
        want = self.model.datagram(raw)
        assert got.hex() == want.hex()
        return got[5:]

    async def session(self, ctx, rng):
        """Open and authenticate a session on both; return its keys."""
        host = rng.randbytes(16)
        reply = await self.send(ctx, OPEN, host)
        sid, device, _ = S.parse_open_reply(reply, ValueError)
        keys = S.derive_session(SECRET, host, device, sid)
        assert await self.send(ctx, AUTH, S.build_authenticate_request(
            sid, keys.host_cryptogram)) == b"\x00"
        return keys

    def sealed(self, keys, counter, command, payload=b""):
        """The datagram of a record carrying ``command`` (the next seq)."""
        seq = self.seq + 1
        return frame_content(RECORD, seq, S.seal_request(keys, RECORD, seq, counter, command,
                                                         payload), crc=False)

    async def record(self, ctx, keys, counter, command, payload=b""):
        """A record to both; the reply payload it carries (``None``: dropped; a refusal in the
        clear: its status alone)."""
        self.last_raw = raw = self.sealed(keys, counter, command, payload)
        reply = await self.send(ctx, RECORD, raw=raw)
        if len(reply) <= 1:
            return reply or None
        return S.open_reply(keys, 0xA2, self.seq, counter, reply)

    def run(self, script):
        sim = Simulator(self.top())
        sim.add_clock(1e-6)

        async def bench(ctx):
            ex = self.executor
            ctx.set(ex.entropy_state, EntropyState.OK)
            # (STATS: the source's state, OK, and no failures, as the reference's.)
            ctx.set(ex.counters[0], EntropyStatus.OK)
            ctx.set(ex.entropy_words.valid, 1)
            await script(ctx, self)

        sim.add_testbench(bench)
        sim.run()


def stats_failures(reply):
    return int.from_bytes(reply[-2:], "big")


@pytest.mark.slow
def test_records_in_a_session_and_a_dropped_one():
    # (The cheapest: a mode engine without GCM, three records; still 8 s of CPU.)
    rng = random.Random(2)

    async def script(ctx, b):
        keys = await b.session(ctx, rng)
        assert await b.record(ctx, keys, 1, Command.LOAD_KEY,
                              build_load_key_request(0, KEY)) == b"\x00"
        assert b.model.key_loaded(0)
        bad = bytearray(b.sealed(keys, 2, Command.STATS))
        bad[-1] ^= 0x80
        assert await b.send(ctx, RECORD, raw=bytes(bad)) == b""
        reply = await b.record(ctx, keys, 2, Command.STATS)
        assert reply[0] == Status.OK and stats_failures(reply) == 1

    Bench(gcm=None).run(script)


@pytest.mark.slow
def test_a_session_of_records_and_the_attacks_on_it():
    rng = random.Random(3)

    async def script(ctx, b):
        assert (await b.send(ctx, Command.INFO))[0] == Status.OK
        # Before AUTHENTICATE the pending session's id is not held: UNKNOWN_SESSION.
        host = rng.randbytes(16)
        reply = await b.send(ctx, OPEN, host)
        sid, device, _ = S.parse_open_reply(reply, ValueError)
        keys = S.derive_session(SECRET, host, device, sid)
        early = b.sealed(keys, 1, Command.STATS)
        assert await b.send(ctx, RECORD, raw=early) == bytes([Status.UNKNOWN_SESSION])
        assert await b.send(ctx, AUTH, S.build_authenticate_request(
            sid, keys.host_cryptogram)) == b"\x00"
        # LOAD_KEY inside a record; then PROCESS under it.
        assert await b.record(ctx, keys, 1, Command.LOAD_KEY,
                              build_load_key_request(0, KEY)) == b"\x00"
        assert b.model.key_loaded(0)
        data = rng.randbytes(32)
        reply = await b.record(ctx, keys, 2, Command.PROCESS, build_process_request(
            0, Op.ENCRYPT, Mode.ECB, data, first=True, last=True))
        assert reply[0] == Status.OK and len(reply) == 33
        # Its retransmission: the kept reply, not run again, not counted.
        sealed = await b.send(ctx, RECORD, raw=b.last_raw)
        assert S.open_reply(keys, 0xA2, 6, 2, sealed) == reply
        # Attacks: a flipped ciphertext bit, a flipped header bit: dropped, counted.
        good = bytearray(b.sealed(keys, 3, Command.STATS))
        for at in (5 + 12, 1):
            bad = bytearray(good)
            bad[at] ^= 0x04
            assert await b.send(ctx, RECORD, raw=bytes(bad)) == b""
        # A replayed record (counter 1, long past the window): dropped, counted.
        assert await b.send(ctx, RECORD, raw=early) == b""
        # The next good record: STATS shows the three failures.
        reply = await b.record(ctx, keys, 3, Command.STATS)
        assert reply[0] == Status.OK and stats_failures(reply) == 3
        # The same record with another seq (sealed again): dropped, counted.
        again = b.sealed(keys, 3, Command.STATS)
        assert await b.send(ctx, RECORD, raw=again) == b""
        # A clear request is still refused.
        assert await b.send(ctx, Command.STATS) == bytes([Status.SESSION_REQUIRED])

    Bench().run(script)


@pytest.mark.slow
def test_modes_other_sessions_close_and_zeroize_in_records():
    rng = random.Random(4)

    async def script(ctx, b):
        keys = await b.session(ctx, rng)
        assert await b.record(ctx, keys, 1, Command.LOAD_KEY,
                              build_load_key_request(0, KEY)) == b"\x00"
        iv = rng.randbytes(16)
        # CTR over two records (the message goes on across them), then GCM.
        for counter, (chunk, first, last) in enumerate(
                ((rng.randbytes(16), True, False), (rng.randbytes(5), False, True)), 2):
            reply = await b.record(ctx, keys, counter, Command.PROCESS, build_process_request(
                0, Op.ENCRYPT, Mode.CTR, chunk, first=first, last=last,
                iv=iv if first else None))
            assert reply[0] == Status.OK
        j0 = rng.randbytes(12) + b"\x00\x00\x00\x01"
        for counter, (chunk, first, last) in enumerate(
                ((rng.randbytes(20), True, False), (b"", False, True)), 4):
            reply = await b.record(ctx, keys, counter, Command.PROCESS, build_process_request(
                0, Op.ENCRYPT, Mode.GCM, chunk, first=first, last=last,
                iv=j0 if first else None))
            assert reply[0] == Status.OK
        # An inner command the device does not run in a record: refused, sealed.
        assert await b.record(ctx, keys, 6, OPEN, bytes(16)) == bytes(
            [Status.UNKNOWN_COMMAND])
        # A second session; a record of the first copied into it fails its tag.
        other = await b.session(ctx, rng)
        copied = bytearray(b.sealed(keys, 7, Command.STATS))
        copied[5:9] = other.session_id
        assert await b.send(ctx, RECORD, raw=bytes(copied)) == b""
        # A third session replaces the oldest (the first).
        third = await b.session(ctx, rng)
        assert await b.send(ctx, RECORD, raw=b.sealed(keys, 7, Command.STATS)) == bytes(
            [Status.UNKNOWN_SESSION])
        # CLOSE_SESSION ends the second session after its sealed OK.
        assert await b.record(ctx, other, 1, S.SessionCommand.CLOSE_SESSION) == b"\x00"
        assert await b.send(ctx, RECORD, raw=b.sealed(other, 2, Command.STATS)) == bytes(
            [Status.UNKNOWN_SESSION])
        # ZEROIZE of every slot ends every session after its sealed OK.
        assert await b.record(ctx, third, 1, Command.ZEROIZE,
                              build_zeroize_request(ALL_SLOTS)) == b"\x00"
        assert not b.model.key_loaded(0)
        assert await b.send(ctx, RECORD, raw=b.sealed(third, 2, Command.STATS)) == bytes(
            [Status.UNKNOWN_SESSION])
        # The ended sessions' keys are zeroized in the records' core; a new session's go in
        # after, and its records work.
        fresh = await b.session(ctx, rng)
        assert (await b.record(ctx, fresh, 1, Command.INFO))[0] == Status.OK

    Bench(seed=1).run(script)


@pytest.mark.slow
def test_reordered_and_retransmitted_records_in_a_window_of_two():
    rng = random.Random(5)

    async def script(ctx, b):
        keys = await b.session(ctx, rng)
        late = b.sealed(keys, 1, Command.STATS)
        b.seq += 1
        # Counter 2 overtakes counter 1 on the way (UDP): both are taken, in that order.
        two = await b.record(ctx, keys, 2, Command.INFO)
        assert two[0] == Status.OK
        first = await b.send(ctx, RECORD, raw=late)
        assert S.open_reply(keys, 0xA2, 1 + 2, 1, first)[0] == Status.OK
        # Both retransmitted: their kept replies; once more: dropped (already taken, not kept
        # once the window has moved past).
        assert S.open_reply(keys, 0xA2, 4, 2, await b.send(ctx, RECORD, raw=b.last_raw)) == two
        assert await b.send(ctx, RECORD, raw=late)
        assert await b.record(ctx, keys, 4, Command.INFO) == two
        assert await b.send(ctx, RECORD, raw=late) == b""
        # Past max_records (4 here): SESSION_EXPIRED in the clear, once the tag has verified;
        # the counter is not taken.
        assert await b.record(ctx, keys, 5, Command.INFO) == bytes([Status.SESSION_EXPIRED])
        bad = bytearray(b.sealed(keys, 5, Command.INFO))
        bad[-1] ^= 1
        assert await b.send(ctx, RECORD, raw=bytes(bad)) == b""

    Bench(gcm=None, window=2, max_records=4).run(script)

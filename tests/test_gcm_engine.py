"""GCM in the mode engine against aes_fpga.gcm_model and cryptography's AESGCM: values, order,
the tag check, back-pressure, every core, rate and tag latency."""

import random
import sys
import types

import pytest
from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from aes_fpga import gcm_model
from aes_fpga.cores import make_core
from aes_fpga.modes import Mode, ModeEngine
from aes_fpga.sim.traffic import run_streams

KEY_BITS = {16: 0, 24: 1, 32: 2}


# ---- a stand-in GHASH with the contract of aes_fpga.modes.ghash.GHash ------------------------

class StandInGHash(wiring.Component):
    """GHASH, ``digit`` bits of X per cycle, ``128 / digit + 1`` cycles per block."""

    def __init__(self, *, variant="lut", digit=16):
        self.variant, self.digit = variant, digit
        self.cycles_per_block = 128 // digit + 1
        self.latency = self.cycles_per_block
        self.fill_cycles = 0
        super().__init__({
            "h": In(stream.Signature(128)),
            "i": In(stream.Signature(data.StructLayout({"data": 128, "first": 1, "last": 1}))),
            "o": Out(stream.Signature(128)),
        })

    def elaborate(self, platform):
        m = Module()
        d = self.digit
        h, y, a, v, z = (Signal(128, name=n) for n in "hyavz")
        busy, last, open_, o_valid = Signal(), Signal(), Signal(), Signal()
        steps = Signal(range(128 // d))
        m.d.comb += [self.h.ready.eq(~open_ & ~busy & ~o_valid),
                     self.i.ready.eq(~busy & ~o_valid),
                     self.o.valid.eq(o_valid), self.o.payload.eq(y)]
        with m.If(self.h.valid & self.h.ready):
            m.d.sync += h.eq(self.h.payload)
        with m.If(self.i.valid & self.i.ready):
            x = Mux(self.i.payload.first, 0, y) ^ self.i.payload.data
            m.d.sync += [a.eq(x), v.eq(h), z.eq(0), busy.eq(1), steps.eq(0),
                         last.eq(self.i.payload.last), open_.eq(~self.i.payload.last)]
        with m.If(busy):
            zz, vv = z, v
            for j in range(d):      # (a signal per step: the expressions stay small)
                z_next, v_next = Signal(128, name=f"z{j}"), Signal(128, name=f"v{j}")
                m.d.comb += [z_next.eq(zz ^ Mux(a[127 - j], vv, 0)),
                             v_next.eq(vv[1:] ^ Mux(vv[0], gcm_model.R, 0))]
                zz, vv = z_next, v_next
            m.d.sync += [z.eq(zz), v.eq(vv), a.eq(a << d), steps.eq(steps + 1)]
            with m.If(steps == 128 // d - 1):
                m.d.sync += [busy.eq(0), y.eq(zz), o_valid.eq(last)]
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += o_valid.eq(0)
        return m


try:
    import aes_fpga.modes.ghash  # noqa: F401
except ImportError:
    _stand_in = types.ModuleType("aes_fpga.modes.ghash")
    _stand_in.GHash = StandInGHash
    sys.modules["aes_fpga.modes.ghash"] = _stand_in


# ---- driving the engine -----------------------------------------------------------------------

def blocks_of(data_bytes, rng):
    """``data_bytes`` as (block, nbytes): the last block's bytes past nbytes are random, as
    the engine ignores them."""
    out = []
    for i in range(0, len(data_bytes), 16):
        chunk = data_bytes[i:i + 16]
        padded = chunk + bytes(rng.getrandbits(8) for _ in range(16 - len(chunk)))
        out.append((int.from_bytes(padded, "big"), len(chunk)))
    return out


def expected_blocks(data_bytes):
    padded = data_bytes + bytes(-len(data_bytes) % 16)
    return [int.from_bytes(padded[i:i + 16], "big") for i in range(0, len(padded), 16)]


def message_offers(msg, rng, gap):
    """The beats of one GCM message ``msg`` = (op, nonce, aad, data, tag or None), with
    random idle cycles up to ``gap`` before each."""
    op, nonce, aad, text, tag = msg
    offers = [("i", {"data": gcm_model.j0(nonce), "first": 1, "mode": Mode.GCM, "op": op,
                     "slot": 0}, rng.randrange(gap + 1))]
    offers += [("i", {"data": b, "aad": 1, "nbytes": n}, rng.randrange(gap + 1))
               for b, n in blocks_of(aad, rng)]
    offers += [("i", {"data": b, "nbytes": n}, rng.randrange(gap + 1))
               for b, n in blocks_of(text, rng)]
    final = {"final": 1, "data": rng.getrandbits(128), "nbytes": rng.randrange(17)}
    if op == 1:
        final["data"], final["nbytes"] = blocks_of(tag, rng)[0]
    offers.append(("i", final, rng.randrange(gap + 1)))
    return offers


def expected_results(key, msg):
    """(data, auth_ok) per result of ``msg``."""
    op, nonce, aad, text, tag = msg
    if op == 0:
        ct, full_tag = gcm_model.encrypt(key, nonce, aad, text)
        return [(b, 0) for b in expected_blocks(ct)] + [(int.from_bytes(full_tag, "big"), 0)]
    pt = gcm_model.encrypt(key, nonce, b"", text)[0]    # (CTR both ways)
    try:
        gcm_model.decrypt(key, nonce, aad, text, tag)
        ok = 1
    except gcm_model.AuthenticationError:
        ok = 0
    return [(b, 0) for b in expected_blocks(pt)] + [(0, ok)]


def run_gcm(key, messages, *, core=None, gap=0, o_ready=lambda c: True, seed=0,
            max_cycles=None, gcm="lut"):
    """Load ``key`` into slot 0, send the GCM ``messages``; return (outputs, taken) with
    outputs as (cycle, data, auth_ok)."""
    rng = random.Random(seed)
    core = core or make_core("drab-locus", key_sizes=(len(key) * 8,))
    dut = ModeEngine(core, gcm=gcm)
    offers = [("key", {"key": int.from_bytes(key.ljust(32, b"\0"), "big"),
                       "key_bits": KEY_BITS[len(key)], "slot": 0})]
    for msg in messages:
        offers += message_offers(msg, rng, gap)
    count = sum(len(expected_blocks(msg[3])) + 1 for msg in messages)
    taken, outputs = run_streams(dut, offers, count=count, o_ready=o_ready,
                                 max_cycles=max_cycles or 3000 + 800 * count)
    return [(c, p.data, p.auth_ok) for c, p in outputs], taken


def check(key, messages, **kwargs):
    outputs, _ = run_gcm(key, messages, **kwargs)
    expected = [r for msg in messages for r in expected_results(key, msg)]
    assert [(d, ok) for _, d, ok in outputs] == expected
    return outputs


def random_message(rng, op, aad_len, data_len, key=None):
    nonce = bytes(rng.getrandbits(8) for _ in range(12))
    aad = bytes(rng.getrandbits(8) for _ in range(aad_len))
    text = bytes(rng.getrandbits(8) for _ in range(data_len))
    tag = None
    if op == 1:
        ct = AESGCM(key).encrypt(nonce, text, aad)
        text, tag = ct[:-16], ct[-16:]
    return (op, nonce, aad, text, tag)


# ---- tests ------------------------------------------------------------------------------------

def test_model_agrees_with_aesgcm():
    """The helpers' expectations are AESGCM's (so the engine is checked against both)."""
    rng = random.Random(1)
    key = bytes(rng.getrandbits(8) for _ in range(16))
    for aad_len, data_len in [(0, 0), (1, 17), (33, 15)]:
        msg = random_message(rng, 0, aad_len, data_len)
        ct, tag = gcm_model.encrypt(key, *msg[1:4])
        assert ct + tag == AESGCM(key).encrypt(msg[1], msg[3], msg[2])


@pytest.mark.parametrize("key_len", [16, 24, 32], ids=["aes128", "aes192", "aes256"])
def test_encrypt_and_decrypt_lengths(key_len):
    """AAD and data of 0, 1, 15, 16, 17 and 33 bytes (paired), both ways, back to back."""
    rng = random.Random(key_len)
    key = bytes(rng.getrandbits(8) for _ in range(key_len))
    lengths = [0, 1, 15, 16, 17, 33]
    messages = [random_message(rng, op, a, d, key)
                for op in (0, 1) for a, d in zip(lengths, lengths[::-1], strict=True)]
    check(key, messages)

"""The AXI4-Stream wrapper (:class:`aes_fpga.export.AxisCore`) in Amaranth's simulator, against
the native core: the same traffic (random valid gaps, random ready) gives the same results on
the same cycles, in the AXI4-Stream byte order, with ``aresetn`` active low."""

import random

import pytest
from amaranth.hdl import ClockDomain, ClockSignal, Module, ResetSignal
from amaranth.sim import Simulator

from aes_fpga import model
from aes_fpga.cores import make_core
from aes_fpga.export import AxisCore, reverse_bytes
from aes_fpga.params import KeySize, Op


class Native:
    """Drives a core's own streams."""

    def __init__(self, core):
        self.dut = core
        self.top = core

    def set_key(self, ctx, valid, key=b"", slot=0):
        ctx.set(self.dut.key.valid, valid)
        if valid:
            ctx.set(self.dut.key.payload, {"key": int.from_bytes(key.ljust(32, b"\0"), "big"),
                                           "key_bits": KeySize.from_bits(8 * len(key)),
                                           "slot": slot, "zeroize": 0})

    def set_req(self, ctx, valid, block=b"", op=0, slot=0, tag=0):
        ctx.set(self.dut.i.valid, valid)
        if valid:
            ctx.set(self.dut.i.payload, {"block": int.from_bytes(block, "big"), "op": op,
                                         "slot": slot, "tag": tag})

    def set_out_ready(self, ctx, ready):
        ctx.set(self.dut.o.ready, ready)

    def sample(self, ctx):
        d = self.dut
        out = None
        if ctx.get(d.o.valid):
            out = (ctx.get(d.o.payload.block).to_bytes(16, "big"), ctx.get(d.o.payload.tag))
        return ctx.get(d.key.ready), ctx.get(d.i.ready), out

    domain = "sync"


class Axis(Native):
    """Drives the same core through :class:`AxisCore`, in a design with a sync domain of its
    own (the wrapper's domain is local), its clock and reset driving aclk and aresetn."""

    domain = "sync"

    def __init__(self, core):
        self.dut = AxisCore(core)
        self.top = Module()
        self.top.domains.sync = self.cd = ClockDomain("sync")
        self.top.submodules.dut = self.dut
        self.top.d.comb += [self.dut.aclk.eq(ClockSignal("sync")),
                            self.dut.aresetn.eq(~ResetSignal("sync"))]

    def set_key(self, ctx, valid, key=b"", slot=0):
        ctx.set(self.dut.s_axis_key_tvalid, valid)
        if valid:
            ctx.set(self.dut.s_axis_key_tdata, int.from_bytes(key.ljust(32, b"\0"), "little"))
            ctx.set(self.dut.s_axis_key_tuser, {"key_bits": KeySize.from_bits(8 * len(key)),
                                                "zeroize": 0, "slot": slot})

    def set_req(self, ctx, valid, block=b"", op=0, slot=0, tag=0):
        ctx.set(self.dut.s_axis_tvalid, valid)
        if valid:
            ctx.set(self.dut.s_axis_tdata, int.from_bytes(block, "little"))
            ctx.set(self.dut.s_axis_tuser, {"op": op, "slot": slot})
            ctx.set(self.dut.s_axis_tid, tag)

    def set_out_ready(self, ctx, ready):
        ctx.set(self.dut.m_axis_tready, ready)

    def sample(self, ctx):
        d = self.dut
        out = None
        if ctx.get(d.m_axis_tvalid):
            out = (ctx.get(d.m_axis_tdata).to_bytes(16, "little"), ctx.get(d.m_axis_tid))
        return ctx.get(d.s_axis_key_tready), ctx.get(d.s_axis_tready), out


def run(driver, items, *, seed, gap=0.3, ready_prob=0.6, max_cycles=20000, reset_at=None):
    """Offer ``items`` (``("key", kwargs)`` or ``("req", kwargs)``, one at a time, in order)
    with random idle cycles before each and random ``ready`` on the results. Returns the
    events ``(cycle, what)``: each item accepted and each result taken. ``reset_at``: assert
    the reset for one cycle at that cycle."""
    rng = random.Random(seed)
    events = []

    async def bench(ctx):
        pending = list(items)
        wait = 0
        for cycle in range(max_cycles):
            if not pending and sum(1 for _, e in events if e[0] == "out") == \
                    sum(1 for kind, _ in items if kind == "req"):
                return
            if reset_at is not None:
                ctx.set(driver.cd.rst, cycle == reset_at)
            offer = bool(pending) and wait == 0
            kind, kw = pending[0] if pending else (None, None)
            driver.set_key(ctx, offer and kind == "key", **(kw if offer and kind == "key"
                                                             else {}))
            driver.set_req(ctx, offer and kind == "req", **(kw if offer and kind == "req"
                                                             else {}))
            ready = rng.random() < ready_prob
            driver.set_out_ready(ctx, ready)
            key_ready, req_ready, out = driver.sample(ctx)
            if offer and (key_ready if kind == "key" else req_ready):
                events.append((cycle, ("in", kind)))
                pending.pop(0)
                wait = 0
                while rng.random() < gap:
                    wait += 1
            elif wait:
                wait -= 1
            if ready and out is not None:
                events.append((cycle, ("out", *out)))
            await ctx.tick(driver.domain)
        raise AssertionError(f"not done in {max_cycles} cycles: {events[-3:]}")

    sim = Simulator(driver.top)
    sim.add_clock(1e-6, domain=driver.domain)
    sim.add_testbench(bench)
    sim.run()
    return events


def traffic(rng, keys, count):
    """Key loads into each slot, then ``count`` requests on random slots and directions."""
    items = [("key", {"key": k, "slot": s}) for s, k in enumerate(keys)]
    for tag in range(count):
        items.append(("req", {"block": rng.randbytes(16), "op": rng.choice(list(Op)),
                              "slot": rng.randrange(len(keys)), "tag": tag}))
    return items


def expected(items):
    keys, out = {}, {}
    for kind, kw in items:
        if kind == "key":
            keys[kw["slot"]] = kw["key"]
        else:
            f = model.encrypt_block if kw["op"] == Op.ENCRYPT else model.decrypt_block
            out[kw["tag"]] = model.to_bytes(f(keys[kw["slot"]], model.to_int(kw["block"])))
    return out


def test_reverse_bytes():
    assert reverse_bytes(0x0102, 2) == 0x0201
    assert reverse_bytes(reverse_bytes(0x00112233, 4), 4) == 0x00112233


def test_fips197_in_axis_byte_order():
    """FIPS-197 C.1 through the wrapper: plaintext byte 0 in s_axis_tdata[7:0], the
    ciphertext's byte 0 in m_axis_tdata[7:0], after exactly the core's latency."""
    key, pt, ct = model.FIPS197_EXAMPLES[128]
    core = make_core("compact8", key_sizes=(128,))
    items = [("key", {"key": key}), ("req", {"block": pt, "op": Op.ENCRYPT, "tag": 5}),
             ("req", {"block": ct, "op": Op.DECRYPT, "tag": 6})]
    events = run(Axis(core), items, seed=0, gap=0, ready_prob=1)
    accepted = [c for c, e in events if e == ("in", "req")]
    outs = [(c, e[1:]) for c, e in events if e[0] == "out"]
    assert [o for _, o in outs] == [(ct, 5), (pt, 6)]
    assert [c for c, _ in outs] == [a + core.latency(128) for a in accepted]


@pytest.mark.parametrize(("name", "options"), [
    ("compact8", {"key_sizes": (128, 256), "key_slots": 2}),
    pytest.param("lut-round", {"key_sizes": (128,), "key_slots": 3, "tag_width": 5},
                 marks=pytest.mark.slow),
])
def test_same_cycles_as_the_native_core(name, options):
    """Random traffic with gaps and back-pressure, the same on both: every key accepted,
    request accepted and result taken on the same cycle, the results right."""
    rng = random.Random(name)
    keys = [rng.randbytes(rng.choice(options["key_sizes"]) // 8)
            for _ in range(options["key_slots"])]
    items = traffic(rng, keys, 6)       # (every slot in both directions, some back to back)
    native = run(Native(make_core(name, **options)), items, seed=1)
    axis = run(Axis(make_core(name, **options)), items, seed=1)
    assert axis == native
    want = expected(items)
    assert {e[2]: e[1] for _, e in axis if e[0] == "out"} == want


def test_aresetn_is_active_low_and_synchronous():
    """Held low for one cycle in the middle of a block, aresetn drops it (as the core's
    reset does): only the request offered after the reset comes out."""
    key, pt, ct = model.FIPS197_EXAMPLES[128]
    core = make_core("compact8", key_sizes=(128,))
    lat = core.latency(128)
    items = [("key", {"key": key}), ("req", {"block": pt, "op": Op.ENCRYPT, "tag": 1})]
    reset_free = run(Axis(core), items, seed=0, gap=0, ready_prob=1)
    accepted = next(c for c, e in reset_free if e == ("in", "req"))
    assert lat > 1
    core = make_core("compact8", key_sizes=(128,))
    with pytest.raises(AssertionError, match="not done"):
        run(Axis(core), items, seed=0, gap=0, ready_prob=1, reset_at=accepted + 1,
            max_cycles=accepted + 4 * lat)


# ---- the mode engine behind AXI4-Stream ports (AxisModes) -------------------------------------

def modes_engine():
    """compact8 with the 4-bit-digit LUT GHASH: the engine quickest to build, for the wrapper's
    ports are the same for every core and GHASH."""
    from aes_fpga.modes import ModeEngine
    return ModeEngine(make_core("compact8", key_sizes=(128,)), tag_width=4, gcm="lut",
                      ghash_digit=4)


class NativeModes:
    """Drives the mode engine's own streams (beats: ``block`` bytes and the fields)."""

    domain = "sync"

    def __init__(self, engine):
        self.dut = self.top = engine

    def set_key(self, ctx, valid, key=b""):
        ctx.set(self.dut.key.valid, valid)
        if valid:
            ctx.set(self.dut.key.payload, {"key": int.from_bytes(key.ljust(32, b"\0"), "big"),
                                           "key_bits": 0, "slot": 0, "zeroize": 0})

    def set_beat(self, ctx, valid, block=bytes(16), **fields):
        ctx.set(self.dut.i.valid, valid)
        if valid:
            ctx.set(self.dut.i.payload, {"data": int.from_bytes(block, "big"), **fields})

    def sample(self, ctx):
        d = self.dut
        out = None
        if ctx.get(d.o.valid):
            p = d.o.payload
            out = (ctx.get(p.data).to_bytes(16, "big"), ctx.get(p.tag), ctx.get(p.auth_ok))
        return ctx.get(d.key.ready), ctx.get(d.i.ready), out

    def set_out_ready(self, ctx, ready):
        ctx.set(self.dut.o.ready, ready)


class AxisModesDriver(NativeModes):
    """The same engine behind :class:`~aes_fpga.export.AxisModes`, clocked as :class:`Axis`."""

    def __init__(self, engine):
        from aes_fpga.export import AxisModes
        self.dut = AxisModes(engine)
        self.top = Module()
        self.top.domains.sync = ClockDomain("sync")
        self.top.submodules.dut = self.dut
        self.top.d.comb += [self.dut.aclk.eq(ClockSignal("sync")),
                            self.dut.aresetn.eq(~ResetSignal("sync"))]

    def set_key(self, ctx, valid, key=b""):
        ctx.set(self.dut.s_axis_key_tvalid, valid)
        if valid:
            ctx.set(self.dut.s_axis_key_tdata, int.from_bytes(key.ljust(32, b"\0"), "little"))
            ctx.set(self.dut.s_axis_key_tuser, {"key_bits": 0, "zeroize": 0, "slot": 0})

    def set_beat(self, ctx, valid, block=bytes(16), tag=0, **fields):
        ctx.set(self.dut.s_axis_tvalid, valid)
        if valid:
            ctx.set(self.dut.s_axis_tdata, int.from_bytes(block, "little"))
            ctx.set(self.dut.s_axis_tuser, {"first": 0, "mode": 0, "op": 0, "slot": 0,
                                            "aad": 0, "final": 0, "nbytes": 0, **fields})
            ctx.set(self.dut.s_axis_tid, tag)

    def sample(self, ctx):
        d = self.dut
        out = None
        if ctx.get(d.m_axis_tvalid):
            out = (ctx.get(d.m_axis_tdata).to_bytes(16, "little"), ctx.get(d.m_axis_tid),
                   ctx.get(d.m_axis_tuser).auth_ok)
        return ctx.get(d.s_axis_key_tready), ctx.get(d.s_axis_tready), out

    def set_out_ready(self, ctx, ready):
        ctx.set(self.dut.m_axis_tready, ready)


def run_modes(driver, key, beats, results, *, seed, max_cycles=5000):
    """The key, then ``beats`` (field dicts) with random gaps, results taken with random
    ready: the events ``(cycle, what)`` of every transfer."""
    rng = random.Random(seed)
    events = []

    async def bench(ctx):
        pending = [("key", {"key": key})] + [("beat", b) for b in beats]
        wait, taken = 0, 0
        for cycle in range(max_cycles):
            if not pending and taken == results:
                return
            offer = bool(pending) and wait == 0
            kind, kw = pending[0] if pending else (None, {})
            driver.set_key(ctx, offer and kind == "key", **(kw if kind == "key" else {}))
            driver.set_beat(ctx, offer and kind == "beat", **(kw if kind == "beat" else {}))
            ready = rng.random() < 0.6
            driver.set_out_ready(ctx, ready)
            key_ready, beat_ready, out = driver.sample(ctx)
            if offer and (key_ready if kind == "key" else beat_ready):
                events.append((cycle, ("in", kind)))
                pending.pop(0)
                wait = rng.randrange(3)
            elif wait:
                wait -= 1
            if ready and out is not None:
                events.append((cycle, ("out", *out)))
                taken += 1
            await ctx.tick(driver.domain)
        raise AssertionError(f"not done in {max_cycles} cycles: {events[-3:]}")

    sim = Simulator(driver.top)
    sim.add_clock(1e-6, domain=driver.domain)
    sim.add_testbench(bench)
    sim.run()
    return events


def test_mode_engine_same_cycles_behind_axi4_stream():
    """A CTR message and a GCM encryption and decryption (AAD, a short last block, the tag)
    with gaps and back-pressure: every transfer on the same cycle through AxisModes as on the
    engine's own ports, the results right (CTR and GCM against cryptography)."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    from aes_fpga.params import Mode
    rng = random.Random(3)
    key, iv, nonce = rng.randbytes(16), rng.randbytes(16), rng.randbytes(12)
    text, aad = rng.randbytes(32), rng.randbytes(16)
    gcm_text = rng.randbytes(20)
    sealed = AESGCM(key).encrypt(nonce, gcm_text, aad)
    j0 = nonce + b"\0\0\0\1"
    beats = [{"block": iv, "first": 1, "mode": Mode.CTR, "op": Op.ENCRYPT},
             {"block": text[:16], "tag": 1}, {"block": text[16:], "tag": 2}]
    for op, body, tag in ((0, gcm_text, None), (1, sealed[:20], sealed[20:])):
        beats += [{"block": j0, "first": 1, "mode": Mode.GCM, "op": op},
                  {"block": aad, "aad": 1, "nbytes": 16},
                  {"block": body[:16], "nbytes": 16, "tag": 3},
                  {"block": body[16:].ljust(16, b"\xa5"), "nbytes": 4, "tag": 4},
                  {"final": 1, **({"block": tag, "nbytes": 16} if tag else {}), "tag": 5}]
    native = run_modes(NativeModes(modes_engine()), key, beats, 8, seed=4)
    axis = run_modes(AxisModesDriver(modes_engine()), key, beats, 8, seed=4)
    assert axis == native
    outs = [e[1:] for _, e in axis if e[0] == "out"]
    ctr = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor().update(text)
    assert b"".join(d for d, _, _ in outs[:2]) == ctr
    assert b"".join(d for d, _, _ in outs[2:4])[:20] == sealed[:20]
    assert outs[4][0] == sealed[20:] and outs[4][1] == 5
    assert [ok for _, _, ok in outs[5:]] == [0, 0, 1]
    assert b"".join(d for d, _, _ in outs[5:7])[:20] == gcm_text

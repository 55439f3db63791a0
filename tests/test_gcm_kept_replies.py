# amaranth: UnusedElaboratable=no
"""The replies a GCM device keeps for retransmissions (spec "GCM messages"): ``ZEROIZE`` clears
them in the gateware's block RAM (read in Amaranth's simulator), and the window of a device with
GCM is capped at ``GCM_MAX_WINDOW``, in the reference device and in the gateware alike, every
reply byte compared."""

import pytest
from gcm_cases import KEY, NONCE, aesgcm
from shared_dut import shared
from sim_again import simulate

from aes_fpga import appliance as P
from aes_fpga.appliance.gateware.engine import ProtocolEngine
from aes_fpga.appliance.gateware.gcm_process import kept_reply_stride
from aes_fpga.appliance.gcm import build_gcm_requests
from aes_fpga.appliance.spec import (
    ALL_SLOTS,
    GCM_MAX_WINDOW,
    MIN_MAX_PAYLOAD,
    Command,
    Mode,
    Op,
    Status,
)
from aes_fpga.sim.cxxsim import mark_used

#: Small chunks (32 bytes of data) keep the kept-reply memory small: 32 bytes an entry.
MAX_PAYLOAD = MIN_MAX_PAYLOAD + 16
CHUNK = 32
KEY2 = bytes(range(200, 216))


def make_engine(window, gcm):
    return ProtocolEngine(key_slots=2, key_sizes=(128,), window=window, gcm=gcm,
                          max_payload=MAX_PAYLOAD)


def engine(window, gcm="lut"):
    """The engine (shared: see shared_dut; :class:`Run` simulates it again from reset, see
    sim_again)."""
    return shared(make_engine, window, gcm)


class Run:
    """The engine in Amaranth's simulator and its reference device, fed the same requests in
    batches (each batch sent at once, pipelined): every reply byte compared, the kept-reply
    memory read after each batch, and the cycles at which each request's frame ends (rx) and
    each reply's frame ends (tx)."""

    def __init__(self, dut):
        self.dut = dut
        self.model = P.DeviceModel(dut.info)
        self.batches = []
        self.seq = 0

    def frame(self, command, payload=b"", seq=None):
        if seq is None:
            self.seq = seq = (self.seq + 1) & 0xFFFF
        return P.encode_frame(command, seq, payload)

    def batch(self, *frames):
        self.batches.append(frames)

    def run(self):
        """Per batch: (the reply payloads, the memory's bytes after it, the cycles at which
        its requests ended and its replies ended)."""
        dut, results = self.dut, []
        mem = dut.kept_memory

        async def bench(ctx):
            cycle = 0
            ctx.set(dut.tx.ready, 1)
            for frames in self.batches:
                want = b"".join(self.model.feed(f) for f in frames)
                pending, got, ins, outs = bytearray(b"".join(frames)), bytearray(), [], []
                while len(got) < len(want):
                    assert cycle < 200_000, "no reply"
                    ctx.set(dut.rx.valid, bool(pending))
                    if pending:
                        ctx.set(dut.rx.payload, pending[0])
                    rx = bool(pending) and ctx.get(dut.rx.ready)
                    tx = ctx.get(dut.tx.valid)
                    byte = ctx.get(dut.tx.payload)
                    await ctx.tick()
                    cycle += 1
                    if rx:
                        if pending.pop(0) == 0:
                            ins.append(cycle)
                    if tx:
                        got.append(byte)
                        if byte == 0:
                            outs.append(cycle)
                ctx.set(dut.rx.valid, 0)
                assert got.hex() == want.hex()
                replies = [P.decode_frame(P.cobs_decode(f)).payload
                           for f in bytes(got).split(b"\0")[:-1]]
                kept = None if mem is None else bytes(ctx.get(mem[n]) for n in range(mem.depth))
                results.append((replies, kept, ins, outs))

        simulate(dut, bench, max_cycles=200_001)
        return results


def message(slot, op, data, tag=None):
    return build_gcm_requests(slot, op, NONCE, b"", data, tag=tag, chunk_size=CHUNK)


def test_zeroize_clears_the_kept_replies():
    """Plaintext kept in block RAM: a ``ZEROIZE`` clears every byte but those of the replies
    still kept (another slot's message's, still given to a retransmission): the dropped
    replies of the first message and what is left of its plaintext under a shorter reply;
    ``ALL_SLOTS`` clears everything. The clear takes ``window * stride`` cycles, during which
    the requests sent right after the ``ZEROIZE`` wait. (The engine at the capped window:
    test_retransmissions_at_the_capped_window's.)"""
    window = GCM_MAX_WINDOW
    dut = engine(window)
    stride = kept_reply_stride(dut.info)
    assert stride == CHUNK
    run = Run(dut)
    data = bytes(range(1, 1 + CHUNK * (window - 1)))    # a chunk of plaintext per entry but one
    chunks = [data[n:n + CHUNK] for n in range(0, len(data), CHUNK)]
    ct, tag = aesgcm(KEY, NONCE, b"", data)
    loads = [run.frame(Command.LOAD_KEY, P.build_load_key_request(s, k))
             for s, k in ((0, KEY), (1, KEY2))]
    run.batch(*loads, *[run.frame(Command.PROCESS, p)
                        for p in message(0, Op.DECRYPT, ct, tag)])
    # Another slot's message: its FIRST chunk drops the first message's replies; its data
    # chunk and its tag are written over two of them.
    other = message(1, Op.ENCRYPT, b"x" * CHUNK)
    seq_other = run.seq + 1
    run.batch(*[run.frame(Command.PROCESS, p) for p in other])
    # ZEROIZE of the first slot, and right behind it a retransmission of the other message's
    # data chunk, then the first message again (the key of slot 0 is gone).
    run.batch(run.frame(Command.ZEROIZE, P.build_zeroize_request(0)),
              run.frame(Command.PROCESS, other[0], seq_other),
              *[run.frame(Command.PROCESS, p) for p in message(0, Op.DECRYPT, ct, tag)[:1]])
    run.batch(run.frame(Command.ZEROIZE, P.build_zeroize_request(ALL_SLOTS)),
              run.frame(Command.INFO))
    (dec, mem_dec, _, _), (enc, mem_enc, _, _), (zero1, mem_1, in_1, out_1), \
        (zero_all, mem_all, in_all, out_all) = run.run()

    def entries(mem):
        return [mem[e * stride:(e + 1) * stride] for e in range(window)]

    # The plaintext chunks are kept in every entry but the last (the verdict's: no bytes).
    assert dec[-1] == bytes([Status.OK]) and b"".join(r[1:] for r in dec[2:-1]) == data
    assert entries(mem_dec)[:-1] == chunks
    # The other message's chunk went into entry 0, its tag into entry 1: plaintext is left
    # behind the tag and in the entries after it.
    ct_other, tag_other = enc[0][1:], enc[1][1:]
    assert entries(mem_enc)[:-1] == [ct_other, tag_other + chunks[1][16:], *chunks[2:]]
    # ZEROIZE of slot 0: the other message's replies kept (and given again), nothing else.
    assert zero1[0] == bytes([Status.OK]) and zero1[1] == enc[0]
    assert zero1[2] == bytes([Status.KEY_NOT_LOADED])
    assert entries(mem_1) == [ct_other, tag_other + bytes(16)] + [bytes(stride)] * (window - 2)
    # ALL_SLOTS: nothing left.
    assert zero_all[0] == bytes([Status.OK]) and mem_all == bytes(window * stride)
    # The clear's cycles: the ZEROIZE reply comes at least window * stride cycles after its
    # request (test_the_clear_takes_window_times_stride_cycles), the next request's after it.
    for ins, outs in ((in_1, out_1), (in_all, out_all)):
        assert outs[0] - ins[0] >= window * stride
        assert outs[1] > outs[0]


@pytest.mark.parametrize("slot", [1, pytest.param(ALL_SLOTS, marks=pytest.mark.slow)])
def test_the_clear_takes_window_times_stride_cycles(slot):
    """A ``ZEROIZE`` in an engine with GCM answers ``window * stride`` cycles (and 2 of
    hand-over) later than in the same engine without GCM, whatever the memory holds (here
    nothing; the capped window: the engine of the tests around this one)."""
    window = GCM_MAX_WINDOW
    took = {}
    for gcm in (None, "lut"):
        run = Run(engine(window, gcm))
        run.batch(run.frame(Command.ZEROIZE, P.build_zeroize_request(slot)))
        ((replies, mem, ins, outs),) = run.run()
        assert replies == [bytes([Status.OK])]
        assert mem is None or mem == bytes(len(mem))
        took[gcm] = outs[0] - ins[0]
    stride = kept_reply_stride(run.dut.info)
    assert took["lut"] - took[None] == window * stride + 2


# ---- the window cap -----------------------------------------------------------------------

def test_a_wider_window_with_gcm_is_refused_on_both_sides():
    info = P.DeviceInfo(modes=tuple(Mode), window=GCM_MAX_WINDOW + 1)
    with pytest.raises(ValueError, match="GCM_MAX_WINDOW") as model_error:
        P.DeviceModel(info)
    with pytest.raises(ValueError, match="GCM_MAX_WINDOW") as engine_error:
        ProtocolEngine(window=GCM_MAX_WINDOW + 1, gcm="lut")
    assert str(model_error.value) == str(engine_error.value)
    # Without GCM the window is not capped.
    P.DeviceModel(P.DeviceInfo(window=GCM_MAX_WINDOW + 1))
    mark_used(ProtocolEngine(window=GCM_MAX_WINDOW + 1))


def test_a_large_receive_buffer_gives_the_capped_window():
    from aes_fpga.appliance.gateware.uart import UartAppliance
    from aes_fpga.cores import make_core

    def window(gcm):
        core = make_core("drab-locus", key_slots=1, key_sizes=(128,), tag_width=0)
        uart = UartAppliance(core, clk_freq=100e6, rx_buffer=65536, gcm=gcm)
        mark_used(uart)                     # (never elaborated here)
        return uart.info.window

    assert window(None) == 62
    assert window("lut") == GCM_MAX_WINDOW


def test_retransmissions_at_the_capped_window():
    """An engine at the cap keeps ``GCM_MAX_WINDOW`` replies: every chunk of a long message is
    sent again from as far back as that (its kept reply) and one further (``OUT_OF_ORDER``),
    every reply byte as the reference device's. The chunks before the first retransmission
    go in one batch (pipelined), the rest one batch each, with their retransmissions."""
    W = GCM_MAX_WINDOW
    run = Run(engine(W))
    data = bytes(range(160))                    # 10 chunks of a block: a short frame each
    payloads = build_gcm_requests(0, Op.ENCRYPT, NONCE, b"", data, chunk_size=16)
    seq0 = 1000
    run.batch(run.frame(Command.LOAD_KEY, P.build_load_key_request(0, KEY)),
              *[run.frame(Command.PROCESS, p, seq0 + n) for n, p in enumerate(payloads[:W + 1])])
    for n in range(W + 1, len(payloads)):
        # (a FIRST chunk no longer kept would start a message: the first retransmission is
        # of the chunk after it)
        run.batch(run.frame(Command.PROCESS, payloads[n], seq0 + n),
                  *[run.frame(Command.PROCESS, payloads[n - back], seq0 + n - back)
                    for back in (W - 1, W)])
    results = run.run()
    first = results[0][0]
    assert first[0] == bytes([Status.OK])
    replies = [[r] for r in first[1:]] + [r[0] for r in results[1:]]
    assert len(replies) == len(payloads) > W + 2
    out = b"".join(r[0][1:] for r in replies)
    assert (out[:-16], out[-16:]) == aesgcm(KEY, NONCE, b"", data)
    for n in range(W + 1, len(payloads)):
        assert replies[n][1] == replies[n - W + 1][0]
        assert replies[n][2] == bytes([Status.OUT_OF_ORDER if n < len(payloads) - 1
                                       else Status.CHAIN_NOT_STARTED])

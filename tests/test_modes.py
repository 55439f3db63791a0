"""ECB/CBC/CTR around DRAB-LOCUS against cryptography: values, order, back-pressure, rate."""

import random

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from shared_dut import shared
from test_gcm_engine import drab_locus_engine

from aes_fpga.cores import DrabLocus
from aes_fpga.cores.drab_locus import latency
from aes_fpga.modes import Mode, ModeEngine, mode_request_layout
from aes_fpga.sim.traffic import run_streams

KEY_BITS = {16: 0, 24: 1, 32: 2}


def reference(key, mode, op, iv, blocks):
    data = b"".join(b.to_bytes(16, "big") for b in blocks)
    algo = algorithms.AES(key)
    m = {Mode.ECB: lambda: modes.ECB(), Mode.CBC: lambda: modes.CBC(iv.to_bytes(16, "big")),
         Mode.CTR: lambda: modes.CTR(iv.to_bytes(16, "big"))}[mode]()
    c = Cipher(algo, m)
    ctx = c.encryptor() if op == 0 else c.decryptor()
    out = ctx.update(data) + ctx.finalize()
    return [int.from_bytes(out[i:i + 16], "big") for i in range(0, len(out), 16)]


def mode_engine(key_sizes, gcm=None):
    """The mode engine around DRAB-LOCUS (shared: see shared_dut); a GCM build is
    tests/test_gcm_engine.py's, which a run of both files then builds once."""
    if gcm is not None and len(key_sizes) == 1:
        return shared(drab_locus_engine, key_sizes[0], gcm)
    return ModeEngine(DrabLocus(key_sizes=key_sizes), gcm=gcm)


def run_engine(key, messages, *, o_ready=lambda c: True, max_cycles=40000, key_sizes=None,
               gcm=None):
    """Load ``key``, send ``messages`` [(mode, op, iv, blocks)] (to an engine with ``gcm``),
    return (accept cycles, (cycle, block) outputs)."""
    dut = shared(mode_engine, key_sizes or (len(key) * 8,), gcm)
    offers = [("key", {"key": int.from_bytes(key.ljust(32, b"\0"), "big"),
                       "key_bits": KEY_BITS[len(key)], "slot": 0})]
    for mode, op, iv, blocks in messages:
        # A message: its first beat (parameters and IV), then its blocks.
        offers.append(("i", {"data": iv, "first": 1, "mode": mode, "op": op, "slot": 0}))
        offers += [("i", {"data": block, "first": 0}) for block in blocks]
    blocks = sum(len(m[3]) for m in messages)
    taken, outputs = run_streams(dut, offers, count=blocks, o_ready=o_ready,
                                 max_cycles=max_cycles)
    return taken[1:], [(cycle, p.data) for cycle, p in outputs]


MODES = [Mode.ECB, Mode.CBC, Mode.CTR]


@pytest.fixture(scope="module")
def every_mode():
    """A message of each mode each way, back to back in one run (one key load): 14 blocks
    (more than DRAB-LOCUS's ring holds), 4 for CBC encryption, which has one block in flight
    at a time. {(mode, op): (the results, cryptography's)}."""
    rng = random.Random(2)
    key = bytes(rng.getrandbits(8) for _ in range(16))
    messages = [(mode, op, rng.getrandbits(128),
                 [rng.getrandbits(128) for _ in range(4 if (mode, op) == (Mode.CBC, 0) else 14)])
                for mode in MODES for op in (0, 1)]
    _, out = run_engine(key, messages)
    results, got = {}, [b for _, b in out]
    for mode, op, iv, blocks in messages:
        results[mode, op] = (got[:len(blocks)], reference(key, mode, op, iv, blocks))
        got = got[len(blocks):]
    assert got == []
    return results


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
@pytest.mark.parametrize("op", [0, 1], ids=["encrypt", "decrypt"])
def test_mode_against_cryptography(every_mode, mode, op):
    got, want = every_mode[mode, op]
    assert got == want


def test_messages_back_to_back_with_backpressure():
    """(AES-128, the build the other tests share: the key length is the core's to handle;
    tests/test_frontend_engine.py::test_process_multi_chunk has AES-256 in these modes.)"""
    rng = random.Random(9)
    key = bytes(range(16))
    messages = []
    for n in range(6):
        mode = [Mode.CTR, Mode.CBC, Mode.ECB][n % 3]
        messages.append((mode, rng.randrange(2), rng.getrandbits(128),
                         [rng.getrandbits(128) for _ in range(rng.randrange(1, 9))]))
    stall = [rng.random() < 0.5 for _ in range(257)]
    _, out = run_engine(key, messages, o_ready=lambda c: stall[c % 257])
    expected = [b for m in messages for b in reference(key, *m)]
    assert [b for _, b in out] == expected


def test_ctr_counter_carries_across_words():
    """The counter's carry crosses its 32-bit words (one per cycle) and wraps at 2**128: a
    message from just below each word's carry, back to back (one key load)."""
    key = bytes(range(16))
    blocks = list(range(6))
    messages = [(Mode.CTR, 0, iv, blocks)
                for iv in ((1 << 32) - 3, (1 << 64) - 2, (1 << 96) - 2, (1 << 128) - 2)]
    _, out = run_engine(key, messages)
    assert [b for _, b in out] == [b for m in messages for b in reference(key, *m)]


def test_ctr_counter_carries_across_words_in_a_gcm_build():
    """A GCM build's counter words add their registered sums: CTR's carries still cross every
    word, after a message that moved the counter."""
    key = bytes(range(16))
    messages = [(Mode.CTR, 0, (1 << 96) - 2, [1, 2, 3]), (Mode.CTR, 1, (1 << 128) - 2, [4, 5]),
                (Mode.CTR, 0, (1 << 64) - 1, [6, 7])]
    _, out = run_engine(key, messages, gcm="bram")
    assert [b for _, b in out] == [b for m in messages for b in reference(key, *m)]


def test_message_without_blocks_gives_nothing():
    """A first beat alone sets the parameters and IV and gives no output; the next message
    starts afresh."""
    key = bytes(range(16))
    messages = [(Mode.CBC, 0, 7, []), (Mode.CTR, 0, 99, [1, 2, 3]), (Mode.CBC, 1, 5, []),
                (Mode.CBC, 0, 11, [4, 5])]
    _, out = run_engine(key, messages)
    assert [b for _, b in out] == [b for m in messages for b in reference(key, *m)]


def test_tags_come_back_with_their_results():
    """Each block's tag leaves with its result, in order."""
    key = bytes(16)
    dut = ModeEngine(DrabLocus(key_sizes=(128,)), tag_width=3)
    offers = [("key", {"key": 0, "key_bits": 0, "slot": 0}),
              ("i", {"data": 5, "first": 1, "mode": Mode.CTR, "op": 0, "slot": 0})]
    offers += [("i", {"data": n, "first": 0, "tag": n % 8}) for n in range(20)]
    _, out = run_streams(dut, offers, count=20, max_cycles=4000)
    assert [p.tag for _, p in out] == [n % 8 for n in range(20)]
    assert [p.data for _, p in out] == reference(key, Mode.CTR, 0, 5, list(range(20)))


def test_tag_width_is_checked():
    with pytest.raises(ValueError, match="tag_width: 65 is out of range"):
        mode_request_layout(1, tag_width=65)


@pytest.mark.slow
def test_counter_wraps_at_128_bits():
    """(The default run has the wrap in test_ctr_counter_carries_across_words.)"""
    key = bytes(16)
    iv = (1 << 128) - 2
    blocks = [0, 0, 0]
    _, out = run_engine(key, [(Mode.CTR, 0, iv, blocks)])
    assert [b for _, b in out] == reference(key, Mode.CTR, 0, iv, blocks)


#: (mode, op, pipelined) of test_rate
RATE_CASES = [(Mode.CTR, 0, True), (Mode.CBC, 1, True), (Mode.ECB, 0, True),
              (Mode.CBC, 0, False)]


@pytest.fixture(scope="module")
def rate_runs():
    """A message of each of :data:`RATE_CASES`, 36 blocks pipelined, 4 otherwise, back to
    back in one run (one key load; each message starts once the one before has left the
    core): {case: the (cycle, block) outputs of its message}."""
    messages = [(mode, op, 5, list(range(36 if pipelined else 4)))
                for mode, op, pipelined in RATE_CASES]
    _, out = run_engine(bytes(16), messages)
    runs = {}
    for case, (*_, blocks) in zip(RATE_CASES, messages, strict=True):
        runs[case], out = out[:len(blocks)], out[len(blocks):]
    return runs


@pytest.mark.parametrize(("mode", "op", "pipelined"), RATE_CASES)
def test_rate(rate_runs, mode, op, pipelined):
    """CTR, CBC decryption and ECB keep DRAB-LOCUS's ring full (12 blocks per 120 cycles);
    CBC encryption has one block in flight at a time."""
    n = 36 if pipelined else 4
    out = rate_runs[mode, op, pipelined]
    assert len(out) == n
    first, last = out[0][0], out[-1][0]
    if pipelined:
        # 12 blocks every 12 Nr = 120 cycles after the first group
        assert last - first == 120 * (n // 12 - 1) + 11
    else:
        assert [b - a for (a, _), (b, _) in zip(out, out[1:], strict=False)] == \
            [latency(10) + 1] * (n - 1)

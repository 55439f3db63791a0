"""A core in a mode, simulated cycle by cycle: :class:`~aes_fpga.modes.ModeEngine` around it,
one long message, every result checked against ``cryptography`` (``aes-fpga bench --mode``).

The rate is one message's: its blocks over the cycles from its first beat taken to its last
data result (so a short message pays the core's latency once; a long one approaches the
steady state). The message is preceded by a one-block message under the same key, which loads
the key and, for GCM, makes the engine compute the hash key H and fill the GHASH's tables (the
engine keeps H while its slot's key stays, so every later message starts at once); a GCM tag
follows the last data result after ``tag_latency_cycles``.
"""

import random

from ..params import KeySize, Mode, Op

__all__ = ["bench_mode", "MODES"]

#: The modes :func:`bench_mode` measures, by the name ``--mode`` takes.
MODES = {"ecb": Mode.ECB, "cbc": Mode.CBC, "ctr": Mode.CTR, "gcm": Mode.GCM}


def _blocks(data):
    return [int.from_bytes(data[i:i + 16], "big") for i in range(0, len(data), 16)]


def _expected(mode, op, key, iv, data, aad):
    """The results ``cryptography`` gives: the processed blocks (and the GCM tag)."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    if mode == Mode.GCM:
        sealed = AESGCM(key).encrypt(iv, data, aad)
        return _blocks(sealed)
    cipher = Cipher(algorithms.AES(key), {Mode.ECB: modes.ECB(), Mode.CBC: modes.CBC(iv),
                                          Mode.CTR: modes.CTR(iv)}[mode])
    ctx = cipher.decryptor() if op == Op.DECRYPT else cipher.encryptor()
    return _blocks(ctx.update(data) + ctx.finalize())


def _message(mode, op, key, iv, data, aad):
    """The engine's beats for one message."""
    from .. import gcm_model
    if mode != Mode.GCM:
        return [{"data": int.from_bytes(iv, "big"), "first": 1, "mode": mode, "op": op,
                 "slot": 0}] + [{"data": b} for b in _blocks(data)]
    return ([{"data": gcm_model.j0(iv), "first": 1, "mode": mode, "op": op, "slot": 0}]
            + [{"data": b, "aad": 1, "nbytes": 16} for b in _blocks(aad)]
            + [{"data": b, "nbytes": 16} for b in _blocks(data)]
            + [{"final": 1, "nbytes": 16}])


def bench_mode(core, mode, *, key_bits=128, blocks=240, op=Op.ENCRYPT, ghash="bram",
               ghash_digit=8, seed=0):
    """Simulate ``core`` in ``mode`` (a :class:`~aes_fpga.params.Mode`) on a message of
    ``blocks`` blocks; returns a dict of figures (``cycles`` from the message's first beat taken
    to its last data result, ``blocks_per_cycle`` = ``blocks / cycles``; for GCM
    ``tag_latency_cycles`` too, from the last data result to the tag). Raises
    :class:`~aes_fpga.sim.traffic.WrongResult` when a result differs from ``cryptography``'s,
    ``RuntimeError`` when the simulation stalls."""
    from ..modes import ModeEngine
    from .traffic import WrongResult, run_streams

    mode, op = Mode(mode), Op(op)
    if not isinstance(blocks, int) or not 2 <= blocks <= 100000:
        raise ValueError(f"blocks: {blocks!r} is out of range; allowed 2 to 100000")
    if mode == Mode.GCM and op != Op.ENCRYPT:
        raise ValueError("op: a GCM bench encrypts (decryption runs the same blocks)")
    rng = random.Random(seed)
    key = rng.randbytes(key_bits // 8)
    iv = rng.randbytes(12 if mode == Mode.GCM else 16)
    data, aad = rng.randbytes(16 * blocks), rng.randbytes(16 if mode == Mode.GCM else 0)
    gcm = mode == Mode.GCM
    engine = ModeEngine(core, **({"gcm": ghash, "ghash_digit": ghash_digit} if gcm else {}))
    offers = [("key", {"key": int.from_bytes(key.ljust(32, b"\0"), "big"),
                       "key_bits": KeySize.from_bits(key_bits), "slot": 0})]
    # A one-block message first: the key loaded and, for GCM, H computed and the tables
    # filled, so the measured message finds a warm engine.
    warm_iv, warm = rng.randbytes(len(iv)), rng.randbytes(16)
    offers += [("i", beat) for beat in _message(mode, op, key, warm_iv, warm, b"")]
    want = _expected(mode, op, key, warm_iv, warm, b"")
    start = len(offers)                      # the measured message's first beat
    offers += [("i", beat) for beat in _message(mode, op, key, iv, data, aad)]
    want += _expected(mode, op, key, iv, data, aad)
    latency = max(core.latency(key_bits), 1)
    taken, outputs = run_streams(engine, offers, count=len(want),
                             max_cycles=20000 + blocks * 4 * latency)
    if len(outputs) != len(want):
        raise RuntimeError(f"the {mode.name} simulation stalled after {len(outputs)} of "
                           f"{len(want)} results")
    got = [p.data for _, p in outputs]
    if got != want:
        n = next(i for i, (a, b) in enumerate(zip(got, want, strict=True)) if a != b)
        raise WrongResult(f"{mode.name} result {n} differs from cryptography's")
    cycles = [c for c, _ in outputs][len(want) - blocks - gcm:]
    span = cycles[blocks - 1] - taken[start] + 1
    report = {"mode": mode.name.lower(), "op": op.name.lower(), "key_size": key_bits,
              "blocks": blocks, "cycles": span, "blocks_per_cycle": round(blocks / span, 4),
              "first_result_cycles": cycles[0] - taken[start], "verified": "cryptography"}
    if gcm:
        report.update({"ghash": ghash, "ghash_digit": ghash_digit if ghash == "lut" else None,
                       "ghash_cycles_per_block": engine.ghash.cycles_per_block,
                       "tag_latency_cycles": cycles[blocks] - cycles[blocks - 1]})
    return report

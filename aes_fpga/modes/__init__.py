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

1. a ``first`` beat: ``mode`` GCM, ``op``, ``slot`` and J0 = nonce || 00000001 in ``data``.
   The engine sends the block 0 to the core for the hash key H = E_K(0^128), which goes
   straight into the GHASH (:class:`~aes_fpga.modes.ghash.GHash`) and never leaves the engine;
2. any number of AAD beats (``aad`` set): one block each, ``nbytes`` (1 to 16) of it belong
   to the AAD; only the last AAD beat may have fewer than 16. No result;
3. any number of data beats (``aad`` and ``final`` clear): one block each, the plaintext
   (encryption) or ciphertext (decryption), ``nbytes`` as for AAD; the counter blocks
   inc32(J0), inc32(inc32(J0)), ... go to the core. One result each: the block XOR the key
   stream, with the bytes past ``nbytes`` zero (the key stream is cut by the engine);
4. a ``final`` beat. Encryption: ``data`` and ``nbytes`` are ignored; the result is the
   16-byte tag. Decryption: ``data`` is the expected tag, its first ``nbytes`` = T bytes
   (12 to 16; the engine compares whatever T it is given, so a caller refuses shorter tags);
   the result has ``auth_ok`` set when the first T bytes of the computed tag equal them
   (XOR, cut to T bytes, OR-reduced: no early exit), and ``data`` 0, so the computed tag
   never leaves the engine.

A block need not be zero-padded: the bytes past ``nbytes`` are ignored (cut to zero for the
GHASH and the output). AAD beats must precede data beats, and only the last of each kind may
be short; the engine does not check this (the caller does). The engine counts the bytes of
each kind (:data:`~aes_fpga.modes.gcm.COUNT_BITS` bits) for the GHASH's last block
len(A) || len(C); the tag is E_K(J0) XOR GHASH, E_K(J0) computed in the core at the final
beat. A message that never gets its final beat is closed when the next ``first`` beat
comes (its GHASH finished and dropped), so the next message starts cleanly.

Every GCM entry goes through the same FIFO as the other modes' values, with its kind
(:class:`~aes_fpga.modes.gcm.Entry`) and byte count: the head of the queue decides where the
core's result and the value go (the output register, the GHASH's ``h`` or ``i``), so AAD,
ciphertext and the lengths reach the GHASH in message order while the core's ring stays full.
The GHASH takes its input from a one-block register after the queue; a data block's result
waits in the core's output FIFO while the GHASH is busy.
"""

from ..params import Mode
from .engine import ModeEngine, mode_request_layout, mode_response_layout

__all__ = ["Mode", "ModeEngine", "mode_request_layout", "mode_response_layout"]

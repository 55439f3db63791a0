"""Wire protocol of the serial-port AES appliance: specification and reference implementation.

This module is the single source of truth for the protocol spoken between a host and the AES
appliance over a serial port: opcodes, framing, field layouts, status codes and the order in which
a device validates a request. The gateware takes its constants from here and is checked against
:class:`DeviceModel`; host tools build and parse messages with the functions below. It imports
only the standard library and the pure-Python :mod:`aes_fpga.model` (never Amaranth), so host
tools work without the HDL toolchain and the model can be trusted on its own.
Authenticated sessions (opcodes and statuses 0x20 .. 0x2F) are in :mod:`.session_spec`.

All multi-byte integers are big-endian. Offsets and sizes below are in bytes.

Exchange
--------
The host sends a *request*; the device answers every request it can attribute (see "Errors and
validation order") with exactly one *reply* carrying the request's sequence number, in the order
the requests came. The host may send further requests before a reply arrives, up to the device's
window (see "Pipelining"); with a window of 1 it waits for each reply (or a timeout). Outside
GCM messages ``seq`` is opaque to the device: it is echoed, never interpreted, and the device
keeps no record of earlier requests, so a host that retries an ECB, CBC or CTR ``PROCESS`` chunk
after a lost reply must restart that message from its ``FIRST`` chunk (a repeated chunk would
advance the chaining state twice), or send every chunk as a whole message as hosts over UDP do
(see "Transport over UDP"). The chunks of a GCM message carry consecutive ``seq`` values, and the
device keeps its last replies to them, so that a retried chunk is answered, not processed again
(see "GCM messages").

Framing
-------
On the wire every frame is its *content* encoded with COBS (Consistent Overhead Byte Stuffing)
followed by one ``0x00`` delimiter. COBS removes every zero from the content, so a zero always
ends a frame and a receiver resynchronises at the next zero after any corruption. A host may send
a lone ``0x00`` at any time (for example on opening the port) to end whatever partial frame the
device holds; empty frames (two delimiters in a row) are ignored, not counted as errors.

COBS encoding splits the content at its zero bytes and writes each piece as *groups*. A group is a
code byte ``c`` (1..255) followed by ``c - 1`` non-zero data bytes; ``c < 255`` means "the data
bytes, then a zero", ``c == 255`` means "254 data bytes, no zero". The zero implied by the last
group of the frame is not part of the content. Pieces longer than 254 bytes take 255-groups first.
:func:`cobs_encode` emits the shortest form: when the content ends with a run of exactly a
multiple of 254 non-zero bytes, no empty ``0x01`` group follows the last 255-group. Decoders accept
that trailing ``0x01`` group too, as some encoders emit it. Examples::

    content                      encoded (without the delimiter)
    (empty)                      01
    00                           01 01
    11 22 00 33                  03 11 22 02 33
    254 non-zero bytes b         FF b
    254 non-zero bytes b, 00     FF b 01 01

Content of ``n`` bytes encodes to at most ``n + max(1, ceil(n / 254))`` bytes
(:func:`cobs_max_encoded_len`). An encoded frame is malformed (and dropped without a reply) if it
is empty, contains a zero, or its last group announces more bytes than remain.

Frame content
-------------
::

    offset  size  field
    0       1     command   request opcode (Command), or opcode | 0x80 in a reply
    1       2     seq       sequence number, chosen by the host, echoed in the reply
    3       2     length    payload length N, 0 <= N <= MAX_PAYLOAD
    5       N     payload   command-specific, see below
    5 + N   4     crc       CRC-32 of bytes 0 .. 5 + N - 1

The CRC is the IEEE 802.3 CRC-32 (reflected polynomial 0xEDB88320, initial value and final XOR
0xFFFFFFFF; what :func:`zlib.crc32` computes), sent most significant byte first.

``MAX_PAYLOAD`` is 1460 bytes: the largest ``PROCESS`` request, a 4-byte header, a 16-byte IV and
``MAX_PROCESS_DATA`` = 1440 bytes (90 blocks) of data, the most that fits one UDP datagram (see
"Transport over UDP"). Every other payload is smaller (the largest reply is a ``PROCESS`` reply of
1441 bytes). A device may support a smaller maximum, reported by ``INFO`` as its *max payload*
``P``; the requests a host sends it are then at most ``5 + P + 4`` content bytes
(:func:`frame_size`), ``cobs_max_encoded_len(5 + P + 4)`` encoded. On a serial line a device
takes frames of up to ``SERIAL_MAX_ENCODED_FRAME`` = 1058 encoded bytes, or its own largest
when that is longer: the serial appliance has ``P`` = ``SERIAL_MAX_PAYLOAD`` = 1044 (1 KiB
chunks, 1053 content bytes). For ``MAX_PAYLOAD`` the
sizes are ``MAX_FRAME`` = 1469 and ``MAX_ENCODED_FRAME`` = 1475 (what a host's decoder
accepts), but only the UDP transport carries requests that large (see "Transport over UDP").

Commands
--------
Every reply payload starts with a one-byte :class:`Status`. A reply whose status is not ``OK``
carries nothing else: its payload is exactly one byte.

``INFO`` (0x01) -- what the device is. Request payload: empty. Reply::

    offset   size  field
    0        1     status
    1        4     magic             b"AESF"
    5        1     protocol version  PROTOCOL_VERSION (6)
    6        4     build id          identifies the bitstream (e.g. a source revision)
    10       1     name length L     0 .. 255
    11       L     core name         printable ASCII (0x20 .. 0x7E)
    11 + L   1     key sizes         bit 0: AES-128, bit 1: AES-192, bit 2: AES-256
    12 + L   1     key slots         number of key slots S, 1 .. 255 (slots 0 .. S - 1)
    13 + L   1     modes             bit 0: ECB, bit 1: CBC, bit 2: CTR, bit 3: GCM
    14 + L   2     max payload       largest payload the device accepts, 36 .. MAX_PAYLOAD
    16 + L   1     window            requests a host may have unanswered at once, 1 .. 255
    17 + L   1     features          bit 0: an entropy source (its state and failure counts
                                     in ``STATS``, ``RANDOM``); bit 1: a device secret,
                                     sessions required (session_spec); bit 2: raw samples
                                     (``ENTROPY_RAW``); bits 3 .. 7 reserved, zero

``LOAD_KEY`` (0x02) -- store a key in a slot. Request::

    offset  size  field
    0       1     slot
    1       1     key size code     0: AES-128, 1: AES-192, 2: AES-256 (KeySize)
    2       K     key               K = 16, 24 or 32 bytes, as given by the code

Reply: status only.

``ZEROIZE`` (0x03) -- erase a key. Request: one byte, the slot, or ``ALL_SLOTS`` (0xFF) for every
slot. Zeroizing an empty slot succeeds. A device that offers GCM also clears the replies it no
longer keeps before it answers (see "GCM messages"). Reply: status only.

``PROCESS`` (0x04) -- encrypt or decrypt one chunk of a message. Request::

    offset  size  field
    0       1     slot
    1       1     op                0: encrypt, 1: decrypt (Op)
    2       1     mode              0: ECB, 1: CBC, 2: CTR, 3: GCM (Mode)
    3       1     flags             bit 0: FIRST, bit 1: LAST, bit 2: AAD (GCM only);
                                    bits 3..7 reserved, zero
    4       16    iv                only if FIRST: CBC IV, initial CTR counter block, or
                                    GCM's pre-counter block J0
    4 / 20  D     data              the rest of the payload

Reply: status, then on success the D processed bytes (so the reply payload is ``1 + D`` bytes),
except for GCM's ``AAD`` and ``LAST`` chunks (see "GCM messages").

A *message* is a sequence of chunks: the first has ``FIRST`` set, the last has ``LAST`` set (one
chunk may have both). Its slot, op and mode are fixed by the ``FIRST`` chunk and every later chunk
must repeat them. The chaining state (the CBC chaining value, the CTR counter) carries from one
chunk to the next exactly as if the whole message had been one chunk. ECB has no chaining state;
its ``FIRST`` chunk still carries the 16-byte IV field (send zeros; it is ignored) so that every
mode has the same layout. CTR uses the whole 128-bit block as a big-endian counter incremented
once per block, wrapping from 2**128 - 1 to 0 (SP 800-38A, B.1); CTR decryption is encryption.

``D`` must be a multiple of 16, except in the ``LAST`` chunk of a CTR message, which may end with a
partial block (the keystream block is truncated), and in GCM (see "GCM messages"). ``D`` may be
0. ``D`` is at most ``max payload - 20`` (1440 for ``MAX_PAYLOAD``, 1024 for
``SERIAL_MAX_PAYLOAD``), whether or not the chunk carries an IV.

The device holds one message in progress. A ``FIRST`` chunk starts a new one, abandoning any
message in progress. The message ends after its ``LAST`` chunk, and also when ``LOAD_KEY`` or
``ZEROIZE`` changes the key of its slot (a message is never continued under a different key).

``STATS`` (0x10) -- the transport's drop counters. Request payload: empty. Reply::

    offset   size  field
    0        1     status
    1        1     count N           0 .. 255
    2        2N    counters          16-bit, big-endian, wrapping from 65535 to 0

What each counter counts is the transport's (see "Transport over UDP" for the Ethernet
appliance's :data:`UDP_COUNTERS`; a serial device reports none). A device with an entropy
source (``INFO`` features bit 0) reports three more after those, :data:`ENTROPY_COUNTERS`:
``entropy_state`` (an :class:`EntropyStatus`: 0 start-up, its first 1024 samples not yet
tested; 1 healthy; 2 failed, held until the device is reset), ``entropy_rct_failures`` and
``entropy_apt_failures`` (the SP 800-90B repetition count and adaptive proportion test failures
since reset, stopping at 65535). A device that offers GCM reports one more counter after all
those: ``auth_failures`` (:data:`GCM_COUNTERS`), the GCM decryptions answered ``AUTH_FAILED``.
Counters are read, never cleared: a host takes differences.

``RANDOM`` (0x05) -- conditioned words of the entropy source. Request: one byte, the count
``n`` of 16-byte words, 0 .. ``(max payload - 1) // 16`` (:func:`max_random_words`: 65 for
``SERIAL_MAX_PAYLOAD``, 91 for ``MAX_PAYLOAD``; ``BAD_LENGTH`` beyond). Reply: status, then
``16 n`` bytes, each word as the source gave it, never given twice. A source in start-up or
failed is answered ``ENTROPY_UNAVAILABLE``, also when it fails while the words are gathered
(the device answers only once it holds them all). ``n`` = 0 asks only whether words would be
given now. A device without an entropy source (``INFO`` features bit 0 clear) answers
``UNKNOWN_COMMAND``, whatever the payload.

``ENTROPY_RAW`` (0x06) -- diagnostic: the source's raw samples, for an offline SP 800-90B
assessment; only a build for it has the command (``INFO`` features bit 2), any other answers
``UNKNOWN_COMMAND``. Request: one byte, ``n`` blocks of 128 samples, as ``RANDOM``'s count.
Reply: status, ``16 n`` bytes: consecutive raw samples (before health tests and conditioning,
whatever the source's state), 8 a byte, the first in its most significant bit. The samples
between two replies are not given. A diagnostic build conditions samples it may also give out:
its ``RANDOM`` words are no secret.

GCM messages
------------
GCM (NIST SP 800-38D) is offered by a device whose ``INFO`` modes have bit 3 set; any other
device answers mode 3 with ``BAD_MODE``. Only 96-bit nonces are supported (as in OpenTitan's AES):
the ``FIRST`` chunk's IV field is the pre-counter block J0 = nonce (12 bytes) || 00 00 00 01,
computed by the host, and a device answers any other value there with ``BAD_IV``. The device
computes H = E_K(0^128) and E_K(J0) itself from the slot's key; H never leaves it.

A GCM message is a ``FIRST`` chunk, any number of *AAD chunks* (flag ``AAD``: the chunk's data is
additional authenticated data), any number of *data chunks* (flag ``AAD`` clear: plaintext to
encrypt, or ciphertext to decrypt), then a ``LAST`` chunk. The ``FIRST`` chunk is itself an AAD
chunk (``FIRST | AAD``) or a data chunk; a host with AAD to send sends ``FIRST | AAD``. Within
each kind the bytes of all chunks are concatenated: every chunk of a kind is a multiple of 16
bytes except that kind's last, which may be shorter (GHASH pads it with zeros; the keystream of
a short data chunk is cut). ``BAD_CHUNK_ORDER`` answers a chunk of a kind after a short chunk of
that kind, and an AAD chunk after any data chunk (an empty one included). Replies:

- an AAD chunk: the status only (``1`` byte);
- a data chunk: the status and the ``D`` processed bytes, as in the other modes. Decryption
  releases plaintext before the tag is checked, as every streaming GCM does: a host holds the
  plaintext back until the ``LAST`` reply says ``OK``.
- the ``LAST`` chunk carries no message data and never the ``AAD`` flag (``BAD_FLAGS``). In an
  encryption its ``D`` is 0 (else ``BAD_LENGTH``) and the reply is ``OK`` and the 16-byte tag. In a
  decryption its data is the expected tag, ``T`` = 12 .. 16 bytes (else ``BAD_LENGTH``), and the
  reply is the status only: ``OK`` when the first ``T`` bytes of the computed tag equal it,
  ``AUTH_FAILED`` when they do not. The device compares in constant time (XOR, OR-reduce, no
  early exit). The message ends either way; a device that offers GCM counts the failures
  (``STATS``). ``FIRST | LAST`` is an empty message: only the IV and, in a decryption, the tag.

A message's data may not pass the SP 800-38D limit, ``GCM_MAX_DATA_BYTES`` = 2**36 - 32 bytes,
nor its AAD the device's AAD counter, ``GCM_MAX_AAD_BYTES`` = 2**36 - 1 bytes (SP 800-38D allows
more; a host refuses such messages before it sends anything): the chunk that would pass either is
answered ``TOO_LONG``.

Sequence numbers and kept replies. Every GCM chunk after ``FIRST`` carries ``seq`` = the ``seq`` of
the message's previous chunk + 1 (mod 2**16). The device keeps its replies to the last ``W`` GCM
chunks it processed (``W`` its window), each with its ``seq`` and its request's payload: a GCM
``PROCESS`` request whose ``seq`` and payload are those of a kept one is answered with the kept
reply and not processed again (a retransmission; whether or not its message has ended since). The
payload is compared so that a host that starts afresh with a ``seq`` the device still keeps (a
restarted program, say) is not answered for an earlier message; a device may compare a digest of
the payload instead, such as its CRC-32. Any other chunk without ``FIRST`` whose ``seq`` is not the
next one of its message is answered ``OUT_OF_ORDER`` and changes nothing. Kept replies are dropped
when a new GCM message's ``FIRST`` chunk is processed, when ``LOAD_KEY`` or ``ZEROIZE`` changes the
key of the slot their message used (whether or not it has ended), and at reset. ``OK`` and
``AUTH_FAILED`` replies are kept; a refusal (any other status) changes no state and is not kept. A
host never reuses a ``seq`` within ``W`` requests of a GCM message (it counts ``seq`` up, as
:class:`~aes_fpga.appliance.client.Device` does).

The kept replies take room: one reply of the largest size per place of the window. A device that
offers GCM reports a window of at most ``GCM_MAX_WINDOW`` = 8 (four requests in flight already
keep a serial line busy in both directions, so a wider window would only cost memory): a serial
appliance whose receive buffer would allow a wider one reports 8, and a device built with a wider
window and GCM is refused when it is built (:func:`check_gcm_window`; the reference device too).

Clearing the kept replies. A kept reply to a decryption chunk is plaintext, and a dropped reply
(by a newer message or a ``LOAD_KEY``) can no longer be reached but stays in the device's memory
until something overwrites it. ``ZEROIZE`` (of any slot, or ``ALL_SLOTS``) overwrites with zeros
every reply it drops (those of the slot's message) and every reply dropped before, whichever key
made it; only the replies still kept for another slot's message stay. It answers once they are
gone. That takes the device a while (the gateware writes one byte a cycle through the whole of its
kept-reply memory); requests sent meanwhile wait and are answered in order, so a host that keeps
to the window loses nothing.

Status codes
------------
::

    0x00  OK                          0x0A  BAD_FLAGS
    0x01  BAD_CRC                     0x0B  CHAIN_NOT_STARTED
    0x02  UNKNOWN_COMMAND             0x0C  CHAIN_MISMATCH
    0x03  BAD_LENGTH                  0x0D  BUSY
    0x04  BAD_SLOT                    0x0E  BAD_IV
    0x05  KEY_NOT_LOADED              0x0F  AUTH_FAILED
    0x06  LENGTH_NOT_MULTIPLE_OF_16   0x10  OUT_OF_ORDER
    0x07  BAD_MODE                    0x11  BAD_CHUNK_ORDER
    0x08  BAD_KEY_SIZE                0x12  TOO_LONG
    0x09  BAD_OP                      0x13  ENTROPY_UNAVAILABLE

:func:`describe` gives each a one-line description. ``BUSY`` is reserved for gateware that
receives a request while still working on the previous one (a host that keeps to the window never
sees it); :class:`DeviceModel` is never busy.

Pipelining (the window)
-----------------------
A device answers requests in the order it receives them. ``INFO`` reports its *window* ``W``: a
host may send request ``n + W`` once it has the reply to request ``n``, so at most ``W`` requests
are unanswered at any time. A device guarantees that it loses no byte of a host that keeps to its
window, even without flow control on the line: the device's receive buffer holds ``W - 1`` whole
frames of its largest encoded size while it works on and answers another. With ``W >= 2`` the
line carries the next request while the device answers the previous one, which is what keeps a
serial line busy in both directions. Requests that get no reply (frames dropped as malformed, see
below) must not be pipelined: a host sends them, if at all, with nothing else unanswered.

Errors and validation order
---------------------------
A request answered with a status other than ``OK`` changes no device state, except that
``AUTH_FAILED`` ends its GCM message (and is counted and kept, see "GCM messages"). A device
checks a frame in this order and answers with the first failure:

1. Malformed COBS, an encoded frame longer than the device takes (``SERIAL_MAX_ENCODED_FRAME``,
   1058 bytes, or its own largest, see "Frame content"), or content shorter than 9 bytes
   (header and CRC): the frame is dropped *without a reply* (there
   is no trustworthy ``seq`` to answer to). (A device with a smaller max payload answers a
   longer frame up to that limit with ``BAD_LENGTH``, step 3.)
2. CRC mismatch: ``BAD_CRC``, replied with ``seq`` as received and opcode = received command byte
   | 0x80. The header may itself be corrupt, so a host ignores replies whose ``seq`` it is not
   waiting for, and resends on ``BAD_CRC`` or on a timeout.
3. ``length`` differs from the number of payload bytes, or exceeds the device's max payload:
   ``BAD_LENGTH``.
4. The command byte is not a request opcode (this includes reply opcodes): ``UNKNOWN_COMMAND``.
   (A host decoding replies accepts any opcode with bit 7 set, since this reply echoes the
   unknown opcode.)
5. The payload, field by field in byte order:

   - ``INFO``: payload not empty: ``BAD_LENGTH``.
   - ``LOAD_KEY``: shorter than 2 bytes: ``BAD_LENGTH``; slot not below the slot count:
     ``BAD_SLOT``; size code not 0..2, or the size not built in: ``BAD_KEY_SIZE``; key length
     not the size's: ``BAD_LENGTH``.
   - ``STATS``: payload not empty: ``BAD_LENGTH``.
   - ``RANDOM``: no entropy source: ``UNKNOWN_COMMAND``; not exactly 1 byte, or a count over
     :func:`max_random_words`: ``BAD_LENGTH``; the source not healthy: ``ENTROPY_UNAVAILABLE``.
   - ``ENTROPY_RAW``: not a diagnostic build (``INFO`` features bit 2): ``UNKNOWN_COMMAND``;
     then ``RANDOM``'s length checks; the source's state is not checked.
   - ``ZEROIZE``: not exactly 1 byte: ``BAD_LENGTH``; slot neither below the slot count nor
     ``ALL_SLOTS``: ``BAD_SLOT``.
   - ``PROCESS``: shorter than 4 bytes: ``BAD_LENGTH``; slot: ``BAD_SLOT``; op not 0/1:
     ``BAD_OP``; mode not 0..3, or not built in: ``BAD_MODE``; reserved flag bits set, ``AAD``
     set in a mode other than GCM, or ``AAD`` and ``LAST`` both set: ``BAD_FLAGS``; ``FIRST`` set
     but shorter than 20 bytes: ``BAD_LENGTH``; a GCM IV field that is not a J0
     (``nonce || 00 00 00 01``): ``BAD_IV``; ``D`` too large, or a GCM ``LAST`` chunk's ``D``
     not 0 (encryption) or 12 .. 16 (decryption): ``BAD_LENGTH``; ``D`` not a multiple of 16
     where required (never in GCM): ``LENGTH_NOT_MULTIPLE_OF_16``.

6. Device state (``PROCESS``; ``RANDOM``'s source is in step 5's list): a GCM request whose
   ``seq`` and payload are kept: the kept reply (see "GCM messages"; first, so that a retried
   ``LAST`` chunk is answered after its message has ended); no key in the slot:
   ``KEY_NOT_LOADED``; ``FIRST`` clear and no message in progress: ``CHAIN_NOT_STARTED``;
   ``FIRST`` clear and slot, op or mode differ from the message in progress:
   ``CHAIN_MISMATCH``; then, in GCM, ``FIRST`` clear and ``seq`` not the next of the message:
   ``OUT_OF_ORDER``; a chunk that cannot follow the message's previous ones:
   ``BAD_CHUNK_ORDER``; the message's data or AAD would pass its limit: ``TOO_LONG``.

Transport over UDP
------------------
The Ethernet appliance serves the same requests over IPv4/UDP (port 7001 unless built
otherwise). Every datagram it receives on its port is one request: the header and payload of
"Frame content", *without the CRC-32*, without COBS and without a delimiter; it answers each
request with one datagram of the same form to the request's source address and port.

Why no CRC-32 here: the datagram is already checked end to end and on every hop. The UDP checksum
covers header and payload from the sending host's network stack to the device's UDP layer (the
device verifies it whenever it is non-zero, and sends it on every reply; every common host stack
sends it), and each Ethernet link's FCS is itself a CRC-32 over the frame. The frame CRC would add
4 bytes to every datagram and nothing a host's own stack does not already check, and those bytes
decide whether the largest chunk keeps the line at 0.94 of its rate or not. So on this transport a
request is never answered ``BAD_CRC``; every other check of "Errors and validation order" is the
same, from step 3 on. A datagram shorter than the header (5 bytes), or longer than the header
and the device's max payload, is dropped without a reply and counted.

Largest chunk: a 1500-byte MTU leaves ``UDP_MTU - UDP_HEADERS`` = 1472 bytes of UDP payload, and
a ``PROCESS`` request with its IV takes 25 of them before the data (frame header, ``PROCESS``
header, IV), so 1440 bytes (90 blocks) is the most whole-block data one unfragmented datagram
carries: ``MAX_PROCESS_DATA``, in a datagram of ``MAX_DATAGRAM`` = 1465 bytes. The Ethernet
appliance reports ``MAX_PAYLOAD`` as its max payload.

A datagram may be lost, duplicated or reordered, so a host makes every request idempotent and
retransmits: every ECB, CBC or CTR ``PROCESS`` request is a whole message (``FIRST`` and ``LAST``)
carrying the chaining value it starts from -- zeros for ECB, the initial counter advanced by the
blocks before the chunk for CTR, the ciphertext block before the chunk for CBC decryption. For CBC
encryption that value is the device's own output (the last ciphertext block of the previous chunk's
reply), so the host sends each chunk once it holds the previous reply. ``INFO``, ``LOAD_KEY`` (same
key, same slot), ``ZEROIZE`` and ``STATS`` are idempotent as they are; a host waits for a
``LOAD_KEY``'s reply before sending requests that use the key. A request without an answer within a
timeout is sent again with the same ``seq``; the first reply to a ``seq`` is taken and later ones
ignored. Up to ``window`` requests may be unanswered at once (the device queues the next datagrams
while it answers one; a datagram it has no room for is dropped, counted and retransmitted by the
host).

A GCM message cannot be cut into whole messages: its GHASH state would have to travel to the host
and would reveal H. Its chunks are sent as one message with consecutive ``seq`` values, at most
``window`` unanswered, and the kept replies make the retransmission exact (see "GCM messages"):
a lost request is sent again with its ``seq``; a lost reply too, and the device answers it from
what it kept; a duplicate gets the kept reply and is not processed twice; a chunk that overtakes
its predecessor is answered ``OUT_OF_ORDER``, changes nothing, and is sent again (with its
``seq``) once the chunks before it are answered. A host keeps its window no wider than the
device's, so a chunk still unanswered is always one whose reply the device keeps once it has
processed it.

The Ethernet appliance's ``STATS`` reports :data:`UDP_COUNTERS`, in this order: its drop
counters, then two values that are the PHY's, not counts of packets: ``phy_link`` (1 while the
PHY reports its link up over MDIO, 0 while down, 0xFFFF when no PHY answers on MDIO or the
appliance was built without it) and ``phy_link_losses`` (how often the link went down).

Key material
------------
Keys are write-only. ``LOAD_KEY`` is the only frame that carries key bytes, and only from host to
device: no reply ever contains key material, and no reply builder here takes a key. The device
offers no way to read a key back, to learn which key a slot holds, or to export round keys;
:class:`LoadKeyRequest` leaves the key out of its ``repr`` so it does not reach logs.
"""

import enum
import struct

from .. import gcm_model
from ..params import KeySize, Mode, Op

__all__ = [
    "Fields",
    "PROTOCOL_VERSION",
    "MAGIC",
    "REPLY_BIT",
    "HEADER",
    "HEADER_SIZE",
    "CRC_SIZE",
    "BLOCK_SIZE",
    "PROCESS_HEADER",
    "PROCESS_HEADER_SIZE",
    "LOAD_KEY_HEADER",
    "MAX_PROCESS_DATA",
    "MAX_PAYLOAD",
    "MIN_MAX_PAYLOAD",
    "SERIAL_MAX_PAYLOAD",
    "MAX_FRAME",
    "MAX_DATAGRAM",
    "UDP_MTU",
    "UDP_HEADERS",
    "frame_size",
    "ALL_SLOTS",
    "UDP_COUNTERS",
    "MAX_KEY_SLOTS",
    "FLAG_FIRST",
    "FLAG_LAST",
    "FLAG_AAD",
    "BLOCK_MODES",
    "GCM_COUNTERS",
    "ENTROPY_COUNTERS",
    "FEATURE_ENTROPY",
    "FEATURE_ENTROPY_RAW",
    "EntropyStatus",
    "RANDOM_REQUEST",
    "max_random_words",
    "GCM_MAX_DATA_BYTES",
    "GCM_MAX_AAD_BYTES",
    "GCM_MAX_WINDOW",
    "check_gcm_window",
    "GCM_J0_SUFFIX",
    "gcm_pre_counter",
    "Command",
    "Status",
    "describe",
    "reply_opcode",
    "FLAGS_RESERVED",
    "check_uint",
    "check_bytes",
    "check_enum",
    "Op",
    "Mode",
    "KeySize",
]



class Fields:
    """A fixed sequence of big-endian unsigned integer fields, written once as data.

    The host packs and unpacks with :attr:`struct`; the gateware takes :meth:`offset` and
    :meth:`size_of` (or iterates ``(name, offset, size)``) to find the same bytes in a stream.

    Parameters
    ----------
    *fields : (str, int)
        Name and size in bytes (1, 2 or 4) of each field, in wire order.
    """

    _CODES = {1: "B", 2: "H", 4: "I"}

    def __init__(self, *fields):
        for name, size in fields:
            if size not in self._CODES:
                raise ValueError(f"field {name!r}: size must be 1, 2 or 4 bytes, got {size!r}")
        self.fields = tuple(fields)
        self.struct = struct.Struct(">" + "".join(self._CODES[size] for _, size in fields))
        self.size = self.struct.size
        self._offsets = {}
        offset = 0
        for name, size in fields:
            self._offsets[name] = (offset, size)
            offset += size

    def __iter__(self):
        """``(name, offset, size)`` of each field, in wire order."""
        return iter((name, *self._offsets[name]) for name, _ in self.fields)

    def offset(self, name):
        """Byte offset of field ``name``."""
        return self._offsets[name][0]

    def size_of(self, name):
        """Size in bytes of field ``name``."""
        return self._offsets[name][1]

    def pack(self, *values):
        """The fields' bytes, values in wire order."""
        return self.struct.pack(*values)

    def unpack(self, data, offset=0):
        """The fields' values, in wire order, from ``data`` at ``offset``."""
        return self.struct.unpack_from(data, offset)


# --------------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------------

#: Version of this specification, reported by ``INFO``; changes whenever a layout changes
#: (5: ``INFO``'s features byte; 6: ``RANDOM``, ``ENTROPY_RAW``).
PROTOCOL_VERSION = 6
#: First bytes of the ``INFO`` reply after the status, so a host knows it found the appliance.
MAGIC = b"AESF"
#: Set in the opcode of every reply (reply opcode = request opcode | ``REPLY_BIT``).
REPLY_BIT = 0x80

#: The frame header, field by field (see "Frame content"): the host packs it with
#: ``HEADER.struct``, the gateware takes each field's offset from it.
HEADER = Fields(("command", 1), ("seq", 2), ("length", 2))
#: command (1) + seq (2) + length (2).
HEADER_SIZE = HEADER.size
#: CRC-32 after the payload.
CRC_SIZE = 4
#: AES block; also the size of the IV / initial counter block.
BLOCK_SIZE = 16
#: The fixed start of a ``PROCESS`` request payload, before the optional IV.
PROCESS_HEADER = Fields(("slot", 1), ("op", 1), ("mode", 1), ("flags", 1))
#: slot, op, mode, flags: the part of a ``PROCESS`` request before the optional IV.
PROCESS_HEADER_SIZE = PROCESS_HEADER.size
#: The fixed start of a ``LOAD_KEY`` request payload; the key follows.
LOAD_KEY_HEADER = Fields(("slot", 1), ("key_size", 1))
#: Most data bytes in one ``PROCESS`` chunk (90 blocks), with or without an IV: the most whole
#: blocks a UDP datagram holds in a 1500-byte MTU (see "Transport over UDP").
MAX_PROCESS_DATA = 1440
#: Largest payload: a ``PROCESS`` request with its IV and ``MAX_PROCESS_DATA`` bytes of data.
MAX_PAYLOAD = PROCESS_HEADER_SIZE + BLOCK_SIZE + MAX_PROCESS_DATA
#: The serial appliance's ``max payload``: a ``PROCESS`` request with its IV and 1 KiB of data.
SERIAL_MAX_PAYLOAD = PROCESS_HEADER_SIZE + BLOCK_SIZE + 1024
#: Smallest ``max payload`` a device may report: one full block in a ``FIRST`` chunk.
MIN_MAX_PAYLOAD = PROCESS_HEADER_SIZE + BLOCK_SIZE + BLOCK_SIZE
#: Largest frame content on a serial line (header + payload + CRC), before COBS.
MAX_FRAME = HEADER_SIZE + MAX_PAYLOAD + CRC_SIZE
#: The largest IPv4 packet sent unfragmented on Ethernet, and its IPv4 and UDP headers.
UDP_MTU, UDP_HEADERS = 1500, 28
#: Largest datagram on the UDP transport: header and payload, no CRC.
MAX_DATAGRAM = HEADER_SIZE + MAX_PAYLOAD


def frame_size(max_payload, *, crc=True):
    """The largest frame content (header, payload and, with ``crc``, the CRC) of a device whose
    ``max payload`` is ``max_payload``."""
    return HEADER_SIZE + max_payload + (CRC_SIZE if crc else 0)

#: The drop counters the Ethernet appliance's ``STATS`` reports, in order: the MAC's (runt,
#: oversized, bad FCS, not our MAC address, receive buffer full), other Ethernet types, ARP
#: packets not asking for us, IPv4 (options, fragments, bad header checksum, not our address,
#: other protocols, truncated), ICMP (bad checksum, not an echo request), UDP (bad checksum,
#: bad length, other ports), and the appliance's (a datagram shorter than the header, longer
#: than the header and the device's ``max payload``); then the PHY's link, read over MDIO
#: (``phy_link``: 1 up, 0 down, 0xFFFF unknown: no PHY answers, or no MDIO in the build) and
#: how often it went down (``phy_link_losses``).
UDP_COUNTERS = (
    "mac_runts", "mac_giants", "mac_bad_fcs", "mac_not_ours", "mac_overflows",
    "eth_other_types", "arp_ignored",
    "ip_options", "ip_fragments", "ip_bad_checksum", "ip_not_ours", "ip_other_protocols",
    "ip_truncated", "icmp_bad_checksum", "icmp_ignored",
    "udp_bad_checksum", "udp_bad_length", "udp_other_ports",
    "app_short", "app_long",
    "phy_link", "phy_link_losses",
)

#: ``ZEROIZE`` slot number meaning every slot; hence slots are numbered 0 .. 254 at most.
ALL_SLOTS = 0xFF
#: Most key slots a device can have (``ALL_SLOTS`` is not a slot number).
MAX_KEY_SLOTS = 255

#: ``PROCESS`` flag: first chunk of a message; the IV field is present.
FLAG_FIRST = 0x01
#: ``PROCESS`` flag: last chunk of a message; CTR data may end with a partial block.
FLAG_LAST = 0x02
#: ``PROCESS`` flag: the chunk's data is additional authenticated data (GCM only; never with
#: ``LAST``).
FLAG_AAD = 0x04
#: ``PROCESS`` flag bits with no meaning yet: a request with any of them set is ``BAD_FLAGS``.
FLAGS_RESERVED = 0xFF & ~(FLAG_FIRST | FLAG_LAST | FLAG_AAD)

#: The modes of SP 800-38A, which every device offers; GCM only where ``INFO`` lists it.
BLOCK_MODES = (Mode.ECB, Mode.CBC, Mode.CTR)
#: The counter a device that offers GCM adds to its ``STATS``, after all the others.
GCM_COUNTERS = ("auth_failures",)
#: ``INFO`` features bit: the device has an entropy source.
FEATURE_ENTROPY = 0x01
#: ``INFO`` features bit: a diagnostic build that gives raw samples (``ENTROPY_RAW``).
FEATURE_ENTROPY_RAW = 0x04     # (bit 1: session_spec.FEATURE_SESSIONS)
#: The values a device with an entropy source adds to its ``STATS``, after the transport's.
ENTROPY_COUNTERS = ("entropy_state", "entropy_rct_failures", "entropy_apt_failures")
#: The ``RANDOM`` request payload: the number of 16-byte words wanted.
RANDOM_REQUEST = Fields(("count", 1))


def max_random_words(max_payload):
    """The most words one ``RANDOM`` reply carries on a device of ``max payload``
    ``max_payload``: its status and ``16 n`` bytes fit the payload."""
    return (max_payload - 1) // BLOCK_SIZE


#: Most data bytes in one GCM message (SP 800-38D: 2**39 - 256 bits): ``TOO_LONG`` beyond.
GCM_MAX_DATA_BYTES = gcm_model.MAX_DATA_BYTES
#: Most AAD bytes in one GCM message: the device's AAD byte counter (SP 800-38D allows more).
GCM_MAX_AAD_BYTES = 2 ** 36 - 1
#: The widest window a device that offers GCM reports (it keeps a reply per place of it).
GCM_MAX_WINDOW = 8
#: The last 4 bytes of a GCM ``FIRST`` chunk's IV field (J0 = nonce || ``GCM_J0_SUFFIX``).
GCM_J0_SUFFIX = bytes([0, 0, 0, 1])


def check_gcm_window(modes, window):
    """:class:`ValueError` when a device offering ``modes`` would report ``window`` and that is
    over :data:`GCM_MAX_WINDOW` while ``modes`` has GCM (spec "GCM messages")."""
    if Mode.GCM in tuple(modes) and window > GCM_MAX_WINDOW:
        raise ValueError(f"window: {window!r} is over GCM_MAX_WINDOW ({GCM_MAX_WINDOW}), the "
                         f"widest a device with GCM keeps replies for; give {GCM_MAX_WINDOW} "
                         f"or less")


def gcm_pre_counter(nonce):
    """The IV field of a GCM ``FIRST`` chunk: J0 = ``nonce`` (12 bytes) || 00 00 00 01."""
    nonce = check_bytes(nonce, "nonce")
    if len(nonce) != gcm_model.NONCE_BYTES:
        raise ValueError(f"nonce must be {gcm_model.NONCE_BYTES} bytes (only 96-bit nonces are "
                         f"supported), got {len(nonce)}")
    return nonce + GCM_J0_SUFFIX


# --------------------------------------------------------------------------------------------
# Enumerations
# --------------------------------------------------------------------------------------------

class Command(enum.IntEnum):
    """Request opcodes; a reply's opcode is the request's with :data:`REPLY_BIT` set."""

    INFO = 0x01
    LOAD_KEY = 0x02
    ZEROIZE = 0x03
    PROCESS = 0x04
    RANDOM = 0x05
    ENTROPY_RAW = 0x06
    STATS = 0x10


class EntropyStatus(enum.IntEnum):
    """``entropy_state`` in ``STATS``: the entropy source's health."""

    STARTUP = 0
    OK = 1
    FAILED = 2


class Status(enum.IntEnum):
    """First payload byte of every reply; anything but ``OK`` is the whole reply payload."""

    OK = 0x00
    BAD_CRC = 0x01
    UNKNOWN_COMMAND = 0x02
    BAD_LENGTH = 0x03
    BAD_SLOT = 0x04
    KEY_NOT_LOADED = 0x05
    LENGTH_NOT_MULTIPLE_OF_16 = 0x06
    BAD_MODE = 0x07
    BAD_KEY_SIZE = 0x08
    BAD_OP = 0x09
    BAD_FLAGS = 0x0A
    CHAIN_NOT_STARTED = 0x0B
    CHAIN_MISMATCH = 0x0C
    BUSY = 0x0D
    BAD_IV = 0x0E
    AUTH_FAILED = 0x0F
    OUT_OF_ORDER = 0x10
    BAD_CHUNK_ORDER = 0x11
    TOO_LONG = 0x12
    ENTROPY_UNAVAILABLE = 0x13
    # Sessions (see session_spec).
    SESSION_REQUIRED = 0x20
    UNKNOWN_SESSION = 0x21
    ENTROPY_FAILED = 0x22
    BAD_CRYPTOGRAM = 0x23
    SESSION_EXPIRED = 0x24


_DESCRIPTIONS = {
    Status.OK: "success",
    Status.BAD_CRC: "the frame's CRC-32 does not match its contents; the request was ignored",
    Status.UNKNOWN_COMMAND: "the command byte is not a request opcode",
    Status.BAD_LENGTH: "a payload or field length is wrong for the command",
    Status.BAD_SLOT: "the key slot number is not one of the device's slots",
    Status.KEY_NOT_LOADED: "the key slot holds no key (never loaded, or zeroized)",
    Status.LENGTH_NOT_MULTIPLE_OF_16:
        "the data is not whole 16-byte blocks (allowed only in the last chunk of a CTR "
        "message, and in GCM)",
    Status.BAD_MODE: "the mode is not ECB, CBC, CTR or GCM, or is not built into this device",
    Status.BAD_KEY_SIZE: "the key size code is not AES-128/192/256, or is not built in",
    Status.BAD_OP: "the op is neither 0 (encrypt) nor 1 (decrypt)",
    Status.BAD_FLAGS: "reserved PROCESS flag bits are set, or AAD outside GCM or with LAST",
    Status.CHAIN_NOT_STARTED: "a continuation chunk arrived but no message is in progress",
    Status.CHAIN_MISMATCH:
        "a continuation chunk's slot, op or mode differs from the message in progress",
    Status.BUSY: "the device was busy with an earlier request; this one was ignored",
    Status.BAD_IV: "a GCM FIRST chunk's IV field is not J0 = nonce (12 bytes) || 00 00 00 01",
    Status.AUTH_FAILED: "the GCM tag does not match: the message, its AAD, nonce or tag was "
                        "altered, or the key is wrong",
    Status.OUT_OF_ORDER:
        "a GCM chunk's seq is neither the next of its message nor one whose reply is kept",
    Status.BAD_CHUNK_ORDER: "the GCM chunk cannot follow the previous one: AAD after data, or "
                            "a chunk after a short one of its kind",
    Status.TOO_LONG: "the GCM message's data or AAD would pass its length limit",
    Status.SESSION_REQUIRED: "the device has a secret: this request needs a session",
    Status.UNKNOWN_SESSION: "session lost: the device no longer holds it (ended, replaced by "
                            "a newer one, or the device restarted)",
    Status.ENTROPY_FAILED: "the device's entropy source has failed: no session can be opened",
    Status.BAD_CRYPTOGRAM: "the host cryptogram is wrong (a wrong device key)",
    Status.SESSION_EXPIRED: "the session has used its records: open a new one",
    Status.ENTROPY_UNAVAILABLE: "the entropy source is in its start-up or has failed (see "
                                "STATS); no random words were given",
}


def describe(status):
    """Return a one-line human description of a status code.

    Parameters
    ----------
    status : Status or int
        A status byte, possibly one this version does not define.

    Returns
    -------
    str
        The description, or ``"unknown status 0xNN"`` for a value that is not a :class:`Status`.
    """
    try:
        return _DESCRIPTIONS[Status(status)]
    except ValueError:
        return f"unknown status {status:#04x}"


def reply_opcode(command):
    """Return the opcode of the reply to ``command`` (``command | REPLY_BIT``).

    Parameters
    ----------
    command : Command or int
        Request opcode.

    Returns
    -------
    int
        The reply opcode.
    """
    return check_uint(command, "command", 8) | REPLY_BIT


# --------------------------------------------------------------------------------------------
# Argument checking
# --------------------------------------------------------------------------------------------

def check_uint(value, name, bits):
    """``value`` as an ``int`` if it is an unsigned ``bits``-bit integer, else ``TypeError``
    (not an int; a bool is refused too) or ``ValueError`` (out of range), naming it ``name``."""
    # bool is an int subclass; True as a slot number would hide a caller's bug.
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not 0 <= value < (1 << bits):
        raise ValueError(f"{name} must be in range 0 .. {(1 << bits) - 1}, got {value}")
    return int(value)


def check_bytes(value, name):
    """``value`` as ``bytes`` if it is bytes-like (``bytes``, ``bytearray``, ``memoryview``),
    else ``TypeError`` naming it ``name``."""
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"{name} must be bytes, not {type(value).__name__}")
    return bytes(value)


def check_enum(value, name, enum_cls, error):
    """``value`` as a member of ``enum_cls``: ``TypeError`` if it is not an int (or is a bool),
    ``error`` (a :class:`~aes_fpga.appliance.errors.ProtocolError` class, or ``ValueError``)
    if it is no member's value."""
    # Builders get the same error class as the parsers, so a host and the device describe one
    # bad field the same way.
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int or {enum_cls.__name__}, not {type(value).__name__}")
    try:
        return enum_cls(value)
    except ValueError:
        allowed = ", ".join(f"{m.value} ({m.name})" for m in enum_cls)
        raise error(f"{name} must be one of {allowed}, got {value}") from None


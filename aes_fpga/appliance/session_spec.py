"""Authenticated sessions of the AES appliance: specification and the pure-Python record layer.

Part of the wire protocol of :mod:`aes_fpga.appliance.spec` (framing, header, statuses, UDP
transport as there); this module adds what a device built with a *device secret* speaks. The
reference device (:mod:`aes_fpga.appliance.sessions`) and the host driver
(:mod:`aes_fpga.appliance.session_host`) take their constants and cryptography from here.

Device secret
-------------
A device may be built with a 256-bit secret ``K_dev`` shared with its owner (a key file on the
host). ``INFO`` features bit 1 (:data:`FEATURE_SESSIONS`) says that it has one; a device without
it behaves as the rest of the specification says and answers the session opcodes
(:class:`SessionCommand`, 0x20 .. 0x23, which are not in :class:`~.spec.Command`)
``UNKNOWN_COMMAND``. On a device with a secret, **every request but ``INFO``, ``OPEN_SESSION``
and ``AUTHENTICATE`` must travel inside a record of an established session**: any other request
in the clear is answered ``SESSION_REQUIRED`` and changes nothing.

Key derivation
--------------
Keys and cryptograms come from the SP 800-108 counter-mode KDF with AES-256-CMAC keyed with
``K_dev`` (:func:`aes_fpga.cmac_model.kdf_counter`): block ``i`` of the output is
``CMAC(K_dev, [i]_8 || label || 0x00 || context || [L]_16)``, where the label is 11 zero bytes
and a one-byte derivation constant (as GlobalPlatform SCP03), the context is the host challenge
then the device challenge (16 bytes each) and ``L`` the output length in bits. The input is
exactly three AES blocks, so each output block is three chained encryptions on the device's core
(and one more for the CMAC subkeys, kept with ``K_dev``)::

    constant  L    output
    0x00      128  device cryptogram
    0x01      128  host cryptogram
    0x04      256  request key K_req (AES-256, host to device)
    0x05      256  reply key K_rep (AES-256, device to host)
    0x08      256  key-encryption key K_kek (context: 32 zero bytes; no session's)

``K_kek`` wraps keys kept outside the device (SP 800-38F KWP, :mod:`aes_fpga.keywrap`;
``aes-fpga wrap-key``), so that they are never stored in the clear. It depends on ``K_dev``
only, not on a session, and no other value is derived with its constant.

A session costs 18 chained block encryptions of the device (2 x 3 for the cryptograms, 2 x 6 for
the keys) and the key schedules of ``K_req`` and ``K_rep``. (The gateware derives the keys when
``AUTHENTICATE`` establishes the session, the cryptograms at ``OPEN_SESSION``.)

Handshake
---------
``OPEN_SESSION`` (0x20). Request: the host challenge, 16 bytes, fresh for every session (the
host draws it from its operating system's random source). The device draws a 16-byte device
challenge from its entropy source (``ENTROPY_FAILED`` when the source has failed or has not yet
passed its start-up tests: no session without a fresh challenge), picks a 4-byte session id
not used by any session it holds, derives both cryptograms and both keys, and holds them as its
one *pending* handshake (a new ``OPEN_SESSION`` replaces it; a pending handshake takes none of
the places of established sessions, so someone without the secret can delay a handshake but
never end an established session). Reply::

    offset  size  field
    0       1     status
    1       4     session id
    5       16    device challenge
    21      16    device cryptogram

The host derives the same values from ``K_dev`` and refuses the device unless its cryptogram is
the expected one (a wrong device key, or not the owner's device).
An ``OPEN_SESSION`` whose host challenge is the pending handshake's is a retransmission (the
host draws a fresh challenge for every handshake): it gets the pending handshake's reply again,
and no new challenge is drawn.

``AUTHENTICATE`` (0x21). Request: the session id (4 bytes) and the host cryptogram (16 bytes).
The device answers ``UNKNOWN_SESSION`` if the id is not its pending handshake's, and
``BAD_CRYPTOGRAM`` (counted in ``session_failures``, the handshake kept) if the cryptogram is not
the expected one, compared in constant time. Otherwise the handshake becomes an *established
session*, replacing the oldest established one when the device already holds its
:data:`SESSIONS_HELD` (2 to 4; 2 in the reference device). Reply: status only.
An ``AUTHENTICATE`` naming an established session that has taken no record yet, with that
session's host cryptogram, is a retransmission whose reply was lost: ``OK`` again, nothing
changes.

A session ends on ``CLOSE_SESSION`` (0x23, sent inside one of its records: the sealed ``OK``
reply is the last), when a newer session replaces it, on ``ZEROIZE`` of ``ALL_SLOTS`` (after its
sealed reply; every session and the pending handshake end), and at power-up (the device holds
sessions in volatile memory only).

Records
-------
``RECORD`` (0x22) carries one request of an established session, and its reply the answer::

    request payload                          reply payload
    offset  size  field                      offset  size  field
    0       4     session id                 0       1     status (OK)
    4       8     record counter             1       4     session id
    12      1+N   sealed command + payload   5       8     record counter (the request's)
    13 + N  16    tag                        13      M     sealed reply payload
                                             13 + M  16    tag

A request record is AES-256-GCM under ``K_req``, a reply record under ``K_rep``, with the 96-bit
nonce *session id || record counter* and as additional authenticated data every byte of the
frame before the sealed bytes: the 5-byte frame header (``0x22`` or ``0xA2``, ``seq``,
``length``), the reply's status byte, the session id and the counter. The sealed bytes of a
request are its opcode and payload (what would otherwise be the frame's command and payload);
those of a reply are the reply payload the request gets in the clear (its status first). The
device runs the inner request with the frame's ``seq``, exactly as it would run it in the clear
(GCM's chunk sequence and kept replies included). A record costs :data:`RECORD_OVERHEAD` bytes
of payload, so a host in a session sends ``PROCESS`` chunks of at most ``max payload - 29 - 20``
data bytes (1408 in a 1460-byte max payload).

Counters. The host numbers its records 1, 2, 3, ... in each session; the reply to a record
carries that record's counter, and the host accepts a reply only under ``K_rep``, for a record it
sent and is waiting for, with that record's counter (a reply failing any of that is ignored as
if never received). The device accepts a record only if its counter is above the highest it has
accepted in the session; on UDP (datagrams may be lost and reordered) it also accepts one of
the ``W - 1`` counters below that highest one if it has not accepted it yet (``W`` the device's
window, ``INFO``). A
counter above :data:`MAX_RECORDS` is answered ``SESSION_EXPIRED`` (in the clear, only after its
tag has been checked): the host opens a new session long before.

Retransmissions. The device keeps its sealed replies to the records of each session whose
counters are among the ``W`` highest (the highest accepted and the ``W - 1`` below it), with
their ``seq`` and request bytes; a record equal to a kept one is answered with the kept reply
and not run again (a host over UDP retransmits the same datagram). A host over UDP keeps the
records it has sent and not yet had answered within ``W`` consecutive counters (a record waits
while the oldest unanswered one is ``W - 1`` counters below it): so a retransmitted record is
either kept or still acceptable.

Checks, in order, after the frame's own (``spec`` "Errors and validation order" 1 to 4): a
``RECORD`` payload shorter than :data:`RECORD_MIN_PAYLOAD` is ``BAD_LENGTH``; a session id not
established is ``UNKNOWN_SESSION`` (the host's "session lost": the device restarted or replaced
it; the host opens a new one); a kept record gets its kept reply; a tag that fails, a counter of
0 or one refused by the replay rule: **dropped without a reply** (no answer that could serve as
an oracle) and counted in ``session_failures``. Every refusal changes no state but that counter.
An authenticated record's counter is taken even when its inner command is refused (the refusal
travels sealed; the command changes nothing, as in the clear).

Statuses and counters
---------------------
Session statuses lie in 0x20 .. 0x2F::

    0x20  SESSION_REQUIRED    the request must travel in a session record
    0x21  UNKNOWN_SESSION     the session id is not held (ended, replaced, device restarted)
    0x22  ENTROPY_FAILED      no device challenge: the entropy source has failed
    0x23  BAD_CRYPTOGRAM      the host cryptogram is wrong
    0x24  SESSION_EXPIRED     the record counter passed MAX_RECORDS: open a new session

A device with a secret reports one more ``STATS`` counter after every other,
:data:`SESSION_COUNTERS`: ``session_failures`` (records dropped, wrong host cryptograms),
16-bit, wrapping.

What an attacker on the link can and cannot do
----------------------------------------------
Someone who can read, send, drop, reorder and alter frames or datagrams, but holds no ``K_dev``:

- can ask ``INFO`` (what the device is, and that it wants a session), open handshakes (and so
  delay the owner's handshake, which the host retries), and make the device drop records (each
  counted): denial of service is not prevented, on any link;
- can see that records pass, their sizes, timing, session ids and counters, and learn whether
  a session id is held (``UNKNOWN_SESSION`` answers a record whose id is not; the ids are
  on the wire anyway);
- cannot run any other command: ``LOAD_KEY``, ``ZEROIZE``, ``PROCESS`` and ``STATS`` need a
  session, and a session needs the host cryptogram, a CMAC under ``K_dev`` of a fresh device
  challenge;
- cannot read keys, plaintexts or replies (AES-256-GCM under session keys derived from
  ``K_dev`` and both challenges);
- cannot alter, replay or move a record: any change fails its tag; a replayed one fails the
  counter rule (or, after the session has ended or the device restarted, its session id or its
  tag under the new session's keys); a record copied into another session fails its tag;
- cannot forge a reply: the host takes only replies sealed under ``K_rep`` with the counter of
  a record it sent.

Not covered here: a bitstream holding ``K_dev`` that is not kept secret or encrypted, side
channels of the device (power, timing of the gateware), physical access to the board.
"""

import enum
import struct

from .. import cmac_model, gcm_model
from .spec import Command, check_bytes, check_uint

__all__ = [
    "DEVICE_SECRET_BYTES", "CHALLENGE_BYTES", "SESSION_ID_BYTES", "COUNTER_BYTES",
    "CRYPTOGRAM_BYTES", "TAG_BYTES", "SESSION_KEY_BITS", "RECORD_OVERHEAD",
    "RECORD_MIN_PAYLOAD", "RECORD_REPLY_OVERHEAD", "MAX_RECORDS",
    "SESSIONS_HELD", "FEATURE_SESSIONS", "SESSION_COUNTERS", "SessionCommand", "command_name",
    "Derivation", "SessionKeys",
    "derive_session", "derive_key_wrap_key", "KEY_WRAP_CONTEXT", "build_open_request",
    "parse_open_request", "build_open_reply",
    "parse_open_reply", "build_authenticate_request", "parse_authenticate_request",
    "seal_request", "split_record", "open_request", "seal_reply", "open_reply", "record_header",
    "OPEN_REPLY", "AUTHENTICATE_REQUEST", "RECORD_HEADER",
]

#: Bytes of the device secret K_dev (AES-256).
DEVICE_SECRET_BYTES = 32
#: Bytes of the host and the device challenge.
CHALLENGE_BYTES = 16
#: Bytes of a session id (the first part of every record nonce).
SESSION_ID_BYTES = 4
#: Bytes of a record counter (the second part of the nonce).
COUNTER_BYTES = 8
#: Bytes of each cryptogram.
CRYPTOGRAM_BYTES = 16
#: Bytes of a record's GCM tag.
TAG_BYTES = gcm_model.TAG_BYTES
#: Session keys are AES-256.
SESSION_KEY_BITS = 256
#: Payload bytes a request record adds around a request: id, counter, opcode, tag.
RECORD_OVERHEAD = SESSION_ID_BYTES + COUNTER_BYTES + 1 + TAG_BYTES
#: The shortest request record: an inner request with an empty payload.
RECORD_MIN_PAYLOAD = RECORD_OVERHEAD
#: Payload bytes a reply record adds around a reply payload: status, id, counter, tag.
RECORD_REPLY_OVERHEAD = 1 + SESSION_ID_BYTES + COUNTER_BYTES + TAG_BYTES
#: Most records in one session (the highest counter accepted).
MAX_RECORDS = 2 ** 32
#: Established sessions the reference device holds (a device holds 2 to 4).
SESSIONS_HELD = 2
#: ``INFO`` features bit: the device has a secret and wants a session.
FEATURE_SESSIONS = 0x02
#: The counter a device with a secret adds to ``STATS``, after every other.
SESSION_COUNTERS = ("session_failures",)

#: The ``OPEN_SESSION`` reply after its status, the ``AUTHENTICATE`` request, the record's
#: id and counter.
OPEN_REPLY = struct.Struct(f">{SESSION_ID_BYTES}s{CHALLENGE_BYTES}s{CRYPTOGRAM_BYTES}s")
AUTHENTICATE_REQUEST = struct.Struct(f">{SESSION_ID_BYTES}s{CRYPTOGRAM_BYTES}s")
RECORD_HEADER = struct.Struct(f">{SESSION_ID_BYTES}sQ")


class SessionCommand(enum.IntEnum):
    """The session opcodes (a reply's is the request's with ``REPLY_BIT`` set). Apart from
    :class:`~.spec.Command`: only a device with a secret knows them."""

    OPEN_SESSION = 0x20
    AUTHENTICATE = 0x21
    RECORD = 0x22
    #: Only inside a record.
    CLOSE_SESSION = 0x23


def command_name(opcode):
    """The name of a request opcode, session opcodes included (``0xNN`` for an unknown one)."""
    for enum_cls in (Command, SessionCommand):
        try:
            return enum_cls(opcode).name
        except ValueError:
            pass
    return f"{opcode:#04x}"


class Derivation(enum.IntEnum):
    """The KDF's derivation constants (the last byte of its 12-byte label)."""

    DEVICE_CRYPTOGRAM = 0x00
    HOST_CRYPTOGRAM = 0x01
    REQUEST_KEY = 0x04
    REPLY_KEY = 0x05
    KEY_WRAP_KEY = 0x08


def _label(constant):
    return bytes(11) + bytes([constant])


class SessionKeys:
    """What both sides derive for one session: cryptograms and direction keys. The keys are
    never shown: ``repr`` names the session id only."""

    def __init__(self, secret, host_challenge, device_challenge, session_id):
        self.host_challenge, self.device_challenge = bytes(host_challenge), bytes(device_challenge)
        context = self.host_challenge + self.device_challenge
        self.session_id = bytes(session_id)
        self.device_cryptogram = cmac_model.kdf_counter(
            secret, _label(Derivation.DEVICE_CRYPTOGRAM), context, 8 * CRYPTOGRAM_BYTES)
        self.host_cryptogram = cmac_model.kdf_counter(
            secret, _label(Derivation.HOST_CRYPTOGRAM), context, 8 * CRYPTOGRAM_BYTES)
        self.request_key = cmac_model.kdf_counter(
            secret, _label(Derivation.REQUEST_KEY), context, SESSION_KEY_BITS)
        self.reply_key = cmac_model.kdf_counter(
            secret, _label(Derivation.REPLY_KEY), context, SESSION_KEY_BITS)

    def __repr__(self):
        return f"SessionKeys(session_id={self.session_id.hex()})"


def derive_session(secret, host_challenge, device_challenge, session_id):
    """The :class:`SessionKeys` of a handshake (arguments as bytes)."""
    secret = check_bytes(secret, "secret")
    if len(secret) != DEVICE_SECRET_BYTES:
        raise ValueError(f"device secret must be {DEVICE_SECRET_BYTES} bytes, got {len(secret)}")
    for name, value in (("host_challenge", host_challenge),
                        ("device_challenge", device_challenge)):
        if len(check_bytes(value, name)) != CHALLENGE_BYTES:
            raise ValueError(f"{name} must be {CHALLENGE_BYTES} bytes, got {len(value)}")
    return SessionKeys(secret, host_challenge, device_challenge, session_id)


#: The KDF context of the key-encryption key: 32 zero bytes where a session's challenges go (the
#: KDF's input is three blocks, as for every session value).
KEY_WRAP_CONTEXT = bytes(2 * CHALLENGE_BYTES)


def derive_key_wrap_key(secret):
    """``K_kek``, the key-encryption key of the device secret ``secret`` (32 bytes): 256 bits
    of the KDF with :attr:`Derivation.KEY_WRAP_KEY` and :data:`KEY_WRAP_CONTEXT`. Never
    shown."""
    secret = check_bytes(secret, "secret")
    if len(secret) != DEVICE_SECRET_BYTES:
        raise ValueError(f"device secret must be {DEVICE_SECRET_BYTES} bytes, got {len(secret)}")
    return cmac_model.kdf_counter(secret, _label(Derivation.KEY_WRAP_KEY), KEY_WRAP_CONTEXT,
                                  SESSION_KEY_BITS)


# --------------------------------------------------------------------------------------------
# Handshake messages
# --------------------------------------------------------------------------------------------

def build_open_request(host_challenge):
    """The ``OPEN_SESSION`` request payload."""
    host_challenge = check_bytes(host_challenge, "host_challenge")
    if len(host_challenge) != CHALLENGE_BYTES:
        raise ValueError(f"host challenge must be {CHALLENGE_BYTES} bytes")
    return host_challenge


def parse_open_request(payload, error):
    """The host challenge of an ``OPEN_SESSION`` request; ``error`` (a ``BadLength``) if the
    payload is not exactly :data:`CHALLENGE_BYTES`."""
    if len(payload) != CHALLENGE_BYTES:
        raise error(f"OPEN_SESSION payload must be {CHALLENGE_BYTES} bytes, got {len(payload)}")
    return bytes(payload)


def build_open_reply(session_id, device_challenge, device_cryptogram):
    """A successful ``OPEN_SESSION`` reply payload (status ``OK`` first)."""
    return b"\x00" + OPEN_REPLY.pack(session_id, device_challenge, device_cryptogram)


def parse_open_reply(payload, error):
    """``(session id, device challenge, device cryptogram)`` of an ``OK`` ``OPEN_SESSION``
    reply; ``error`` (a ``BadLength``) when its length is wrong."""
    if len(payload) != 1 + OPEN_REPLY.size:
        raise error(f"OPEN_SESSION reply must be {1 + OPEN_REPLY.size} bytes, got {len(payload)}")
    return OPEN_REPLY.unpack_from(payload, 1)


def build_authenticate_request(session_id, host_cryptogram):
    """The ``AUTHENTICATE`` request payload."""
    return AUTHENTICATE_REQUEST.pack(session_id, host_cryptogram)


def parse_authenticate_request(payload, error):
    """``(session id, host cryptogram)`` of an ``AUTHENTICATE`` request; ``error`` (a
    ``BadLength``) when its length is wrong."""
    if len(payload) != AUTHENTICATE_REQUEST.size:
        raise error(f"AUTHENTICATE payload must be {AUTHENTICATE_REQUEST.size} bytes, got "
                    f"{len(payload)}")
    return AUTHENTICATE_REQUEST.unpack(payload)


# --------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------

def record_header(opcode, seq, length):
    """The 5-byte frame header of a record (part of its additional authenticated data)."""
    return bytes([opcode]) + seq.to_bytes(2, "big") + length.to_bytes(2, "big")


def _nonce(session_id, counter):
    return bytes(session_id) + counter.to_bytes(COUNTER_BYTES, "big")


def seal_request(keys, opcode, seq, counter, command, payload, *, gcm=gcm_model):
    """The payload of a request record carrying ``command`` and ``payload`` (record frame
    opcode ``opcode``, frame ``seq``, record ``counter`` 1 .. 2**64 - 1).

    ``gcm`` (here and below) has :mod:`aes_fpga.gcm_model`'s ``encrypt`` and ``decrypt``: that
    model by default, a faster one with the same results on a host."""
    check_uint(counter, "counter", 64)
    head = RECORD_HEADER.pack(keys.session_id, counter)
    inner = bytes([command]) + bytes(payload)
    aad = record_header(opcode, seq, len(head) + len(inner) + TAG_BYTES) + head
    sealed, tag = gcm.encrypt(keys.request_key, _nonce(keys.session_id, counter), aad, inner)
    return head + sealed + tag


def split_record(payload):
    """``(session id, counter)`` of a request record payload at least
    :data:`RECORD_MIN_PAYLOAD` long."""
    return RECORD_HEADER.unpack_from(payload)


def open_request(keys, opcode, seq, payload, *, gcm=gcm_model):
    """``(counter, command, inner payload)`` of a request record sealed under ``keys``, or
    :class:`aes_fpga.gcm_model.AuthenticationError` (carrying nothing)."""
    _, counter = RECORD_HEADER.unpack_from(payload)
    head = payload[:RECORD_HEADER.size]
    aad = record_header(opcode, seq, len(payload)) + head
    inner = gcm.decrypt(keys.request_key, _nonce(keys.session_id, counter), aad,
                        payload[RECORD_HEADER.size:-TAG_BYTES], payload[-TAG_BYTES:])
    return counter, inner[0], inner[1:]


def seal_reply(keys, opcode, seq, counter, reply, *, gcm=gcm_model):
    """The payload of a reply record (status ``OK`` first) carrying the reply payload
    ``reply`` to the record with ``counter``; ``opcode`` is the reply's (0xA2)."""
    head = b"\x00" + RECORD_HEADER.pack(keys.session_id, counter)
    aad = record_header(opcode, seq, len(head) + len(reply) + TAG_BYTES) + head
    sealed, tag = gcm.encrypt(keys.reply_key, _nonce(keys.session_id, counter), aad,
                              bytes(reply))
    return head + sealed + tag


def open_reply(keys, opcode, seq, counter, payload, *, gcm=gcm_model):
    """The reply payload sealed in the reply record ``payload``, if it is sealed under
    ``keys`` for the record with ``counter``; else :class:`aes_fpga.gcm_model.
    AuthenticationError` (a wrong counter, session, key or any altered byte)."""
    if len(payload) < RECORD_REPLY_OVERHEAD or payload[0] != 0:
        raise gcm_model.AuthenticationError()
    session_id, got = RECORD_HEADER.unpack_from(payload, 1)
    if session_id != keys.session_id or got != counter:
        raise gcm_model.AuthenticationError()
    head = payload[:1 + RECORD_HEADER.size]
    aad = record_header(opcode, seq, len(payload)) + head
    return gcm.decrypt(keys.reply_key, _nonce(keys.session_id, counter), aad,
                       payload[len(head):-TAG_BYTES], payload[-TAG_BYTES:])

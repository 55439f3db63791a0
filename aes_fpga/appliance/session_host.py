"""The host side of authenticated sessions (:mod:`.session_spec`): the handshake, and the
sealing of requests and opening of replies that :class:`~aes_fpga.appliance.client.Device` and
:class:`~aes_fpga.appliance.udp_client.UdpDevice` do on every frame once they hold a session.

A host with a device key never talks to the device in the clear beyond ``INFO`` and the
handshake: ``INFO`` is not authenticated, so a device that says it has no secret (or answers
the handshake ``UNKNOWN_COMMAND``) is refused rather than sent keys in the clear.
"""

import hmac
import os
from collections import OrderedDict
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .. import gcm_model
from .errors import BadLength, BadReply, ProtocolError, UnknownSession
from .frame import Frame
from .session_spec import (
    CHALLENGE_BYTES,
    DEVICE_SECRET_BYTES,
    MAX_RECORDS,
    RECORD_OVERHEAD,
    SessionCommand,
    build_authenticate_request,
    build_open_request,
    derive_session,
    open_reply,
    parse_open_reply,
    seal_request,
)
from .spec import BLOCK_SIZE, Command, Status, reply_opcode

__all__ = ["WrongDeviceKey", "NotSecured", "HostSession", "read_device_key",
           "DEVICE_KEY_ENV", "OpenSslGcm"]

#: The environment variable naming the device key file when ``--device-key-file`` is not given.
DEVICE_KEY_ENV = "AES_FPGA_DEVICE_KEY_FILE"

# The only replies a host with a device key takes in the clear.
_CLEAR_REPLIES = frozenset(reply_opcode(c) for c in (
    Command.INFO, SessionCommand.OPEN_SESSION, SessionCommand.AUTHENTICATE))
# Handshakes tried before giving up when another host's handshake keeps replacing ours.
_HANDSHAKE_ATTEMPTS = 3
# Records whose replies may still come (a pipeline's window, retransmissions), remembered.
_REMEMBERED = 1024
# A session is renewed this many records before its limit, so that a pipeline never passes it.
_RENEW_MARGIN = 1 << 16


class OpenSslGcm:
    """:mod:`aes_fpga.gcm_model`'s ``encrypt`` and ``decrypt`` (96-bit nonces, 16-byte tags)
    through ``cryptography``'s ``AESGCM``: the host seals and opens every record at the
    link's rate, which the pure-Python model (about 1 Mbit/s) cannot."""

    def __init__(self):
        self._ciphers = {}

    def _cipher(self, key):
        if key not in self._ciphers:
            if len(self._ciphers) > 4:
                self._ciphers.clear()
            self._ciphers[key] = AESGCM(key)
        return self._ciphers[key]

    def encrypt(self, key, nonce, aad, data):
        out = self._cipher(key).encrypt(nonce, bytes(data), aad)
        return out[:-gcm_model.TAG_BYTES], out[-gcm_model.TAG_BYTES:]

    def decrypt(self, key, nonce, aad, ciphertext, tag):
        if len(tag) != gcm_model.TAG_BYTES:
            raise gcm_model.AuthenticationError()
        try:
            return self._cipher(key).decrypt(nonce, bytes(ciphertext) + bytes(tag), aad)
        except InvalidTag:
            raise gcm_model.AuthenticationError() from None

    def __repr__(self):
        return "OpenSslGcm()"


class WrongDeviceKey(BadReply):
    """The device's cryptogram is not the one the device key gives: a wrong key, or not the
    owner's device."""


class NotSecured(BadReply):
    """A host with a device key found a device without a secret: nothing is sent in the
    clear."""


def read_device_key(path):
    """The 32-byte device key in the file ``path``: 32 raw bytes, or 64 hexadecimal digits
    (spaces and line breaks ignored). :class:`ValueError` names the file, never its bytes."""
    data = Path(path).read_bytes()
    if len(data) == DEVICE_SECRET_BYTES:
        return data
    try:
        key = bytes.fromhex(data.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        key = b""
    if len(key) != DEVICE_SECRET_BYTES:
        raise ValueError(f"{path}: a device key file holds {DEVICE_SECRET_BYTES} bytes, raw or "
                         f"as {2 * DEVICE_SECRET_BYTES} hexadecimal digits")
    return key


class HostSession:
    """One host's session with one device, under the device key ``device_key`` (32 bytes,
    never shown). :meth:`handshake` opens it; :meth:`seal` and :meth:`open` are applied to
    every frame sent and received afterwards."""

    def __init__(self, device_key):
        device_key = bytes(device_key)
        if len(device_key) != DEVICE_SECRET_BYTES:
            raise ValueError(f"device key must be {DEVICE_SECRET_BYTES} bytes, got "
                             f"{len(device_key)}")
        self._secret = device_key
        self._keys = None
        self._counter = 0
        self._sent = OrderedDict()        # seq -> (inner command, record counter)
        #: Sessions opened so far.
        self.opened = 0
        self._gcm = OpenSslGcm()

    def __repr__(self):
        state = "open" if self._keys is not None else "closed"
        return f"HostSession({state}, records={self._counter})"

    @property
    def active(self):
        """Whether a session is held (and not near its record limit)."""
        return self._keys is not None and self._counter < MAX_RECORDS - _RENEW_MARGIN

    def forget(self):
        """Drop the session (it was lost); the next request opens another."""
        self._keys = None
        self._sent.clear()

    @staticmethod
    def max_chunk(info):
        """The largest whole-block ``PROCESS`` chunk that fits a record to the device
        ``info`` describes."""
        return (info.max_process_data - RECORD_OVERHEAD) // BLOCK_SIZE * BLOCK_SIZE

    def handshake(self, request):
        """Open a session; ``request(command, payload)`` sends one request in the clear and
        returns its ``OK`` reply payload (raising on any other status). When another host's
        handshake replaced ours on the device (``UNKNOWN_SESSION`` to ``AUTHENTICATE``), it is
        tried again, up to 3 times."""
        for attempt in range(_HANDSHAKE_ATTEMPTS):
            try:
                return self._handshake(request)
            except UnknownSession:
                if attempt == _HANDSHAKE_ATTEMPTS - 1:
                    raise

    def _handshake(self, request):
        self.forget()
        host_challenge = os.urandom(CHALLENGE_BYTES)
        try:
            reply = request(SessionCommand.OPEN_SESSION, build_open_request(host_challenge))
        except ProtocolError as e:
            if e.status == Status.UNKNOWN_COMMAND:
                raise NotSecured("the device has no secret (it does not know OPEN_SESSION); "
                                 "nothing is sent to it in the clear with a device key") from None
            raise
        session_id, device_challenge, cryptogram = parse_open_reply(reply, BadLength)
        keys = derive_session(self._secret, host_challenge, device_challenge, session_id)
        if not hmac.compare_digest(cryptogram, keys.device_cryptogram):
            raise WrongDeviceKey("the device's cryptogram does not match: wrong device key, or "
                                 "not this key's device")
        request(SessionCommand.AUTHENTICATE,
                build_authenticate_request(session_id, keys.host_cryptogram))
        self._keys, self._counter = keys, 0
        self.opened += 1

    def seal(self, command, seq, payload):
        """``(opcode, payload)`` of the frame that carries ``command`` and ``payload`` with
        ``seq``: a record in a session, the request itself for ``INFO``, the handshake, or
        without a session."""
        if (self._keys is None or command == Command.INFO
                or command in (SessionCommand.OPEN_SESSION, SessionCommand.AUTHENTICATE)):
            return command, payload
        self._counter += 1
        self._sent[seq] = (command, self._counter)
        self._sent.move_to_end(seq)
        while len(self._sent) > _REMEMBERED:
            self._sent.popitem(last=False)
        return SessionCommand.RECORD, seal_request(
            self._keys, SessionCommand.RECORD, seq, self._counter, command, payload,
            gcm=self._gcm)

    def open(self, frame):
        """The reply ``frame`` as its inner reply (the request's opcode | 0x80), or ``None``
        when it is to be ignored: a record reply not sealed under the device's reply key for
        a record this host sent with that ``seq``, a clear reply to a record other than
        "session lost" or "expired" (which drop the session), or a clear reply to anything
        but ``INFO`` and the handshake."""
        if frame.command != reply_opcode(SessionCommand.RECORD):
            # A host with a device key sends nothing else in the clear: any other clear reply
            # is someone else's (a forger's "OK" to a sealed request, say).
            return frame if frame.command in _CLEAR_REPLIES else None
        sent = self._sent.get(frame.seq)
        if sent is None or self._keys is None:
            return None
        command, counter = sent
        if len(frame.payload) == 1:
            if frame.payload[0] not in (Status.UNKNOWN_SESSION, Status.SESSION_EXPIRED):
                return None
            self.forget()
            return Frame(reply_opcode(command), frame.seq, frame.payload)
        try:
            inner = open_reply(self._keys, frame.command, frame.seq, counter, frame.payload,
                               gcm=self._gcm)
        except gcm_model.AuthenticationError:
            return None
        return Frame(reply_opcode(command), frame.seq, inner)

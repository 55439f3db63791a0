"""The device side of authenticated sessions (:mod:`.session_spec`), in pure Python: the gate
that :class:`~aes_fpga.appliance.reference.DeviceModel` puts in front of its commands when it
has a device secret."""

import hmac
from collections import OrderedDict

from .. import gcm_model
from .errors import (
    BadCryptogram,
    BadLength,
    EntropyFailed,
    SessionExpired,
    SessionRequired,
    UnknownSession,
)
from .messages import build_status_reply
from .session_spec import (
    CHALLENGE_BYTES,
    MAX_RECORDS,
    RECORD_MIN_PAYLOAD,
    SESSION_ID_BYTES,
    SESSIONS_HELD,
    SessionCommand,
    build_open_reply,
    derive_session,
    open_request,
    parse_authenticate_request,
    parse_open_request,
    seal_reply,
    split_record,
)
from .spec import ALL_SLOTS, Command, Status, reply_opcode

__all__ = ["SessionGate", "SessionState"]


class SessionState:
    """An established session: its keys, the highest counter accepted and those accepted
    within the UDP window below it, and the sealed replies kept for retransmissions (the
    replay rule of spec "Counters", which the gateware's
    :class:`~aes_fpga.appliance.gateware.session_counters.RecordCounters` follows)."""

    def __init__(self, keys, window):
        self.keys, self.window = keys, window
        self.last = 0
        self.seen = set()
        self.kept = {}                   # counter -> (seq, request payload, sealed reply)

    def __repr__(self):
        return f"SessionState(id={self.keys.session_id.hex()}, last={self.last})"

    def acceptable(self, counter, datagram):
        """Whether a record with ``counter`` may be taken (``datagram``: it came over UDP)."""
        if counter == 0:
            return False
        if counter > self.last:
            return True
        return datagram and counter > self.last - self.window and counter not in self.seen

    def accept(self, counter, seq, payload, sealed):
        """Take the record ``counter``; keep its reply while it is among the window's."""
        if counter > self.last:
            self.last = counter
            self.seen = {c for c in self.seen if c > counter - self.window}
            for old in [c for c in self.kept if c <= counter - self.window]:
                del self.kept[old]
        self.seen.add(counter)
        self.kept[counter] = (seq, payload, sealed)


class SessionGate:
    """What a device with a secret does before it runs a command (spec
    :mod:`.session_spec`): the handshake, the records, the replay rule, the refusals.

    Every refusal changes nothing but :attr:`failures` (records dropped, wrong host
    cryptograms), which ``STATS`` reports as ``session_failures``.

    Parameters
    ----------
    secret : bytes
        The device secret, 32 bytes; never shown (``repr`` leaves it out).
    challenge : callable
        Returns a fresh 16-byte device challenge, or ``None`` when the entropy source has
        failed (the handshake is then refused ``ENTROPY_FAILED``).
    window : int
        The device's window ``W``: counters accepted below the highest on UDP, and sealed
        replies kept per session for retransmissions.
    held : int
        Established sessions held (2 to 4), the oldest replaced.
    max_records : int
        The highest record counter accepted (``SESSION_EXPIRED`` above).
    """

    #: The opcodes this gate answers besides the device's commands.
    opcodes = frozenset(SessionCommand)

    def __init__(self, secret, challenge, *, window=1, held=SESSIONS_HELD,
                 max_records=MAX_RECORDS):
        if not 2 <= held <= 4:
            raise ValueError(f"held must be in range 2 .. 4, got {held!r}")
        self._secret = bytes(secret)
        derive_session(self._secret, bytes(16), bytes(16), bytes(4))     # checks its length
        self._challenge = challenge
        self.window, self.held, self.max_records = max(1, window), held, max_records
        self.failures = 0
        self._pending = None
        self._sessions = OrderedDict()       # session id -> SessionState, oldest first
        self._next_id = 0

    def __repr__(self):
        return f"SessionGate(sessions={len(self._sessions)}, failures={self.failures})"

    @property
    def session_ids(self):
        """The ids of the established sessions, oldest first."""
        return list(self._sessions)

    @property
    def last_counters(self):
        """``{session id: highest record counter accepted}`` of the established sessions."""
        return {sid: session.last for sid, session in self._sessions.items()}

    def end_all(self):
        """End every session and the pending handshake (``ZEROIZE`` of every slot)."""
        self._sessions.clear()
        self._pending = None

    def answer(self, frame, *, datagram, run):
        """The reply payload to the checked request ``frame``, or ``None`` to drop it.

        ``run(command, payload, seq)`` runs a device command and returns its reply payload
        (refusals included); ``datagram``: the request came over UDP (the replay window).
        Raises the :class:`~.errors.ProtocolError` to answer in the clear.
        """
        command = frame.command
        if command == Command.INFO:
            return run(command, frame.payload, frame.seq)
        if command == SessionCommand.OPEN_SESSION:
            return self._open(frame.payload)
        if command == SessionCommand.AUTHENTICATE:
            return self._authenticate(frame.payload)
        if command == SessionCommand.RECORD:
            return self._record(frame, datagram, run)
        raise SessionRequired(f"command {command:#04x} needs a session: the device has a "
                              f"secret")

    def _open(self, payload):
        host_challenge = parse_open_request(payload, BadLength)
        pending = self._pending
        if pending is not None and pending.host_challenge == host_challenge:
            # A retransmission (the host's challenge is fresh for every handshake): the same
            # reply, so that the host's AUTHENTICATE names the handshake the device holds.
            return build_open_reply(pending.session_id, pending.device_challenge,
                                    pending.device_cryptogram)
        device_challenge = self._challenge()
        if device_challenge is None or len(device_challenge) != CHALLENGE_BYTES:
            raise EntropyFailed("the entropy source gives no device challenge")
        while True:
            self._next_id = (self._next_id + 1) % (1 << 8 * SESSION_ID_BYTES)
            session_id = self._next_id.to_bytes(SESSION_ID_BYTES, "big")
            if session_id not in self._sessions:
                break
        keys = derive_session(self._secret, host_challenge, device_challenge, session_id)
        self._pending = keys
        return build_open_reply(session_id, device_challenge, keys.device_cryptogram)

    def _authenticate(self, payload):
        session_id, cryptogram = parse_authenticate_request(payload, BadLength)
        keys = self._pending
        held = self._sessions.get(session_id)
        if held is not None and held.last == 0 and hmac.compare_digest(
                cryptogram, held.keys.host_cryptogram):
            # A retransmission whose first reply was lost: answered again, nothing changes.
            return build_status_reply(Status.OK)
        if keys is None or keys.session_id != session_id:
            raise UnknownSession("AUTHENTICATE: no handshake pending with that session id")
        if not hmac.compare_digest(cryptogram, keys.host_cryptogram):
            self.failures += 1
            raise BadCryptogram("AUTHENTICATE: wrong host cryptogram")
        self._pending = None
        self._sessions[session_id] = SessionState(keys, self.window)
        while len(self._sessions) > self.held:
            self._sessions.popitem(last=False)
        return build_status_reply(Status.OK)

    def _record(self, frame, datagram, run):
        payload, seq = frame.payload, frame.seq
        if len(payload) < RECORD_MIN_PAYLOAD:
            raise BadLength(f"RECORD payload must be at least {RECORD_MIN_PAYLOAD} bytes, got "
                            f"{len(payload)}")
        session_id, counter = split_record(payload)
        session = self._sessions.get(session_id)
        if session is None:
            raise UnknownSession("RECORD: the session is not held")
        kept = session.kept.get(counter)
        if kept is not None and kept[:2] == (seq, payload):
            return kept[2]
        try:
            _, command, inner = open_request(session.keys, frame.command, seq, payload)
        except gcm_model.AuthenticationError:
            self.failures += 1
            return None
        if not session.acceptable(counter, datagram):
            self.failures += 1
            return None
        if counter > self.max_records:
            raise SessionExpired(f"RECORD: counter past {self.max_records}")
        # Authenticated and fresh: the counter is taken, whatever the command answers.
        if command == SessionCommand.CLOSE_SESSION:
            reply = build_status_reply(Status.BAD_LENGTH if inner else Status.OK)
        elif command in set(Command):
            reply = run(command, inner, seq)
        else:
            reply = build_status_reply(Status.UNKNOWN_COMMAND)
        sealed = seal_reply(session.keys, reply_opcode(frame.command), seq, counter, reply)
        session.accept(counter, seq, payload, sealed)
        if command == SessionCommand.CLOSE_SESSION and reply[0] == Status.OK:
            del self._sessions[session_id]
        if command == Command.ZEROIZE and inner == bytes([ALL_SLOTS]) and reply[0] == Status.OK:
            self.end_all()
        return sealed

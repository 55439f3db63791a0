"""The errors of the appliance protocol: one :class:`ProtocolError` subclass per
:class:`~aes_fpga.appliance.spec.Status`, raised by the host-side builders and parsers and by
the reference device (whose answer is the error's ``status``)."""

from .spec import ALL_SLOTS, MAX_KEY_SLOTS, Status

__all__ = [
    "ProtocolError",
    "CobsError",
    "BadCrc",
    "UnknownCommand",
    "BadLength",
    "BadSlot",
    "KeyNotLoaded",
    "LengthNotMultipleOf16",
    "BadMode",
    "BadKeySize",
    "BadOp",
    "BadFlags",
    "ChainNotStarted",
    "ChainMismatch",
    "Busy",
    "BadIv",
    "AuthFailed",
    "OutOfOrder",
    "BadChunkOrder",
    "TooLong",
    "SessionRequired",
    "UnknownSession",
    "EntropyFailed",
    "BadCryptogram",
    "SessionExpired",
    "EntropyUnavailable",
    "BadReply",
    "DeviceError",
    "error_for_status",
    "check_slot",
]


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------

class ProtocolError(ValueError):
    """Something violates the protocol.

    Subclasses exist per :class:`Status`; a device answers with the error's ``status``. It is a
    ``ValueError`` so that builders can share the checks of the parsers.

    Parameters
    ----------
    message : str
        What is wrong, naming the field, its value and the allowed range.
    command, seq : int, optional
        Opcode and sequence number of the offending frame, when they could be read; a device
        replies to an error only if ``seq`` is known.
    status : Status, optional
        Overrides the class's status (used by :class:`DeviceError`).

    Attributes
    ----------
    status : Status or None
        The status to reply with; ``None`` when there is none (:class:`CobsError`: no reply;
        :class:`BadReply`: a host's finding about a reply).
    command, seq : int or None
        As given.
    """

    status = None

    def __init__(self, message, *, command=None, seq=None, status=None):
        super().__init__(message)
        if status is not None:
            self.status = Status(status)
        self.command = command
        self.seq = seq


class CobsError(ProtocolError):
    """Malformed COBS data; the frame is dropped without a reply."""


class BadCrc(ProtocolError):
    """The frame's CRC-32 does not match."""

    status = Status.BAD_CRC


class UnknownCommand(ProtocolError):
    """The command byte is not a request opcode."""

    status = Status.UNKNOWN_COMMAND


class BadLength(ProtocolError):
    """A frame, payload or field has the wrong length."""

    status = Status.BAD_LENGTH


class BadSlot(ProtocolError):
    """The key slot number is out of range."""

    status = Status.BAD_SLOT


class KeyNotLoaded(ProtocolError):
    """``PROCESS`` names a slot that holds no key."""

    status = Status.KEY_NOT_LOADED


class LengthNotMultipleOf16(ProtocolError):
    """``PROCESS`` data is not whole blocks where it must be."""

    status = Status.LENGTH_NOT_MULTIPLE_OF_16


class BadMode(ProtocolError):
    """Unknown or unsupported mode."""

    status = Status.BAD_MODE


class BadKeySize(ProtocolError):
    """Unknown or unsupported key size code."""

    status = Status.BAD_KEY_SIZE


class BadOp(ProtocolError):
    """The op is neither encrypt nor decrypt."""

    status = Status.BAD_OP


class BadFlags(ProtocolError):
    """Reserved ``PROCESS`` flag bits are set."""

    status = Status.BAD_FLAGS


class ChainNotStarted(ProtocolError):
    """A continuation chunk without a message in progress."""

    status = Status.CHAIN_NOT_STARTED


class ChainMismatch(ProtocolError):
    """A continuation chunk that does not match the message in progress."""

    status = Status.CHAIN_MISMATCH


class Busy(ProtocolError):
    """The device was busy (gateware only)."""

    status = Status.BUSY


class BadIv(ProtocolError):
    """A GCM ``FIRST`` chunk's IV field is not a J0 (nonce || 00 00 00 01)."""

    status = Status.BAD_IV


class AuthFailed(ProtocolError):
    """A GCM decryption's tag does not match (the device's answer; the host driver raises
    :class:`aes_fpga.gcm_model.AuthenticationError` instead, carrying no data)."""

    status = Status.AUTH_FAILED


class OutOfOrder(ProtocolError):
    """A GCM chunk whose ``seq`` is neither the next of its message nor a kept one."""

    status = Status.OUT_OF_ORDER


class BadChunkOrder(ProtocolError):
    """A GCM chunk that cannot follow the previous one of its message."""

    status = Status.BAD_CHUNK_ORDER


class TooLong(ProtocolError):
    """A GCM message's data or AAD would pass its limit."""

    status = Status.TOO_LONG


class SessionRequired(ProtocolError):
    """The device has a secret: the request must travel in a session record."""

    status = Status.SESSION_REQUIRED


class UnknownSession(ProtocolError):
    """Session lost: the device does not hold the session (ended, replaced, restarted)."""

    status = Status.UNKNOWN_SESSION


class EntropyFailed(ProtocolError):
    """The device's entropy source has failed: it opens no session."""

    status = Status.ENTROPY_FAILED


class BadCryptogram(ProtocolError):
    """The host cryptogram of a handshake is wrong."""

    status = Status.BAD_CRYPTOGRAM


class SessionExpired(ProtocolError):
    """The session's record counter passed its limit."""

    status = Status.SESSION_EXPIRED


class EntropyUnavailable(ProtocolError):
    """The entropy source is in its start-up or has failed: no random words."""

    status = Status.ENTROPY_UNAVAILABLE


class BadReply(ProtocolError):
    """A reply that does not follow this protocol (found by a host; never sent by a device)."""


class DeviceError(ProtocolError):
    """The device answered with a status other than ``OK``; ``status`` is that status."""


_ERRORS = {cls.status: cls for cls in (
    BadCrc, UnknownCommand, BadLength, BadSlot, KeyNotLoaded, LengthNotMultipleOf16, BadMode,
    BadKeySize, BadOp, BadFlags, ChainNotStarted, ChainMismatch, Busy, BadIv, AuthFailed,
    OutOfOrder, BadChunkOrder, TooLong, SessionRequired, UnknownSession, EntropyFailed,
    BadCryptogram, SessionExpired, EntropyUnavailable)}


def error_for_status(status):
    """Return the :class:`ProtocolError` subclass whose ``status`` is ``status``.

    Parameters
    ----------
    status : Status
        Any status but ``OK``.

    Returns
    -------
    type
        E.g. :class:`BadSlot` for ``Status.BAD_SLOT``.
    """
    status = Status(status)
    if status == Status.OK:
        raise ValueError("Status.OK is not an error")
    return _ERRORS[status]


def check_slot(slot, key_slots, error_cls=BadSlot, allow_all=False):
    """``slot`` if it is a slot number of a device with ``key_slots`` slots (or, with
    ``allow_all``, :data:`~aes_fpga.appliance.spec.ALL_SLOTS`), else ``error_cls`` (by default
    :class:`BadSlot`) saying the range. ``key_slots`` ``None``: the protocol's limit."""
    # key_slots None means "any slot number the protocol allows": the host side does not know
    # the device's slot count unless it asked with INFO.
    limit = MAX_KEY_SLOTS if key_slots is None else key_slots
    if 0 <= slot < limit or (allow_all and slot == ALL_SLOTS):
        return slot
    also = f" or {ALL_SLOTS:#04x} (all slots)" if allow_all else ""
    raise error_cls(f"slot must be in range 0 .. {limit - 1}{also}, got {slot}")

"""``RANDOM`` and ``ENTROPY_RAW`` on the wire, host side (spec "Commands"), and the entropy
source of the reference device: the words and raw samples it gives.

Pure Python, like the rest of the host side: the gateware's source is
:class:`aes_fpga.entropy.EntropySource`; :class:`SourceModel` stands for it in
:class:`~aes_fpga.appliance.reference.DeviceModel`.
"""

from itertools import count as counting

from .. import model
from .errors import BadLength
from .messages import reply_status
from .spec import (
    BLOCK_SIZE,
    RANDOM_REQUEST,
    Status,
    check_bytes,
    check_uint,
    max_random_words,
)

__all__ = ["build_random_request", "parse_random_request", "build_random_reply",
           "parse_random_reply", "SAMPLES_PER_BLOCK", "pack_samples", "unpack_samples",
           "SourceModel"]

#: Raw samples in a 16-byte block of an ``ENTROPY_RAW`` reply.
SAMPLES_PER_BLOCK = 8 * BLOCK_SIZE


def pack_samples(bits):
    """Raw samples (0 or 1 each, a multiple of 8 of them) as ``ENTROPY_RAW`` sends them: 8 a
    byte, the first in the most significant bit."""
    bits = list(bits)
    if len(bits) % 8 or any(b not in (0, 1) for b in bits):
        raise ValueError("samples: a multiple of 8 bits, each 0 or 1, are required")
    return bytes(int("".join(map(str, bits[n:n + 8])), 2) for n in range(0, len(bits), 8))


def unpack_samples(data):
    """The samples of ``ENTROPY_RAW`` bytes, one a byte (0 or 1): the file format NIST's
    ``ea_non_iid`` reads with 1 bit per symbol."""
    return bytes(byte >> (7 - n) & 1 for byte in check_bytes(data, "data") for n in range(8))


def build_random_request(count):
    """The ``RANDOM`` request payload asking for ``count`` 16-byte words (0 .. 255; a device
    takes at most :func:`~.spec.max_random_words` of its max payload)."""
    return RANDOM_REQUEST.pack(check_uint(count, "count", 8))


def parse_random_request(payload, info=None):
    """The count of a ``RANDOM`` request payload: ``BadLength`` unless the payload is one
    byte and the count at most :func:`~.spec.max_random_words` of ``info``'s max payload
    (the protocol's largest without ``info``)."""
    payload = check_bytes(payload, "payload")
    if len(payload) != RANDOM_REQUEST.size:
        raise BadLength(f"RANDOM request payload length must be {RANDOM_REQUEST.size}, got "
                        f"{len(payload)}")
    count, = RANDOM_REQUEST.unpack(payload)
    if info is not None and count > max_random_words(info.max_payload):
        raise BadLength(f"RANDOM count must be in range 0 .. "
                        f"{max_random_words(info.max_payload)} (the device's max payload "
                        f"{info.max_payload}), got {count}")
    return count


def build_random_reply(words):
    """A successful ``RANDOM`` reply payload: ``OK``, then the words (16 bytes each)."""
    words = [check_bytes(w, "word") for w in words]
    if any(len(w) != BLOCK_SIZE for w in words):
        raise ValueError(f"every word must be {BLOCK_SIZE} bytes")
    return bytes([Status.OK]) + b"".join(words)


def parse_random_reply(payload, count, what="RANDOM"):
    """The ``count`` words (16-byte ``bytes`` each) of a ``RANDOM`` reply payload (or, with
    ``what`` ``"ENTROPY_RAW"``, the blocks of packed samples of an ``ENTROPY_RAW`` reply);
    :class:`~.errors.DeviceError` for an error status (``ENTROPY_UNAVAILABLE`` among them),
    ``BadLength`` for a reply of another size."""
    payload = bytes([Status.OK]) + reply_status(payload, what)
    if len(payload) != 1 + BLOCK_SIZE * count:
        raise BadLength(f"{what} reply payload length must be {1 + BLOCK_SIZE * count} "
                        f"({count} blocks), got {len(payload)}")
    return [payload[n:n + BLOCK_SIZE] for n in range(1, len(payload), BLOCK_SIZE)]


class SourceModel:
    """The words the reference device's entropy source gives (its health is the device's
    :attr:`~aes_fpga.appliance.reference.DeviceModel.entropy`, what ``STATS`` reports).

    ``words`` is an iterable of 16-byte words; by default a stand-in that is no source of
    entropy at all: AES-128 under the zero key of the counter 0, 1, 2, ... (deterministic, so
    a test knows what it gets). A test of the gateware gives the words its source's
    conditioning made (:func:`aes_fpga.entropy.conditioning.condition` of the raw samples it
    used).
    """

    def __init__(self, words=None, *, samples=None):
        if words is None:
            words = (model.to_bytes(model.encrypt_block(bytes(BLOCK_SIZE), n))
                     for n in counting())
        if samples is None:
            # (The stand-in's raw samples: the bits of its words after them, most significant
            # first; nothing a real source would give either.)
            samples = (model.encrypt_block(bytes(BLOCK_SIZE), n) >> (127 - k) & 1
                       for n in counting(1 << 64) for k in range(128))
        self._words = iter(words)
        self._samples = iter(samples)
        self.given = 0

    def __repr__(self):
        return f"SourceModel(given={self.given})"

    def take(self, count):
        """The next ``count`` words (``ValueError`` if the iterable runs out: a test gave too
        few)."""
        words = []
        for _ in range(count):
            word = next(self._words, None)
            if word is None:
                raise ValueError(f"the source model ran out of words after {self.given}")
            if len(word) != BLOCK_SIZE:
                raise ValueError(f"a source model's words must be {BLOCK_SIZE} bytes")
            words.append(bytes(word))
            self.given += 1
        return words

    def take_samples(self, count):
        """The next ``count`` raw samples, packed (:func:`pack_samples`); ``count`` a multiple
        of 8."""
        bits = [next(self._samples, None) for _ in range(count)]
        if None in bits:
            raise ValueError("the source model ran out of raw samples")
        return pack_samples(bits)

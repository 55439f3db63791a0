"""COBS (Consistent Overhead Byte Stuffing) for the host and the reference model: see
"Framing" in :mod:`aes_fpga.appliance.spec`.

The host half of one codec: its gateware twin, :mod:`aes_fpga.appliance.gateware.cobs`, has the
same name on purpose (the two are tested against each other)."""

from .errors import CobsError
from .spec import check_bytes

__all__ = [
    "cobs_max_encoded_len",
    "cobs_encode",
    "cobs_decode",
]


# --------------------------------------------------------------------------------------------
# COBS
# --------------------------------------------------------------------------------------------

def cobs_max_encoded_len(n):
    """Return the largest COBS encoding of ``n`` content bytes, delimiter excluded.

    Parameters
    ----------
    n : int
        Content length, ``n >= 0``.

    Returns
    -------
    int
        ``n + max(1, ceil(n / 254))``: one code byte per started 254-byte run, at least one.
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    return n + max(1, -(-n // 254))


#: Largest encoded frame (without its delimiter); the size of a receiver's frame buffer.


def cobs_encode(data):
    """Encode bytes with COBS so that the result contains no zero byte.

    Parameters
    ----------
    data : bytes
        Any content, including empty or all zeros.

    Returns
    -------
    bytes
        The shortest encoding (see the module docstring); no delimiter is appended.
    """
    data = check_bytes(data, "data")
    out = bytearray()
    pieces = data.split(b"\x00")
    last = len(pieces) - 1
    for i, piece in enumerate(pieces):
        pos = 0
        while len(piece) - pos >= 254:
            out.append(0xFF)
            out += piece[pos:pos + 254]
            pos += 254
        tail = piece[pos:]
        # Every piece but the last is followed by a zero, which only a code below 255 can
        # express. The last piece needs a closing group only if it has bytes left over, or is
        # empty altogether (an empty frame still encodes to one group).
        if i != last or tail or pos == 0:
            out.append(len(tail) + 1)
            out += tail
    return bytes(out)


def cobs_decode(data):
    """Decode one COBS-encoded frame (without its delimiter).

    Parameters
    ----------
    data : bytes
        The encoded frame.

    Returns
    -------
    bytes
        The content.

    Raises
    ------
    CobsError
        If ``data`` is empty, contains a zero byte, or its last group is truncated.
    """
    data = check_bytes(data, "data")
    if not data:
        raise CobsError("COBS data is empty; even an empty frame encodes to one byte (0x01)")
    out = bytearray()
    i, n = 0, len(data)
    while i < n:
        code = data[i]
        if code == 0:
            raise CobsError(f"COBS data contains a zero byte at offset {i}")
        end = i + code
        if end > n:
            raise CobsError(f"COBS group at offset {i} announces {code - 1} data bytes, "
                            f"only {n - i - 1} remain")
        group = data[i + 1:end]
        zero = group.find(0)
        if zero >= 0:
            raise CobsError(f"COBS data contains a zero byte at offset {i + 1 + zero}")
        out += group
        i = end
        # A 255-group has no implied zero; neither has the frame's last group.
        if code != 0xFF and i < n:
            out.append(0)
    return bytes(out)

"""GCM messages on the wire, host side (spec "GCM messages"): a message as its ``PROCESS``
requests, and what each reply carries.

A message is a ``FIRST`` chunk carrying J0, the AAD in chunks flagged ``AAD``, the data in
chunks, and a ``LAST`` chunk (empty in an encryption, the expected tag in a decryption). The
``FIRST`` chunk is the first AAD chunk when there is AAD, else the first data chunk. Every chunk
of a kind but its last is ``chunk_size`` bytes, a multiple of 16, as the device requires.
"""

from .. import gcm_model
from .messages import build_process_request, parse_process_reply, parse_status_reply
from .spec import (
    BLOCK_SIZE,
    FLAG_AAD,
    FLAG_FIRST,
    FLAG_LAST,
    GCM_MAX_AAD_BYTES,
    GCM_MAX_DATA_BYTES,
    MAX_PROCESS_DATA,
    PROCESS_HEADER_SIZE,
    Mode,
    Op,
    check_bytes,
    check_enum,
    gcm_pre_counter,
)

__all__ = ["check_gcm_lengths", "build_gcm_requests", "parse_gcm_reply"]


def check_gcm_lengths(aad_bytes, data_bytes):
    """:class:`ValueError` when a message of ``aad_bytes`` of AAD and ``data_bytes`` of data
    passes a limit of the protocol (:data:`~.spec.GCM_MAX_DATA_BYTES`, SP 800-38D's, and
    :data:`~.spec.GCM_MAX_AAD_BYTES`, the device's AAD counter)."""
    if data_bytes > GCM_MAX_DATA_BYTES:
        raise ValueError(f"data: {data_bytes} bytes is over the GCM limit of "
                         f"{GCM_MAX_DATA_BYTES} bytes (SP 800-38D: 2**39 - 256 bits)")
    if aad_bytes > GCM_MAX_AAD_BYTES:
        raise ValueError(f"aad: {aad_bytes} bytes is over the device's GCM AAD limit of "
                         f"{GCM_MAX_AAD_BYTES} bytes")


def build_gcm_requests(slot, op, nonce, aad, data, *, tag=None, chunk_size=MAX_PROCESS_DATA):
    """A whole GCM message as ``PROCESS`` request payloads, in the order they are sent (with
    consecutive ``seq`` values).

    Parameters
    ----------
    slot : int
        Key slot.
    op : Op
        Encrypt or decrypt.
    nonce : bytes
        12 bytes (96-bit IVs only).
    aad, data : bytes
        The additional authenticated data and the plaintext (or ciphertext).
    tag : bytes, optional
        Decryption only, and required there: the expected tag, 12 to 16 bytes.
    chunk_size : int, optional
        Data bytes per chunk: a multiple of 16 (:attr:`~.messages.DeviceInfo.max_chunk`).

    Returns
    -------
    list of bytes
        The payloads; the last is the ``LAST`` chunk.
    """
    op = check_enum(op, "op", Op, ValueError)
    aad, data = check_bytes(aad, "aad"), check_bytes(data, "data")
    if not BLOCK_SIZE <= chunk_size <= MAX_PROCESS_DATA or chunk_size % BLOCK_SIZE:
        raise ValueError(f"chunk_size must be a multiple of {BLOCK_SIZE} in range {BLOCK_SIZE} .. "
                         f"{MAX_PROCESS_DATA}, got {chunk_size}")
    check_gcm_lengths(len(aad), len(data))
    if op == Op.DECRYPT:
        tag = check_bytes(tag, "tag") if tag is not None else None
        if tag is None or not gcm_model.MIN_TAG_BYTES <= len(tag) <= gcm_model.TAG_BYTES:
            raise ValueError(f"tag: a GCM decryption needs the expected tag, "
                             f"{gcm_model.MIN_TAG_BYTES} to {gcm_model.TAG_BYTES} bytes")
    elif tag is not None:
        raise ValueError("tag: an encryption produces the tag; give none")
    iv = gcm_pre_counter(nonce)
    chunks = [(True, aad[s:s + chunk_size]) for s in range(0, len(aad), chunk_size)]
    chunks += [(False, data[s:s + chunk_size]) for s in range(0, len(data), chunk_size)]
    payloads = [build_process_request(slot, op, Mode.GCM, part, first=n == 0, last=False,
                                      iv=iv if n == 0 else None, aad=is_aad)
                for n, (is_aad, part) in enumerate(chunks)]
    payloads.append(build_process_request(slot, op, Mode.GCM, tag or b"", first=not chunks,
                                          last=True, iv=None if chunks else iv))
    return payloads


def parse_gcm_reply(request, reply):
    """What the reply ``reply`` to the GCM request ``request`` (both payloads) carries: a data
    chunk's output, an encryption's 16-byte tag (its ``LAST`` chunk), or ``b""`` (an AAD chunk,
    a decryption's ``LAST`` chunk). A status other than ``OK`` raises
    :class:`~.errors.DeviceError` (``AUTH_FAILED`` for a tag that does not match)."""
    flags, op = request[3], request[1]
    if flags & FLAG_AAD or (flags & FLAG_LAST and op == Op.DECRYPT):
        parse_status_reply(reply)
        return b""
    if flags & FLAG_LAST:
        return parse_process_reply(reply, gcm_model.TAG_BYTES)
    header = PROCESS_HEADER_SIZE + (BLOCK_SIZE if flags & FLAG_FIRST else 0)
    return parse_process_reply(reply, len(request) - header)

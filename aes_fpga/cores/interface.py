"""The stream interface every aes-fpga core implements.

- ``key`` (in): loads a key: ``key`` (256 bits; a 128/192-bit key sits in the most significant
  bits, as FIPS-197 writes it), ``key_bits`` (:class:`KeyBits`) and ``slot``; with ``zeroize``
  set it instead overwrites every round key of ``slot`` with zeros.
- ``i`` (in): requests: ``block`` (128 bits, FIPS-197 byte order: first byte most significant),
  ``op`` (:class:`Op`), key ``slot`` and an opaque ``tag``.
- ``o`` (out): results: ``block`` and the request's ``tag``.

All three are :mod:`amaranth.lib.stream` interfaces (valid/ready, payload held while valid and not
ready). Nothing is dropped; back-pressure on ``o`` stalls acceptance on ``i``.
"""

from amaranth.lib import data

from ..params import KeySize, Op

__all__ = ["Op", "KeyBits", "key_layout", "request_layout", "response_layout",
           "round_key_write_layout", "core_members", "datapath_members", "check_key_sizes",
           "check_core_options"]


#: The key length code of ``key_bits`` is the library's :class:`~aes_fpga.params.KeySize`.
KeyBits = KeySize


def check_key_sizes(key_sizes):
    """``key_sizes`` sorted without repeats, or a ValueError naming it: a core's key lengths
    are a non-empty subset of (128, 192, 256)."""
    sizes = tuple(sorted(set(key_sizes)))
    if not sizes or any(k not in (128, 192, 256) for k in sizes):
        raise ValueError(f"key_sizes: {tuple(key_sizes)!r} is not allowed; choose a non-empty "
                         "subset of (128, 192, 256)")
    return sizes


def check_core_options(component, key_slots, tag_width, fifo_depth, key_sizes):
    """Check a core's common options and return its key sizes, checked; a rejected component
    is marked used, so it does not also warn that it was never elaborated."""
    try:
        if not isinstance(fifo_depth, int) or fifo_depth < 1:
            raise ValueError(f"fifo_depth: {fifo_depth!r} must be an integer of 1 or more")
        request_layout(key_slots, tag_width)
        return check_key_sizes(key_sizes)
    except ValueError:
        component._MustUse__used = True
        raise


def _slot_shape(key_slots):
    if not isinstance(key_slots, int) or not 1 <= key_slots <= 64:
        raise ValueError(f"key_slots: {key_slots!r} is out of range; allowed 1 to 64")
    return range(key_slots)


def key_layout(key_slots):
    return data.StructLayout({"key": 256, "key_bits": KeyBits, "slot": _slot_shape(key_slots),
                              "zeroize": 1})


def request_layout(key_slots, tag_width):
    if not isinstance(tag_width, int) or not 0 <= tag_width <= 64:
        raise ValueError(f"tag_width: {tag_width!r} is out of range; allowed 0 to 64")
    return data.StructLayout({"block": 128, "op": Op, "slot": _slot_shape(key_slots),
                              "tag": tag_width})


def response_layout(tag_width):
    return data.StructLayout({"block": 128, "tag": tag_width})


def round_key_write_layout(key_slots):
    """One 32-bit word of a round key into a core's round-key memory: ``index`` counts round
    keys in order of use for ``op`` (0 = the key added first), ``word`` 0 is the most
    significant word; ``nr`` is the key's round count."""
    return data.StructLayout({"slot": _slot_shape(key_slots), "op": Op, "index": 4, "word": 2,
                              "nr": 4, "key": 32})


def core_members(key_slots, tag_width):
    """The members of a core's signature: ``key``, ``i``, ``o`` and ``key_rejected`` (a
    one-cycle pulse when a key of an unsupported length is consumed and dropped)."""
    from amaranth.lib import stream
    from amaranth.lib.wiring import In, Out
    return {
        "key": In(stream.Signature(key_layout(key_slots))),
        "i": In(stream.Signature(request_layout(key_slots, tag_width))),
        "o": Out(stream.Signature(response_layout(tag_width))),
        "key_rejected": Out(1),
    }


def key_schedule_members(key_slots, writes):
    """The members of a key schedule: ``key`` in, ``writes`` (a dict of the members through
    which it writes round keys), then ``lock``/``lock_slot`` out (the slot being loaded, whose
    requests wait) and ``rejected`` (a one-cycle pulse when a key of an unsupported length is
    consumed and dropped)."""
    from amaranth.lib import stream
    from amaranth.lib.wiring import In, Out
    return {
        "key": In(stream.Signature(key_layout(key_slots))),
        **writes,
        "lock": Out(1),
        "lock_slot": Out(range(key_slots)),
        "rejected": Out(1),
    }


def datapath_members(key_slots, tag_width):
    """The members of a datapath that takes its round keys from a key schedule: ``i``, ``o``,
    the ``rk`` round-key writes, and ``lock``/``lock_slot`` (no request for that slot is
    accepted while ``lock`` is high)."""
    from amaranth.lib import stream
    from amaranth.lib.wiring import In, Out
    return {
        "i": In(stream.Signature(request_layout(key_slots, tag_width))),
        "o": Out(stream.Signature(response_layout(tag_width))),
        "rk": In(stream.Signature(round_key_write_layout(key_slots))),
        "lock": In(1),
        "lock_slot": In(range(key_slots)),
    }

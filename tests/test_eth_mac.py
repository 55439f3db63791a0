# amaranth: UnusedElaboratable=no
"""The MAC: frame receive (SFD, FCS, size and address filters, counters) and transmit
(preamble, padding, FCS), with frames built and parsed by scapy."""

import random

import pytest
from eth_frames import MAC, PEER_MAC, datagram, fcs, on_wire, padded, save_pcap, simulate_frames
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.layers.l2 import Ether

from aes_fpga.appliance.gateware.eth.mac import MACRx, MACTx

COUNTERS = ("runts", "giants", "bad_fcs", "not_ours", "overflows")


def receive(wires, expected, *, seed=1, max_frame=1518):
    """Feed the PHY bytes ``wires`` (one bytes object a frame) to a :class:`MACRx`; return the
    delivered frames and the counters."""
    dut = MACRx(MAC, max_frame=max_frame)
    got, _, values = simulate_frames(dut, wires, rng=random.Random(seed), replies=expected,
                                     counters=COUNTERS)
    return got, values


def test_good_frames_are_delivered_without_fcs():
    frames = [datagram(b"x"), Ether(dst="ff:ff:ff:ff:ff:ff", src=PEER_MAC, type=0x88B5) / (
        b"y" * 50)]
    got, values = receive([on_wire(f) for f in frames], 2)
    assert got == [padded(bytes(f)) for f in frames]
    assert values == dict.fromkeys(COUNTERS, 0)
    save_pcap("mac_rx_good", got)


BAD = {
    "bad_fcs": on_wire(datagram(b"z"), good_fcs=False),
    "runts": on_wire(b"\x02\x00\x00\x00\x00\x01" + bytes(40), pad=False),
    "giants": on_wire(bytes(datagram(bytes(100)))[:97], pad=False),
    "not_ours": on_wire(Ether(dst="02:00:00:00:00:02", src=PEER_MAC) / datagram(b"q")[1]),
}


def test_bad_frames_are_dropped_and_counted():
    # Each bad frame followed by a good one, in one simulation. The size limit is 100 here
    # (101 bytes with the FCS is a giant), to keep the test short; test_sizes_at_the_limits
    # checks the real one.
    wires, good = [], []
    for n, wire in enumerate(BAD.values()):
        good.append(datagram(bytes([n])))
        wires += [wire, on_wire(good[-1])]
    got, values = receive(wires, len(good), max_frame=100)
    assert got == [padded(bytes(g)) for g in good]
    assert values == {**dict.fromkeys(COUNTERS, 0), **dict.fromkeys(BAD, 1)}


@pytest.mark.slow
def test_sizes_at_the_limits():
    # 64 and 1518 bytes with the FCS are allowed, 1519 is a giant.
    smallest = padded(bytes(datagram()))
    largest = bytes(datagram(bytes(1518 - 4 - 42)))
    assert len(largest) == 1514
    got, values = receive([on_wire(smallest), on_wire(largest), on_wire(largest + b"!"),
                           on_wire(smallest)], 3)
    assert got == [smallest, largest, smallest]
    assert values == {**dict.fromkeys(COUNTERS, 0), "giants": 1}


def test_identity_is_checked():
    with pytest.raises(ValueError, match="mac: 'nope'"):
        MACRx("nope")
    with pytest.raises(ValueError, match="group"):
        MACRx("01:00:5e:00:00:01")
    with pytest.raises(ValueError, match="max_frame: 10 "):
        MACRx(MAC, max_frame=10)


def test_preamble_of_any_length_and_junk_before_the_sfd():
    frames = [datagram(b"1"), datagram(b"2")]
    junk = b"\x55\x55\x12" + on_wire(datagram(b"junk"))[3:]   # no SFD after the junk byte
    got, values = receive([on_wire(frames[0], preamble=1), junk, on_wire(frames[1], preamble=0)],
                          2)
    assert got == [padded(bytes(f)) for f in frames]
    assert values == dict.fromkeys(COUNTERS, 0)


def transmit(frames, seed=2):
    dut = MACTx()
    got, _, _ = simulate_frames(dut, frames, rng=random.Random(seed), replies=len(frames))
    return got


def test_transmit_adds_preamble_padding_and_fcs():
    frames = [bytes(datagram(b"a")), bytes(datagram(bytes(range(100))))]
    got = transmit(frames)
    for frame, wire in zip(frames, got, strict=True):
        assert wire[:8] == b"\x55" * 7 + b"\xd5"
        body = padded(frame)
        assert wire[8:] == body + fcs(body)
        assert Ether(wire[8:-4]) == Ether(body)
    save_pcap("mac_tx", [g[8:] for g in got])


KINDS = {
    "good": lambda data: on_wire(datagram(data)),
    "broadcast": lambda data: on_wire(Ether(dst="ff:ff:ff:ff:ff:ff", src=PEER_MAC) / data),
    "bad_fcs": lambda data: on_wire(datagram(data), good_fcs=False),
    "runts": lambda data: on_wire(bytes(datagram(data))[:59], pad=False),
    "not_ours": lambda data: on_wire(Ether(dst="02:00:00:00:00:09", src=PEER_MAC) / data),
}


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(sorted(KINDS)), st.binary(max_size=80),
                          st.integers(0, 9)), min_size=1, max_size=8),
       st.integers(0, 1000))
def test_random_frame_streams(frames, seed):
    wires, expect, counts = [], [], dict.fromkeys(COUNTERS, 0)
    for kind, data, preamble in frames:
        wire = KINDS[kind](data)
        wires.append(wire[7 - preamble:] if preamble < 7 else wire)
        if kind in ("good", "broadcast"):
            expect.append(wire[8:-4])
        else:
            counts[kind] += 1
    got, values = receive(wires, len(expect), seed=seed)
    assert got == expect
    assert values == counts

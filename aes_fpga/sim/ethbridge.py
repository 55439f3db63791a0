"""The Ethernet appliance in simulation, at the MII nibble (or RMII dibit) level, as a link of
whole frames.

:class:`MiiBridge` (gateware, for simulation only) puts an
:class:`~aes_fpga.appliance.gateware.eth_appliance.EthernetAppliance` behind a byte stream that
:mod:`aes_fpga.sim.cxxsim` can run: Ethernet frames (destination MAC to FCS) go in and come out
COBS-encoded on the way in (:func:`encode`) and *escaped* on the way out (:func:`escape`),
each ended by ``0x00``; the bridge drives the appliance's MII
receive pins with preamble, SFD, nibbles and inter-frame gap, and reads its MII transmit pins
back into frames. :class:`FrameLink` is the host side: whole frames in and out, FCS and padding
added and stripped (what a TAP device leaves out).

The MII clocks are the simulation's clock: a nibble a cycle each way, so the protocol layers
(a byte a cycle) run at twice the byte rate, the least the MII layer needs. On RMII the 50 MHz
reference clock is: a dibit a cycle, the protocol layers at four times the byte rate. On RGMII
at 1000 Mbit/s every clock is the simulation's (``sync``, the PHY's receive clock and the
125 MHz transmit clock): a byte a cycle each way, the protocol layers at the byte rate; the
DDR registers' falling edges need the compiled simulator's falling-edge evaluation
(``open_device(falling_edge=True)``).
"""

import time
import zlib

from amaranth.hdl import (
    Cat,
    ClockDomain,
    ClockSignal,
    Const,
    EnableInserter,
    Module,
    Mux,
    ResetSignal,
    Signal,
)
from amaranth.lib import fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from ..appliance.cobs import cobs_encode
from ..appliance.gateware.cobs import CobsDecoder
from ..primitives import DDRInput

__all__ = ["MiiBridge", "encode", "escape", "unescape", "FrameLink", "fcs", "SimUdpLink",
           "open_frame_link", "sim_ethernet_appliance", "udp_frame", "parse_udp_frame",
           "RGMII_CLOCK_MHZ", "OUTBOX_DEPTH", "FIRST_SYMBOL_DELAY"]

#: Cycles from a frame's last byte into :class:`MiiBridge` (through its COBS decoder) to its
#: preamble's first symbol on the PHY pins.
FIRST_SYMBOL_DELAY = 3

#: Entries of :class:`MiiBridge`'s transmit FIFO (bytes, and frame ends, waiting for the host).
OUTBOX_DEPTH = 16384

#: Escape byte: ``ESC 0x01`` stands for ``0x00``, ``ESC 0x02`` for ``ESC``; ``0x00`` ends a frame.
ESC = 0xDB


def encode(frame):
    """``frame`` COBS-encoded and ended by ``0x00``, as :class:`MiiBridge` takes it."""
    return cobs_encode(frame) + b"\0"


def escape(frame):
    """``frame`` escaped and ended by ``0x00``, as :class:`MiiBridge` gives it."""
    return frame.replace(bytes([ESC]), bytes([ESC, 2])).replace(b"\0", bytes([ESC, 1])) + b"\0"


def unescape(data):
    """The frame of :func:`escape`'s output (without its final ``0x00``)."""
    return data.replace(bytes([ESC, 1]), b"\0").replace(bytes([ESC, 2]), bytes([ESC]))


def fcs(frame):
    """The Ethernet FCS of ``frame`` (CRC-32, least significant byte first)."""
    return (zlib.crc32(frame) & 0xFFFFFFFF).to_bytes(4, "little")


#: Cycles a simulated appliance runs on with no byte on the pins before it waits for the host
#: (``quiet_cycles`` of :func:`~aes_fpga.sim.cxxsim.open_device`): more than the longest
#: silence a request makes. A 1440-byte CBC encryption with AES-256, one core latency a block,
#: is about 19,000 cycles of silence; a session's record of that size far less (its
#: AES-256-GCM runs a byte a cycle), but a secured build's first handshakes wait for the
#: entropy source's start-up tests.
QUIET_CYCLES, QUIET_CYCLES_SECURED = 100_000, 400_000


class MiiBridge(wiring.Component):
    """COBS-encoded frames on ``rx`` (:func:`encode`) into an Ethernet appliance's receive
    pins; its transmit pins back into escaped frames on ``tx`` (:func:`escape`; simulation
    only). MII (a nibble a clock, ``rx_dv``),
    RMII (a dibit a clock, ``crs_dv``) or RGMII at 1000 Mbit/s (a byte a clock, a nibble on
    each edge; the in-band status says link up, 1000 Mbit/s, full duplex between frames), as
    the appliance was built; its PHY clocks (``rx_clk`` and ``tx_clk``, ``ref_clk``, or
    ``rx_clk`` and ``clk125``) are driven by ``sync``.

    Receive: a frame is stored whole (``depth`` entries, a byte or a frame end each) before it
    goes out with preamble and SFD, low bits first, so a slow writer never leaves a gap
    mid-frame; frames waiting go out back to back with the 12-byte inter-frame gap; ``rx``
    waits while the buffer is full. Transmit: the symbols after the SFD while ``tx_en`` is
    high, gathered into bytes and escaped; ``tx`` must take a byte a cycle (a FIFO of
    :data:`OUTBOX_DEPTH` entries absorbs stalls, and the escapes' growth over long runs).

    Parameters
    ----------
    appliance : EthernetAppliance
        With ``phy="mii"`` or ``phy="rmii"`` (100 Mbit/s), or ``phy="rgmii"`` (at its
        in-band status's speed, or 1000 Mbit/s fixed).
    depth : int
        Receive buffer entries (a power of two, above the longest frame encoded).
    core_share : tuple of int
        For an appliance with a ``core_domain``: that domain runs on ``sync``'s clock with an
        enable high ``core_share[0]`` cycles of every ``core_share[1]``, a core clock that
        fraction of ``sync``'s (``(4, 5)``: 100 MHz beside RGMII's 125 MHz), its crossings
        included.
    """

    rx: In(stream.Signature(8))
    tx: Out(stream.Signature(8))

    def __init__(self, appliance, *, depth=4096, core_share=(4, 5)):
        phy, speed = appliance.stack.phy, appliance.stack.speed
        # (MII has no speed of its own, None: the PHY's clocks set it, 100 Mbit/s here)
        if not ((phy in ("mii", "rmii") and speed in (None, 100))
                or (phy == "rgmii" and speed in ("auto", 1000))):
            raise ValueError("MiiBridge: the appliance must have phy='mii' or phy='rmii' at "
                             "100 Mbit/s, or phy='rgmii' at 1000 Mbit/s")
        self.appliance = appliance
        self.phy = phy
        #: Bits a clock on the pins (RGMII: a nibble on each edge).
        self.width = {"mii": 4, "rmii": 2, "rgmii": 8}[phy]
        self.depth = depth
        share, period = core_share
        if not 0 < share <= period:
            raise ValueError(f"core_share: {core_share!r} is not a fraction in (0, 1]")
        self.core_share = core_share
        self.sim_quiet_cycles = QUIET_CYCLES_SECURED if appliance.info.sessions else QUIET_CYCLES
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        dut = self.appliance
        if dut.core_domain is None:
            m.submodules.appliance = dut
        else:
            m.submodules.appliance = self._core_clock(m, dut)
        width = self.width
        per_byte = 8 // width
        rx_valid, rxd = Signal(), Signal(width)
        tx_en, txd = Signal(), Signal(width)
        if self.phy == "mii":
            m.d.comb += [dut.rx_clk.eq(ClockSignal()), dut.tx_clk.eq(ClockSignal()),
                         dut.rx_dv.eq(rx_valid), dut.rxd.eq(rxd),
                         tx_en.eq(dut.tx_en), txd.eq(dut.txd)]
        elif self.phy == "rmii":
            m.d.comb += [dut.ref_clk.eq(ClockSignal()), dut.crs_dv.eq(rx_valid),
                         dut.rxd.eq(rxd), tx_en.eq(dut.tx_en), txd.eq(dut.txd)]
        else:
            self._rgmii_pins(m, dut, rx_valid, rxd, tx_en, txd)
        # Preamble and SFD: 0x55 seven times, then 0xD5, low bits first; all but the SFD's
        # last symbol are 0b0101... and that one has its top bit set too.
        preamble = 8 * per_byte - 1
        filler = 0x55 & ((1 << width) - 1)
        sfd = filler | 1 << (width - 1)
        ifg = 12 * per_byte

        # ---- host to PHY ----------------------------------------------------------------
        # COBS, not the escapes of the way out: a frame grows by a byte in 254, where escapes
        # add one for each 0x00 (headers have many) and 0xDB, so that at RGMII's byte a cycle
        # the host's bytes (one a cycle too) would fall behind the line.
        m.submodules.inbox = inbox = fifo.SyncFIFO(width=9, depth=self.depth)
        frames = Signal(range(self.depth + 1))      # frame ends in the inbox
        m.submodules.decoder = decoder = CobsDecoder(max_encoded=self.depth)
        wiring.connect(m, wiring.flipped(self.rx), decoder.i)
        beat = decoder.o.payload
        m.d.comb += [decoder.o.ready.eq(inbox.w_rdy), inbox.w_en.eq(decoder.o.valid),
                     inbox.w_data.eq(Mux(beat.end, 1 << 8, beat.data))]
        entry_end = inbox.r_data[8]
        ended = inbox.w_en & inbox.w_data[8]
        read_end = inbox.r_en & entry_end
        m.d.sync += frames.eq(frames + ended - read_end)

        count = Signal(range(max(preamble, ifg) + 1))
        index = Signal(range(per_byte))             # the symbol of the byte going out
        with m.FSM():
            with m.State("IDLE"):
                with m.If(frames != 0):
                    m.d.sync += count.eq(0)
                    m.next = "PREAMBLE"
            with m.State("PREAMBLE"):
                m.d.sync += [rx_valid.eq(1), rxd.eq(filler), count.eq(count + 1)]
                with m.If(count == preamble):
                    m.d.sync += [rxd.eq(sfd), index.eq(0)]
                    m.next = "DATA"
            with m.State("DATA"):
                with m.If(entry_end):
                    m.d.comb += inbox.r_en.eq(1)
                    m.d.sync += [rx_valid.eq(0), rxd.eq(0), count.eq(0)]
                    m.next = "GAP"
                with m.Else():
                    m.d.sync += [rx_valid.eq(1),
                                 rxd.eq(inbox.r_data[:8].word_select(index, width)),
                                 index.eq(Mux(index == per_byte - 1, 0, index + 1))]
                    m.d.comb += inbox.r_en.eq(index == per_byte - 1)
            with m.State("GAP"):
                # The receive valid pin is low for exactly the inter-frame gap between frames
                # sent back to back: the cycles here, IDLE's and PREAMBLE's first (whose
                # valid takes effect a cycle later).
                m.d.sync += count.eq(count + 1)
                with m.If(count == ifg - 3):
                    m.next = "IDLE"

        # ---- PHY to host ----------------------------------------------------------------
        # Entries: a byte, or a frame's end (bit 8); escaped as they are read, so that a byte
        # a cycle goes in even when each needs two out. Escaped, a full-sized reply is a byte
        # or two longer than the byte times it takes on the wire with its gap (at RGMII's byte
        # a cycle, replies back to back): the outbox holds that backlog, for about 8000 of
        # them. (COBS would not grow, but would hold a frame's end back by its last group.)
        m.submodules.outbox = outbox = fifo.SyncFIFO(width=9, depth=OUTBOX_DEPTH)
        out_byte, out_end = outbox.r_data[:8], outbox.r_data[8]
        special = ~out_end & ((out_byte == 0) | (out_byte == ESC))
        second = Signal()           # the escape's second byte is due
        m.d.comb += [self.tx.valid.eq(outbox.r_rdy),
                     self.tx.payload.eq(Mux(out_end, 0, Mux(special, Mux(
                         second, (out_byte == ESC) + 1, ESC), out_byte))),
                     outbox.r_en.eq(self.tx.ready & (~special | second))]
        with m.If(self.tx.valid & self.tx.ready & special):
            m.d.sync += second.eq(~second)
        in_frame = Signal()
        phase = Signal(range(per_byte))     # symbols of the byte so far
        low = Signal(8 - width)             # those symbols, the first in the low bits
        end_due = Signal()
        got = Signal(8)
        got_valid = Signal()
        m.d.comb += got.eq(Cat(low, txd))
        with m.If(~in_frame):
            with m.If(tx_en & (txd == sfd)):
                m.d.sync += [in_frame.eq(1), phase.eq(0)]
        with m.Elif(tx_en):
            m.d.sync += phase.eq(Mux(phase == per_byte - 1, 0, phase + 1))
            with m.If(phase != per_byte - 1):
                m.d.sync += low.eq(Cat(low, txd)[width:])
            with m.Else():
                m.d.comb += got_valid.eq(1)
        with m.Else():
            m.d.sync += [in_frame.eq(0), end_due.eq(1)]

        with m.If(got_valid):
            m.d.comb += [outbox.w_en.eq(1), outbox.w_data.eq(got)]
        with m.Elif(end_due):
            m.d.comb += [outbox.w_en.eq(1), outbox.w_data.eq(1 << 8)]
            m.d.sync += end_due.eq(0)
        return m

    def _core_clock(self, m, dut):
        """The appliance with its core domain on ``sync``'s clock and reset, enabled
        ``core_share`` of the cycles (evenly spread: an accumulator)."""
        share, period = self.core_share
        m.domains += ClockDomain(dut.core_domain, local=True)
        m.d.comb += [ClockSignal(dut.core_domain).eq(ClockSignal()),
                     ResetSignal(dut.core_domain).eq(ResetSignal())]
        acc = Signal(range(period))
        tick = acc + share >= period
        m.d.sync += acc.eq(Mux(tick, acc + share - period, acc + share))
        return EnableInserter({dut.core_domain: tick})(dut)

    @staticmethod
    def _rgmii_pins(m, dut, rx_valid, rxd, tx_en, txd):
        """The RGMII pins at 1000 Mbit/s from and to byte-wide symbols, every clock ``sync``'s.

        Receive: the symbol ``rxd`` set at a rising edge goes out as its low nibble from the
        falling edge after it (which the appliance samples at the next rising edge) and its
        high nibble from that rising edge on (sampled at the falling one), RX_CTL high on both
        halves with ``rx_valid``; between frames, the in-band status on both. Each pin is the
        XOR of a rising- and a falling-edge register (as the DDR output model's), so no
        register samples a pin at an edge where it changes. Transmit: the pins through a DDR
        input register: its rising-edge sample is the second half of a clock period, the
        falling-edge one the first half of the next; a byte a cycle."""
        status = Const(0b1101, 4)                   # link up, 1000 Mbit/s, full duplex
        fall = ClockDomain("bridge_fall", clk_edge="neg", reset_less=True, local=True)
        m.domains += fall
        m.d.comb += fall.clk.eq(ClockSignal())
        rise_r, fall_r = Signal(5), Signal(5)
        lo = Cat(Mux(rx_valid, rxd[:4], status), rx_valid)
        hi = Cat(Mux(rx_valid, rxd[4:], status), rx_valid)
        m.d.bridge_fall += fall_r.eq(lo ^ rise_r)
        m.d.sync += rise_r.eq(hi ^ fall_r)
        m.d.comb += [dut.rx_clk.eq(ClockSignal()), dut.clk125.eq(ClockSignal()),
                     Cat(dut.rxd, dut.rx_ctl).eq(rise_r ^ fall_r)]
        m.submodules.tx_pins = pins = DDRInput(5)
        second = Signal(4)
        m.d.sync += second.eq(pins.q1[:4])
        m.d.comb += [pins.d.eq(Cat(dut.txd, dut.tx_ctl)),
                     txd.eq(Cat(second, pins.q0[:4])), tx_en.eq(pins.q0[4])]


class FrameLink:
    """Whole Ethernet frames to and from a simulated :class:`MiiBridge` (a
    :class:`~aes_fpga.sim.cxxsim.ByteLink`): :meth:`send` pads a frame to 60 bytes and adds its
    FCS (as a TAP device leaves them out), :meth:`recv` returns the next frame with a good FCS,
    FCS stripped (``None`` after ``timeout`` seconds without one)."""

    def __init__(self, link):
        self.link = link
        self.bad_fcs = 0
        self._buf = bytearray()

    def send(self, frame):
        frame = bytes(frame).ljust(60, b"\0")
        self.link.write(encode(frame + fcs(frame)))

    def recv(self, timeout=1.0):
        deadline = time.monotonic() + timeout
        while True:
            end = self._buf.find(b"\0")
            if end >= 0:
                raw = unescape(bytes(self._buf[:end]))
                del self._buf[:end + 1]
                if len(raw) >= 64 and fcs(raw[:-4]) == raw[-4:]:
                    return raw[:-4]
                self.bad_fcs += 1
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self._buf += self.link.read_until(b"\0", timeout=left)

    def close(self):
        self.link.close()


#: Addresses of the simulated Ethernet appliance and of the host beside it.
SIM_MAC = "02:00:00:ae:50:01"
SIM_IP = "10.0.0.2"
SIM_PORT = 7001
HOST_MAC = "02:00:00:00:00:01"
HOST_IP = "10.0.0.1"


#: RGMII's byte clock at 1000 Mbit/s, MHz: the simulated Gigabit appliance's ``sync``.
RGMII_CLOCK_MHZ = 125


def sim_ethernet_appliance(key_slots=4, phy="mii", core_mhz=RGMII_CLOCK_MHZ):
    """The simulated Ethernet appliance (:class:`MiiBridge` around an
    :class:`~aes_fpga.appliance.gateware.eth_appliance.EthernetAppliance` with :data:`SIM_MAC`,
    :data:`SIM_IP`, :data:`SIM_PORT`, on ``phy``, with GCM as ``--port sim`` has it,
    :data:`~aes_fpga.sim.link.SIM_GCM`) and its name for the simulator cache: ``(make, key)``.
    On RGMII (1000 Mbit/s) with ``core_mhz`` (whole MHz) below :data:`RGMII_CLOCK_MHZ` the core
    runs in a domain of its own at that clock, behind
    :class:`~aes_fpga.appliance.gateware.core_domain.CoreDomain` (as a board whose core
    closes timing below 125 MHz builds it); else in ``sync`` with the rest."""
    from .link import SIM_GCM
    if not isinstance(core_mhz, int) or not 0 < core_mhz:
        raise ValueError(f"core_mhz: {core_mhz!r} is not a whole number of MHz above 0")
    core_domain = "core" if phy == "rgmii" and core_mhz < RGMII_CLOCK_MHZ else None
    share = (core_mhz, RGMII_CLOCK_MHZ) if core_domain else (1, 1)

    def make():
        from ..appliance.gateware.eth_appliance import EthernetAppliance
        return MiiBridge(EthernetAppliance(mac=SIM_MAC, ip=SIM_IP, udp_port=SIM_PORT,
                                           key_slots=key_slots, phy=phy, gcm=SIM_GCM,
                                           core_domain=core_domain), core_share=share)

    return make, f"MiiBridge(EthernetAppliance({SIM_MAC}, {SIM_IP}, {SIM_PORT}, " \
                  f"key_slots={key_slots}, phy={phy}, gcm={SIM_GCM}, " \
                  f"core_domain={core_domain}), core_share={share})"


def open_frame_link(key_slots=4, engine="auto", phy="mii"):
    """A :class:`FrameLink` to a fresh simulation of :func:`sim_ethernet_appliance`."""
    from .cxxsim import open_device
    make, key = sim_ethernet_appliance(key_slots, phy)
    return FrameLink(open_device(make, engine=engine, cache_key=key, quiet_cycles=QUIET_CYCLES))


def _mac(text):
    return bytes(int(part, 16) for part in text.split(":"))


def _ip(text):
    return bytes(int(part) for part in text.split("."))


def _checksum(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(int.from_bytes(data[n:n + 2], "big") for n in range(0, len(data), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def udp_frame(payload, *, src_mac, dst_mac, src_ip, dst_ip, sport, dport, ident=0):
    """An Ethernet frame (no FCS) carrying ``payload`` in an IPv4 UDP datagram, checksums
    filled in."""
    length = 8 + len(payload)
    pseudo = _ip(src_ip) + _ip(dst_ip) + bytes([0, 17]) + length.to_bytes(2, "big")
    udp = sport.to_bytes(2, "big") + dport.to_bytes(2, "big") + length.to_bytes(2, "big")
    checksum = _checksum(pseudo + udp + b"\0\0" + payload) or 0xFFFF
    udp += checksum.to_bytes(2, "big") + payload
    ip = bytes([0x45, 0]) + (20 + length).to_bytes(2, "big") + ident.to_bytes(2, "big") \
        + bytes([0x40, 0, 64, 17, 0, 0]) + _ip(src_ip) + _ip(dst_ip)
    ip = ip[:10] + _checksum(ip).to_bytes(2, "big") + ip[12:]
    return _mac(dst_mac) + _mac(src_mac) + b"\x08\x00" + ip + udp


def parse_udp_frame(frame):
    """``(src_ip, sport, dport, payload)`` of an IPv4 UDP frame (no FCS), else ``None``."""
    if len(frame) < 42 or frame[12:14] != b"\x08\x00" or frame[14] != 0x45 or frame[23] != 17:
        return None
    total = int.from_bytes(frame[16:18], "big")
    ulen = int.from_bytes(frame[38:40], "big")
    if ulen < 8 or 20 + ulen > total or 14 + total > len(frame):
        return None
    src_ip = ".".join(str(b) for b in frame[26:30])
    return (src_ip, int.from_bytes(frame[34:36], "big"), int.from_bytes(frame[36:38], "big"),
            bytes(frame[42:34 + ulen]))


class SimUdpLink:
    """The simulated Ethernet appliance as a datagram link (for
    :class:`~aes_fpga.appliance.udp_client.UdpDevice`): each datagram goes out in a UDP frame from
    :data:`HOST_MAC`/:data:`HOST_IP` port ``sport`` to the appliance, and the UDP payloads of
    the frames it sends back to that port are received (everything else is ignored)."""

    datagrams = True

    def __init__(self, frames=None, *, sport=40000, key_slots=4, engine="auto"):
        self.frames = frames or open_frame_link(key_slots, engine)
        self.sport = sport
        self.name = f"udp://{SIM_IP}:{SIM_PORT} (simulated over MII)"
        self._ident = 0

    def send(self, datagram):
        self._ident = (self._ident + 1) & 0xFFFF
        self.frames.send(udp_frame(datagram, src_mac=HOST_MAC, dst_mac=SIM_MAC, src_ip=HOST_IP,
                                   dst_ip=SIM_IP, sport=self.sport, dport=SIM_PORT,
                                   ident=self._ident))

    def recv(self, timeout):
        deadline = time.monotonic() + timeout
        while True:
            frame = self.frames.recv(max(0.0, deadline - time.monotonic()))
            if frame is None:
                return None
            got = parse_udp_frame(frame)
            if got is not None and got[0] == SIM_IP and got[1:3] == (SIM_PORT, self.sport):
                return got[3]

    def close(self):
        self.frames.close()

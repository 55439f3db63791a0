"""Host side of the appliance over UDP (spec "Transport over UDP"): a datagram link and the
device driver that makes every request idempotent and retransmits what gets no answer. (The
device's side is :mod:`aes_fpga.appliance.gateware.eth_appliance` over the gateware UDP layer
:mod:`aes_fpga.appliance.gateware.eth.udp`.)

- :class:`UdpLink`: a kernel UDP socket to ``ADDR:PORT``;
- :class:`UdpDevice`: :class:`~aes_fpga.appliance.client.Device` over any datagram link
  (``send(datagram)``, ``recv(timeout)``, ``name``, ``close()``; for example :class:`UdpLink`
  or :class:`aes_fpga.sim.ethbridge.SimUdpLink`);
- :func:`independent_requests`: a message as ``PROCESS`` chunks that each carry their own IV
  or counter, so a chunk sent twice is answered twice the same.
"""

import itertools
import random
import socket
import time
from collections import deque

from .client import Device, DeviceTimeout, LinkError
from .errors import ChainMismatch, ChainNotStarted, OutOfOrder, error_for_status
from .frame import decode_frame, frame_content
from .messages import build_process_request
from .session_spec import command_name
from .spec import BLOCK_SIZE, Command, Mode, Op, Status, describe, reply_opcode

__all__ = ["UdpLink", "UdpDevice", "independent_requests", "parse_udp_address",
           "DEFAULT_UDP_PORT"]

#: The UDP port the appliance listens on unless told otherwise.
DEFAULT_UDP_PORT = 7001


def parse_udp_address(text):
    """``(host, port)`` of ``udp://ADDR[:PORT]`` (``ADDR`` a name or IPv4 address)."""
    if not text.startswith("udp://"):
        raise ValueError(f"not a UDP address: {text!r} (expected udp://ADDR[:PORT])")
    host, _, port = text[len("udp://"):].partition(":")
    if not host:
        raise ValueError(f"{text!r}: no address (expected udp://ADDR[:PORT])")
    try:
        port = int(port) if port else DEFAULT_UDP_PORT
    except ValueError:
        raise ValueError(f"{text!r}: the port is not a number") from None
    if not 1 <= port <= 65535:
        raise ValueError(f"{text!r}: the port must be in range 1 .. 65535")
    return host, port


class UdpLink:
    """A UDP socket connected to the appliance at ``host:port``: one datagram a request."""

    datagrams = True

    def __init__(self, host, port=DEFAULT_UDP_PORT):
        self.name = f"udp://{host}:{port}"
        try:
            self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self._sock.connect((host, port))
        except OSError as e:
            raise LinkError(f"cannot open {self.name}: {e}") from None

    def send(self, datagram):
        try:
            self._sock.send(datagram)
        except OSError as e:
            # An ICMP error from an earlier datagram (port unreachable) surfaces here or in
            # recv; either way the request is retransmitted or times out.
            if not isinstance(e, ConnectionRefusedError):
                raise LinkError(f"cannot send to {self.name}: {e}") from None

    def recv(self, timeout):
        self._sock.settimeout(max(timeout, 1e-3))
        try:
            return self._sock.recv(65536)
        except (TimeoutError, ConnectionRefusedError):
            return None

    def close(self):
        self._sock.close()


def independent_requests(slot, op, mode, data, *, iv=None, chunk_size):
    """A message as ``PROCESS`` payloads that are each a whole message (``FIRST`` and ``LAST``,
    with the IV or counter the chunk starts from), so they may be sent, lost, repeated and
    answered in any order. ECB: zeros; CTR: the counter advanced by the blocks before the
    chunk; CBC decryption: the ciphertext block before the chunk. CBC *encryption* is not
    covered (its chunk's IV is the previous chunk's output): see :meth:`UdpDevice.process`.

    Returns a list of payloads (one, with empty data, for an empty message)."""
    op, mode = Op(op), Mode(mode)
    if mode == Mode.GCM:
        raise ValueError("a GCM message cannot be cut into whole messages (its GHASH state "
                         "stays in the device): use UdpDevice.gcm_encrypt / gcm_decrypt")
    if mode == Mode.CBC and op == Op.ENCRYPT:
        raise ValueError("CBC encryption chains through the device's output; send it chunk "
                         "by chunk (UdpDevice.process does)")
    iv = bytes(BLOCK_SIZE) if iv is None else bytes(iv)
    counter = int.from_bytes(iv, "big")
    out = []
    for start in range(0, max(len(data), 1), chunk_size):
        if mode == Mode.CTR:
            chunk_iv = ((counter + start // BLOCK_SIZE) % (1 << 128)).to_bytes(16, "big")
        elif mode == Mode.CBC:
            chunk_iv = iv if start == 0 else data[start - BLOCK_SIZE:start]
        else:
            chunk_iv = bytes(BLOCK_SIZE)
        out.append(build_process_request(slot, op, mode, data[start:start + chunk_size],
                                         first=True, last=True, iv=chunk_iv))
    return out


class UdpDevice(Device):
    """The appliance over a datagram link (spec "Transport over UDP").

    Every request goes out as one datagram (:func:`~aes_fpga.appliance.frame.frame_content`
    without the CRC);
    a request without an answer after ``timeout`` seconds is sent again with the same ``seq``,
    up to ``retries`` times, then :class:`~aes_fpga.appliance.client.DeviceTimeout` names the
    link's address. Replies are matched by ``seq`` (one reply a ``seq`` taken, duplicates and
    strays ignored) and delivered in request order; up to the device's window are unanswered
    at once.

    Every ECB, CBC or CTR ``PROCESS`` request is a whole message (:func:`independent_requests`),
    so a repeated request is answered the same and the result is exact whatever the network
    loses, duplicates or reorders; CBC encryption sends each chunk once the previous reply has
    given its IV.

    A GCM message is one message of chunks with consecutive seqs (its GHASH state stays in the
    device); the device's kept replies answer a retransmitted chunk without processing it
    again. A chunk answered ``OUT_OF_ORDER`` (it overtook one before it) is sent again once
    every chunk before it is answered. When the device has lost the message (a stray old
    ``FIRST`` chunk started another one: ``OUT_OF_ORDER`` again with nothing before it
    unanswered, ``CHAIN_NOT_STARTED``, ``CHAIN_MISMATCH``) the whole message is sent again with
    new seqs, up to ``retries`` times (:attr:`restarts` counts them); its result is the same.
    """

    def __init__(self, link, *, timeout=0.5, retries=8, device_key=None):
        super().__init__(link, timeout=timeout, device_key=device_key)
        self.retries = retries
        self.retransmissions = 0
        #: GCM messages sent again from their FIRST chunk (the device had lost them).
        self.restarts = 0
        # A random start: replies to an earlier run's requests do not match this run's.
        self._seq_next = random.randrange(1 << 16)

    def _next_seq(self):
        self._seq_next = (self._seq_next + 1) & 0xFFFF
        return self._seq_next

    def request(self, command, payload=b""):
        return self._exchange(command, [payload], 1)[0]

    def pipeline(self, command, payloads, on_reply=None):
        return self._exchange(command, payloads, self.info().window, on_reply)

    def _exchange(self, command, payloads, window, on_reply=None):
        self._ensure_session(command)
        replies = [] if on_reply is None else None
        pending = {}                # seq -> [datagram, deadline, sends, OUT_OF_ORDER answers]
        answered = {}               # seq -> reply payload, not yet delivered
        order = deque()             # seqs in request order, undelivered
        payloads = iter(payloads)
        more = True
        while True:
            # In a session the records in flight span at most the window's counters, so that
            # the device still keeps or accepts the oldest (spec session_spec "Retransmissions").
            while more and len(order if self.session is not None else pending) < window:
                payload = next(payloads, None)
                if payload is None:
                    more = False
                    break
                seq = self._next_seq()
                sealed = (command, payload) if self.session is None else \
                    self.session.seal(command, seq, payload)
                datagram = frame_content(sealed[0], seq, sealed[1], crc=False)
                pending[seq] = [datagram, time.monotonic() + self.timeout, 1, 0]
                order.append(seq)
                self.link.send(datagram)
            while order and order[0] in answered:
                reply = answered.pop(order.popleft())
                if on_reply is None:
                    replies.append(reply)
                else:
                    on_reply(reply)
            if not order:
                if not more:
                    return replies
                # A full window answered at once (its oldest reply last): send the next ones.
                continue
            now = time.monotonic()
            for entry in pending.values():
                if entry[1] <= now:
                    if entry[2] > self.retries:
                        raise DeviceTimeout(
                            f"no reply to {command_name(command)} from {self.link.name} after "
                            f"{entry[2]} attempts of {self.timeout} s each")
                    self.link.send(entry[0])
                    entry[1], entry[2] = now + self.timeout, entry[2] + 1
                    self.retransmissions += 1
            wait = min(entry[1] for entry in pending.values()) - now
            raw = self.link.recv(max(wait, 0))
            if raw is None:
                continue
            try:
                frame = decode_frame(raw, crc=False)
            except ValueError:
                continue        # damaged on the way: the request is sent again
            if self.session is not None:
                frame = self.session.open(frame)
                if frame is None:
                    continue    # not sealed by the device for this request: ignored
            if frame.seq not in pending or frame.command != reply_opcode(command):
                continue        # a duplicate, or a reply to an earlier run
            status = Status(frame.payload[0]) if frame.payload else None
            if status is Status.OUT_OF_ORDER:
                self._out_of_order(frame.seq, pending, order)
                continue
            del pending[frame.seq]
            self._unblock(pending, order)
            if status is not Status.OK:
                raise error_for_status(status)(
                    f"{command_name(command)}: device answered {status.name}: "
                    f"{describe(status)}", command=command, seq=frame.seq, status=status)
            answered[frame.seq] = frame.payload

    def _out_of_order(self, seq, pending, order):
        """A GCM chunk answered ``OUT_OF_ORDER``: sent again once the chunks before it are
        answered; with none of them unanswered, sent again at once, and when that is answered
        ``OUT_OF_ORDER`` too (it was not a stale reply), the device has lost the message."""
        entry = pending[seq]
        if any(s in pending for s in itertools.takewhile(lambda s: s != seq, order)):
            entry[3] = -1       # blocked until the chunks before it are answered
            return
        entry[3] = max(entry[3], 0) + 1
        if entry[3] > 2:
            raise OutOfOrder(f"PROCESS: {self.link.name} no longer holds the GCM message "
                             f"(seq {seq} answered OUT_OF_ORDER)", seq=seq)
        self._resend(entry)

    def _unblock(self, pending, order):
        # Send the first unanswered chunk again if it was blocked (the later ones wait).
        for seq in order:
            entry = pending.get(seq)
            if entry is None:
                continue
            if entry[3] < 0:
                entry[3] = 0
                self._resend(entry)
            return

    def _resend(self, entry):
        self.link.send(entry[0])
        entry[1] = time.monotonic() + self.timeout
        self.retransmissions += 1

    def _gcm_chunks(self, payloads, take):
        # Replies are handed on only once the whole message has succeeded: a message the
        # device lost is sent again whole, and its first replies must not count twice.
        for _ in range(self.retries + 1):
            try:
                replies = self._exchange(Command.PROCESS, payloads, self.info().window)
            except (OutOfOrder, ChainNotStarted, ChainMismatch):
                self.restarts += 1
                continue
            for reply in replies:
                take(reply)
            return
        raise DeviceTimeout(f"PROCESS: {self.link.name} lost the GCM message "
                            f"{self.retries + 1} times")

    def _process_chunks(self, slot, op, mode, data, iv, chunk, take):
        # Each request carries its own chaining value, so a retransmitted one is idempotent;
        # in CBC encryption that value is the device's last ciphertext block, so those
        # requests go one at a time.
        if mode == Mode.CBC and op == Op.ENCRYPT:
            chain, tail = iv, b""
            for start in range(0, max(len(data), 1), chunk):
                tail = (tail + take(self.request(Command.PROCESS, build_process_request(
                    slot, op, mode, data[start:start + chunk], first=True, last=True,
                    iv=chain))))[-BLOCK_SIZE:]
                if len(tail) == BLOCK_SIZE:
                    chain = tail
        else:
            self.pipeline(Command.PROCESS, independent_requests(
                slot, op, mode, data, iv=iv, chunk_size=chunk), take)

"""Host driver of the AES appliance: one device API over interchangeable links.

- :class:`SerialLink`: a real board on a serial port (pyserial);
- :class:`ModelLink`: :class:`~aes_fpga.appliance.reference.DeviceModel`, the pure-Python
  reference device;
- :class:`aes_fpga.sim.link.SimLink`: the appliance gateware in simulation.

:class:`Device` speaks the protocol of :mod:`aes_fpga.appliance.spec` over any of them: each
reply matched by sequence number, a timeout naming the link when the device does not answer.
The chunks of a message are pipelined: up to the device's window (``INFO``) requests are
unanswered at once, so a serial line carries the next chunk while the device answers the
previous one.

GCM (:meth:`Device.gcm_encrypt`, :meth:`Device.gcm_decrypt`) sends a message's chunks with
consecutive sequence numbers, as the protocol asks (spec "GCM messages"), and holds a
decryption's plaintext back until the device has checked the tag.
"""

import itertools
import sys
import time
from collections import deque

import serial

from .. import gcm_model
from ..model import FIPS197_EXAMPLES
from ..ticker import byte_bar, format_bytes
from .errors import AuthFailed, BadMode, BadReply, error_for_status
from .frame import FrameDecoder, decode_frame, encode_frame, split_through
from .gcm import build_gcm_requests, parse_gcm_reply
from .messages import (
    build_load_key_request,
    build_process_requests,
    build_zeroize_request,
    parse_info_reply,
    parse_process_reply,
    parse_stats_reply,
)
from .random_words import (
    SAMPLES_PER_BLOCK,
    build_random_request,
    parse_random_reply,
    unpack_samples,
)
from .reference import DeviceModel
from .session_host import HostSession
from .session_spec import SESSION_COUNTERS, SessionCommand, command_name
from .spec import (
    ALL_SLOTS,
    ENTROPY_COUNTERS,
    GCM_COUNTERS,
    Command,
    EntropyStatus,
    Mode,
    Op,
    Status,
    describe,
    max_random_words,
    reply_opcode,
)

__all__ = ["LinkError", "DeviceTimeout", "ModelLink", "SerialLink", "Device", "Progress",
           "split_stats"]


class LinkError(RuntimeError):
    """The link could not be opened or used."""


class DeviceTimeout(LinkError):
    """The device did not answer in time."""


class ModelLink:
    """The reference device model, in process."""

    name = "model (pure-Python reference device)"

    def __init__(self, info=None, **options):
        # options: DeviceModel's (device_secret=... makes a secured device).
        self.device = DeviceModel(info, **options)
        self._out = bytearray()

    def write(self, data):
        self._out += self.device.feed(bytes(data))

    def read_until(self, delimiter=b"\0", timeout=1.0):
        data, self._out = split_through(self._out, delimiter)
        return data

    def close(self):
        pass


class SerialLink:
    """A serial port (pyserial): a device name such as ``/dev/ttyUSB1`` or ``COM3``, or any
    pyserial URL (``socket://host:port`` or ``rfc2217://host:port`` for a remote port).
    ``rtscts``: RTS/CTS hardware flow control."""

    def __init__(self, port, baud, *, rtscts=False):
        try:
            self._port = serial.serial_for_url(port, baud, timeout=0.05, rtscts=rtscts)
        except (OSError, ValueError, serial.SerialException) as e:
            raise LinkError(f"cannot open serial port {port}: {e}") from None
        self.name = f"serial port {port} at {baud} baud"
        # End whatever partial frame the device may hold (see the protocol's Framing).
        self._port.write(b"\0")

    def write(self, data):
        self._port.write(bytes(data))

    def read_until(self, delimiter=b"\0", timeout=1.0):
        deadline = time.monotonic() + timeout
        data = bytearray()
        while time.monotonic() < deadline:
            chunk = self._port.read_until(delimiter)
            data += chunk
            if data.endswith(delimiter):
                break
        return bytes(data)

    def close(self):
        self._port.close()


class Progress:
    """Progress of a message through the device, on stderr: while stderr is a terminal, a
    ``tqdm`` bar (bytes, rate, time left); whether or not it is, one summary line at the end,
    such as ``encrypt CTR: 5.0 MiB in 9.8 s (522.4 KiB/s)``.

    :meth:`update` counts bytes done (:meth:`Device.process` calls it for each reply);
    :meth:`close` stops the clock, ends the bar and prints the summary (``summary=False``: only
    the first two, for a caller that prints :meth:`summary` later or not at all).
    """

    def __init__(self, total, label, stream=None):
        self.total = total
        self.label = label
        self.stream = stream or sys.stderr
        self.done = 0
        self.start = time.monotonic()
        tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        # The bar leaves no line: the summary line takes the finished bar's place, in the
        # same binary units.
        self._bar = byte_bar(total, label, self.stream, disable=not tty)
        self._end = None

    def update(self, n):
        self.done += n
        self._bar.update(n)

    def summary(self):
        """The line :meth:`close` prints: bytes, time, rate."""
        seconds = (self._end or time.monotonic()) - self.start
        took = f"{seconds:.1f} s" if seconds >= 1 else f"{seconds * 1000:.0f} ms"
        rate = f" ({format_bytes(self.done / seconds)}/s)" if seconds > 0 else ""
        return f"{self.label}: {format_bytes(self.done)} in {took}{rate}"

    def close(self, summary=True):
        if self._end is not None:
            return
        self._end = time.monotonic()
        self._bar.close()
        if summary:
            print(self.summary(), file=self.stream, flush=True)


class Device:
    """The appliance behind a link.

    Parameters
    ----------
    link
        :class:`SerialLink`, :class:`ModelLink`, :class:`SimLink` or anything with
        ``write``/``read_until``/``close`` and a ``name``.
    timeout : float
        Seconds to wait for each reply before :class:`DeviceTimeout`.
    device_key : bytes, optional
        The device secret (32 bytes): the first request but ``INFO`` opens a session
        (:mod:`.session_host`) and every later one travels sealed in it.
    """

    def __init__(self, link, *, timeout=5.0, device_key=None):
        self.link = link
        self.timeout = timeout
        self._seq = itertools.count(1)
        self._info = None
        #: The session (:class:`~.session_host.HostSession`), or ``None`` without a device key.
        self.session = None if device_key is None else HostSession(device_key)

    def close(self):
        self.link.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _send(self, command, payload):
        seq = next(self._seq) & 0xFFFF
        if self.session is not None:
            command, payload = self.session.seal(command, seq, payload)
        self.link.write(encode_frame(command, seq, payload))
        return seq

    def _ensure_session(self, command):
        # With a device key, every request but INFO and the handshake waits for a session.
        if (self.session is not None and not self.session.active
                and command != Command.INFO and command not in set(SessionCommand)):
            self.session.handshake(self.request)

    def _max_chunk(self):
        info = self.info()
        return info.max_chunk if self.session is None else HostSession.max_chunk(info)

    def request(self, command, payload=b""):
        """Send one request and return its reply payload (status checked: a device error
        raises the :mod:`aes_fpga.appliance.spec` error of its status)."""
        self._ensure_session(command)
        return self._reply(command, self._send(command, payload))

    def pipeline(self, command, payloads, on_reply=None):
        """Send the requests ``payloads`` (an iterable), keeping up to the device's window
        unanswered, and return their reply payloads in order (or pass each to ``on_reply``
        as it arrives and return ``None``). The first error reply raises, as
        :meth:`request`; replies still due then are skipped by later requests."""
        window = self.info().window
        self._ensure_session(command)
        replies = [] if on_reply is None else None
        due = deque()
        payloads = iter(payloads)
        more = True
        while True:
            while more and len(due) < window:
                payload = next(payloads, None)
                if payload is None:
                    more = False
                else:
                    due.append(self._send(command, payload))
            if not due:
                return replies
            reply = self._reply(command, due.popleft())
            if on_reply is None:
                replies.append(reply)
            else:
                on_reply(reply)

    def _reply(self, command, seq):
        deadline = time.monotonic() + self.timeout
        decoder = FrameDecoder()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise DeviceTimeout(f"no reply to {command_name(command)} from {self.link.name} "
                                    f"within {self.timeout} s")
            for raw in decoder.feed(self.link.read_until(b"\0", timeout=left)):
                frame = decode_frame(raw)
                if self.session is not None:
                    frame = self.session.open(frame)
                    if frame is None:
                        continue    # not sealed by the device for this request: ignored
                if frame.seq != seq or frame.command != reply_opcode(command):
                    continue   # a stale reply to an earlier request
                status = Status(frame.payload[0]) if frame.payload else None
                if status is not Status.OK:
                    raise error_for_status(status)(
                        f"{command_name(command)}: device answered {status.name}: "
                        f"{describe(status)}", command=command, seq=seq, status=status)
                return frame.payload

    def info(self):
        if self._info is None:
            self._info = parse_info_reply(self.request(Command.INFO))
        return self._info

    def stats(self):
        """The transport's drop counters (``STATS``): a list of 16-bit values, in the order
        the transport names them (:data:`~aes_fpga.appliance.spec.UDP_COUNTERS` for the
        Ethernet appliance; none for a serial one), then the entropy source's and GCM's where
        the device has them (:func:`split_stats` cuts them apart)."""
        return parse_stats_reply(self.request(Command.STATS))

    def load_key(self, slot, key):
        self.request(Command.LOAD_KEY, build_load_key_request(slot, key))

    def zeroize(self, slot=ALL_SLOTS):
        self.request(Command.ZEROIZE, build_zeroize_request(slot))

    def process(self, slot, op, mode, data, *, iv=None, progress=None):
        """Encrypt or decrypt a whole message in chunks the device accepts."""
        mode, op = Mode(mode), Op(op)
        chunk = self._max_chunk()
        out = bytearray()

        def take(reply):
            part = parse_process_reply(reply)
            out.extend(part)
            if progress is not None:
                progress.update(len(part))
            return part

        self._process_chunks(slot, op, mode, data, iv, chunk, take)
        return bytes(out)

    def _process_chunks(self, slot, op, mode, data, iv, chunk, take):
        """Send ``data`` in requests of at most ``chunk`` bytes, handing each reply to
        ``take`` in order (it returns the reply's data): one chained message, as the stream
        transports carry it."""
        self.pipeline(Command.PROCESS, build_process_requests(
            slot, op, mode, data, iv=iv, chunk_size=chunk), take)

    def gcm_encrypt(self, slot, nonce, aad, data, *, progress=None):
        """AES-GCM encryption (SP 800-38D) under the key in ``slot``.

        Parameters
        ----------
        slot : int
            Key slot (loaded with :meth:`load_key`).
        nonce : bytes
            12 bytes, never used twice with the same key.
        aad, data : bytes
            Additional authenticated data and plaintext.
        progress : Progress, optional
            Counts the data bytes done.

        Returns
        -------
        (bytes, bytes)
            The ciphertext and the 16-byte tag.
        """
        out = self._gcm(slot, Op.ENCRYPT, nonce, aad, data, None, progress)
        return out[:-gcm_model.TAG_BYTES], out[-gcm_model.TAG_BYTES:]

    def gcm_decrypt(self, slot, nonce, aad, ciphertext, tag, *, progress=None):
        """AES-GCM decryption and verification: the plaintext, or
        :class:`aes_fpga.gcm_model.AuthenticationError` (carrying nothing of the message) when
        ``tag`` (12 to 16 bytes) does not match; no plaintext is returned then."""
        return self._gcm(slot, Op.DECRYPT, nonce, aad, ciphertext, tag, progress)

    def _gcm(self, slot, op, nonce, aad, data, tag, progress):
        info = self.info()
        if Mode.GCM not in info.modes:
            offered = ", ".join(m.name for m in info.modes)
            raise BadMode(f"{self.link.name} does not offer GCM (its modes: {offered})")
        payloads = build_gcm_requests(slot, op, nonce, aad, data, tag=tag,
                                      chunk_size=self._max_chunk())
        out = bytearray()
        requests = iter(payloads)

        def take(reply):
            part = parse_gcm_reply(next(requests), reply)
            out.extend(part)
            if progress is not None and len(out) <= len(data):
                progress.update(len(part))

        try:
            self._gcm_chunks(payloads, take)
        except AuthFailed:
            out[:] = bytes(len(out))        # unverified plaintext is not kept
            raise gcm_model.AuthenticationError() from None
        return bytes(out)

    def _gcm_chunks(self, payloads, take):
        """Send a GCM message's requests (consecutive seqs, up to the window unanswered),
        handing each reply to ``take`` in order."""
        self.pipeline(Command.PROCESS, payloads, take)

    def random(self, count):
        """``count`` 16-byte words from the device's entropy source (``RANDOM``), as
        ``16 * count`` bytes, in requests of at most :func:`~.spec.max_random_words` words
        (one after another: each waits for its words). A source in start-up or failed raises
        :class:`~.errors.EntropyUnavailable`; a device without one, ``UnknownCommand``."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"count: {count!r} is not a number of words (0 or more)")
        most = max_random_words(self.info().max_payload)
        out = bytearray()
        while True:            # (count 0: one request, asking whether words would be given)
            n = min(count - len(out) // 16, most)
            out += b"".join(parse_random_reply(
                self.request(Command.RANDOM, build_random_request(n)), n))
            if len(out) == 16 * count:
                return bytes(out)

    def raw_samples(self, count):
        """``count`` raw samples of a diagnostic build's entropy source (``ENTROPY_RAW``), one
        a byte (0 or 1), in requests of at most :func:`~.spec.max_random_words` blocks of 128;
        the samples of one request are consecutive, those between two are skipped."""
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"count: {count!r} is not a number of samples (0 or more)")
        most = max_random_words(self.info().max_payload)
        out = bytearray()
        while len(out) < count:
            n = min(-(-(count - len(out)) // SAMPLES_PER_BLOCK), most)
            out += unpack_samples(b"".join(parse_random_reply(
                self.request(Command.ENTROPY_RAW, build_random_request(n)), n, "ENTROPY_RAW")))
        return bytes(out[:count])

    def selftest(self, slot=0):
        """Run the FIPS-197 Appendix C vectors (ECB, both directions) for every key size the
        device supports; returns ``[(key_bits, passed)]``. The slot's key is replaced."""
        results = []
        for bits in self.info().key_sizes:
            key, pt, known = FIPS197_EXAMPLES[bits]
            self.load_key(slot, key)
            ct = self.process(slot, Op.ENCRYPT, Mode.ECB, pt, iv=bytes(16))
            back = self.process(slot, Op.DECRYPT, Mode.ECB, known, iv=bytes(16))
            results.append((bits, ct == known and back == pt))
        self.zeroize(slot)
        return results


def split_stats(info, counters):
    """``STATS`` counters in their parts, for a device that reported ``info``: ``(transport,
    entropy, gcm)``: the transport's list, a dict of :data:`~.spec.ENTROPY_COUNTERS` (empty
    without an entropy source; ``entropy_state`` an :class:`~.spec.EntropyStatus`) and a dict
    of :data:`~.spec.GCM_COUNTERS` (empty without GCM) and, on a device with a secret,
    :data:`~.session_spec.SESSION_COUNTERS`."""
    counters = list(counters)
    n_sessions = len(SESSION_COUNTERS) if info.sessions else 0
    sessions = dict(zip(SESSION_COUNTERS, counters[len(counters) - n_sessions:], strict=True)) \
        if n_sessions and len(counters) >= n_sessions else {}
    counters = counters[:len(counters) - n_sessions]
    n_gcm = len(GCM_COUNTERS) if Mode.GCM in info.modes else 0
    n_entropy = len(ENTROPY_COUNTERS) if info.entropy else 0
    if len(counters) < n_gcm + n_entropy:
        raise BadReply(f"STATS reply has {len(counters)} counters; the device's INFO promises "
                       f"at least {n_gcm + n_entropy}")
    gcm = dict(zip(GCM_COUNTERS, counters[len(counters) - n_gcm:], strict=False)) \
        if n_gcm else {}
    gcm.update(sessions)
    rest = counters[:len(counters) - n_gcm]
    entropy = dict(zip(ENTROPY_COUNTERS, rest[len(rest) - n_entropy:], strict=True)) \
        if n_entropy else {}
    if entropy:
        try:
            entropy["entropy_state"] = EntropyStatus(entropy["entropy_state"])
        except ValueError:
            raise BadReply(f"STATS reply entropy_state {entropy['entropy_state']} is not "
                           "defined") from None
    return rest[:len(rest) - n_entropy], entropy, gcm

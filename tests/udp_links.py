"""Datagram links for the UDP driver's tests: the reference device behind one, and a link
that loses, duplicates and reorders datagrams."""

import random

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from aes_fpga.appliance.messages import DeviceInfo
from aes_fpga.appliance.reference import DeviceModel
from aes_fpga.appliance.spec import MAX_PAYLOAD, Mode, Op


def reference(mode, op, key, iv, data):
    """``data`` encrypted or decrypted by ``cryptography``."""
    m = {Mode.ECB: modes.ECB(), Mode.CBC: modes.CBC(iv), Mode.CTR: modes.CTR(iv)}[mode]
    c = Cipher(algorithms.AES(key), m)
    ctx = c.encryptor() if op == Op.ENCRYPT else c.decryptor()
    return ctx.update(data) + ctx.finalize()


class ModelDatagramLink:
    """The reference device behind a datagram link (spec "Transport over UDP")."""

    datagrams = True
    name = "udp://model"

    def __init__(self, window=2, max_payload=MAX_PAYLOAD):
        self.device = DeviceModel(DeviceInfo(core_name="model", build_id=0,
                                             key_sizes=(128, 192, 256), key_slots=2,
                                             modes=tuple(Mode), max_payload=max_payload,
                                             window=window))
        self.inbox = []

    def send(self, datagram):
        out = self.device.datagram(datagram)
        if out:
            self.inbox.append(out)

    def recv(self, timeout):
        return self.inbox.pop(0) if self.inbox else None

    def close(self):
        pass


class LossyLink:
    """Drops, duplicates and reorders datagrams both ways (``rate`` each), seeded."""

    datagrams = True

    def __init__(self, link, rate, seed):
        self.link, self.rate, self.rng = link, rate, random.Random(seed)
        self.name = link.name
        self.held = []          # datagrams delayed to reorder them
        self.replies = []
        self.events = {"dropped": 0, "duplicated": 0, "reordered": 0}

    def _mangle(self, datagram, deliver):
        r = self.rng.random()
        if r < self.rate:
            self.events["dropped"] += 1
            return
        if r < 2 * self.rate:
            self.events["reordered"] += 1
            self.held.append((datagram, deliver))
            return
        deliver(datagram)
        if r < 3 * self.rate:
            self.events["duplicated"] += 1
            deliver(datagram)
        while self.held and self.rng.random() < 0.5:
            late, late_deliver = self.held.pop(0)
            late_deliver(late)

    def send(self, datagram):
        self._mangle(datagram, self.link.send)

    def recv(self, timeout):
        while True:
            got = self.link.recv(timeout)
            if got is None:
                if self.held:       # nothing else comes: what was held back arrives now
                    late, deliver = self.held.pop(0)
                    deliver(late)
                    continue
                return self.replies.pop(0) if self.replies else None
            self._mangle(got, self.replies.append)
            if self.replies:
                return self.replies.pop(0)

    def close(self):
        self.link.close()

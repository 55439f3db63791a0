"""Run inside the network namespace by test_eth_tap.py (``python -m aes_fpga.sim.tap``): the
kernel's ARP, ping (a raw ICMP socket) and ``aes-fpga encrypt|decrypt --port udp://...``
against ``cryptography``. Exits non-zero on the first failure."""

import os
import random
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from aes_fpga.sim.ethbridge import SIM_IP, SIM_MAC, SIM_PORT
from aes_fpga.sim.tap import TAP_NAME

#: The ``aes-fpga`` command of the Python running this, on PATH or not.
AES_FPGA = [sys.executable, "-m", "aes_fpga"]


def checksum(data):
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    total = (total & 0xFFFF) + (total >> 16)
    return ~(total + (total >> 16)) & 0xFFFF


def ping(count=3):
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    sock.settimeout(5)
    for seq in range(count):
        data = bytes(range(32))
        head = struct.pack("!BBHHH", 8, 0, 0, 0x77, seq)
        sock.sendto(struct.pack("!BBHHH", 8, 0, checksum(head + data), 0x77, seq) + data,
                    (SIM_IP, 0))
        reply = sock.recv(2048)
        icmp = reply[(reply[0] & 15) * 4:]
        assert icmp[0] == 0 and struct.unpack("!HH", icmp[4:8]) == (0x77, seq), icmp[:8]
        assert icmp[8:] == data
    print(f"ping: {count} replies")


def arp_entry():
    out = subprocess.run(["ip", "neigh", "show", SIM_IP, "dev", TAP_NAME], check=True,
                         capture_output=True, text=True).stdout
    assert SIM_MAC in out, out
    print(f"arp: {out.strip()}")


def cli_round_trips(folder):
    rng = random.Random(5)
    key, iv = rng.randbytes(16), rng.randbytes(16)
    data = rng.randbytes(5000)
    (folder / "in").write_bytes(data)
    port = f"udp://{SIM_IP}:{SIM_PORT}"
    for mode, cm in (("ecb", modes.ECB()), ("cbc", modes.CBC(iv)), ("ctr", modes.CTR(iv))):
        plain = data if mode == "ctr" else data[:4992]
        (folder / "in").write_bytes(plain)
        # Each mode given only the options it takes (the CLI refuses the others).
        common = ["--port", port, "--key", key.hex(), "--mode", mode]
        if mode != "ctr":
            common += ["--padding", "none"]
        if mode != "ecb":
            common += ["--iv", iv.hex()]
        start = time.monotonic()
        subprocess.run([*AES_FPGA, "encrypt", *common, str(folder / "in"),
                        str(folder / "ct")], check=True, timeout=60)
        enc = Cipher(algorithms.AES(key), cm).encryptor()
        assert (folder / "ct").read_bytes() == enc.update(plain) + enc.finalize(), mode
        subprocess.run([*AES_FPGA, "decrypt", *common, str(folder / "ct"),
                        str(folder / "back")], check=True, timeout=60)
        assert (folder / "back").read_bytes() == plain, mode
        print(f"{mode}: {len(plain)} bytes encrypted and decrypted through the kernel's UDP "
              f"sockets in {time.monotonic() - start:.1f} s")


def gcm_round_trip(folder):
    """GCM through the kernel's sockets: the file opens with AESGCM, decrypts back, and a
    flipped ciphertext bit fails authentication without an output file."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    rng = random.Random(6)
    key, aad, data = rng.randbytes(16), rng.randbytes(20), rng.randbytes(3000)
    (folder / "in").write_bytes(data)
    (folder / "aad").write_bytes(aad)
    common = ["--port", f"udp://{SIM_IP}:{SIM_PORT}", "--key", key.hex(), "--mode", "gcm",
              "--aad-file", str(folder / "aad")]
    subprocess.run([*AES_FPGA, "encrypt", *common, str(folder / "in"), str(folder / "sealed")],
                   check=True, timeout=60)
    sealed = (folder / "sealed").read_bytes()
    assert AESGCM(key).decrypt(sealed[:12], sealed[12:], aad) == data
    subprocess.run([*AES_FPGA, "decrypt", *common, str(folder / "sealed"),
                    str(folder / "opened")], check=True, timeout=60)
    assert (folder / "opened").read_bytes() == data
    (folder / "bad").write_bytes(sealed[:100] + bytes([sealed[100] ^ 1]) + sealed[101:])
    bad = subprocess.run([*AES_FPGA, "decrypt", *common, str(folder / "bad"),
                          str(folder / "bad-out")], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and not (folder / "bad-out").exists(), bad.stderr
    print(f"gcm: {len(data)} bytes sealed and opened through the kernel's UDP sockets; a "
          f"flipped bit refused")


def main():
    ping()
    arp_entry()
    with tempfile.TemporaryDirectory() as folder:
        cli_round_trips(Path(folder))
        gcm_round_trip(Path(folder))
    subprocess.run([*AES_FPGA, "selftest", "--port", f"udp://{SIM_IP}"], check=True,
                   timeout=60)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())

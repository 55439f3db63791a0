"""End to end: the CLI through ``--port sim`` (the gateware protocol engine, modes and core,
compiled when a C++ compiler exists) against ``cryptography``, 1 byte to 1 MiB, each mode,
encrypt and decrypt. ECB and CBC pad with PKCS#7 (the default) or refuse a partial block
with ``--padding none``."""

from functools import partial

import cli_files
import pytest
from cli_files import pkcs7, reference

crypt = partial(cli_files.crypt, port="sim")


# 64 KiB in CTR (64 chunks, pipelined like ECB and CBC decryption) stays in the default run;
# every mode at 1 MiB (CBC encryption waits for every block: 7.5 M cycles) runs with -m slow.
_BIG = [pytest.param(mode, 1 << 20, marks=pytest.mark.slow) for mode in ("ecb", "cbc", "ctr")]


@pytest.mark.parametrize(("mode", "size"), [
    (mode, size) for mode in ("ecb", "cbc", "ctr") for size in (1, 16, 1023, 4096 + 5)
] + [("ctr", 1 << 16)] + _BIG)
def test_sim_port_matches_cryptography(tmp_path, mode, size):
    data = (bytes(range(251)) * (size // 251 + 1))[:size]
    rc, ct = crypt(tmp_path, "encrypt", mode, data)
    assert rc == 0
    assert ct == reference(mode, data if mode == "ctr" else pkcs7(data))
    rc, pt = crypt(tmp_path, "decrypt", mode, ct)
    assert rc == 0 and pt == data


@pytest.mark.parametrize("mode", ["ecb", "cbc"])
def test_sim_port_whole_blocks_without_padding(tmp_path, mode, capsys):
    data = bytes(range(48))
    rc, ct = crypt(tmp_path, "encrypt", mode, data, "--padding", "none")
    assert rc == 0 and ct == reference(mode, data)
    rc, pt = crypt(tmp_path, "decrypt", mode, ct, "--padding", "none")
    assert rc == 0 and pt == data
    capsys.readouterr()
    rc, out = crypt(tmp_path, "encrypt", mode, data[:40], "--padding", "none")
    assert rc == 2 and out is None
    assert "use --padding pkcs7" in capsys.readouterr().err

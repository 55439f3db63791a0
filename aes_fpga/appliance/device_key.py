"""The device key as files hold it: made (:func:`write_key_file`), read for a bitstream build
with its permissions checked (:func:`read_private_key_file`), and named without being shown
(:func:`fingerprint`).

A key file holds the 32-byte device secret of :mod:`.session_spec`, raw or as 64 hexadecimal
digits (what :func:`~.session_host.read_device_key` reads). Neither the key nor any part of it
appears in a message, an exception or a ``repr`` made here.
"""

import hashlib
import os
import secrets
import stat
from pathlib import Path

from .session_host import read_device_key
from .session_spec import DEVICE_SECRET_BYTES

__all__ = ["FINGERPRINT_LABEL", "FINGERPRINT_BYTES", "fingerprint", "check_private",
           "read_private_key_file", "KeyFileError", "load_key_file", "write_key_file"]

#: The domain separation of :func:`fingerprint`: no other hash of the key in this project
#: starts with it, so a fingerprint is no value the device or a session ever computes.
FINGERPRINT_LABEL = b"aes-fpga device key fingerprint v1\0"
#: Bytes of the SHA-256 digest a fingerprint keeps.
FINGERPRINT_BYTES = 8


def fingerprint(secret):
    """The key's fingerprint: the first :data:`FINGERPRINT_BYTES` bytes of
    ``SHA-256(FINGERPRINT_LABEL || secret)`` as 16 hexadecimal digits. It tells two keys
    apart and reveals nothing about the key (finding a key from it means inverting SHA-256 over
    256 unknown bits); a report or a listing may show it."""
    secret = bytes(secret)
    if len(secret) != DEVICE_SECRET_BYTES:
        raise ValueError(f"a device key is {DEVICE_SECRET_BYTES} bytes, got {len(secret)}")
    return hashlib.sha256(FINGERPRINT_LABEL + secret).digest()[:FINGERPRINT_BYTES].hex()


def check_private(path):
    """Refuse (:class:`PermissionError`, naming the file and its mode) a key file that anyone
    but its owner may read or write: any group or other permission bit, as OpenSSH refuses a
    private key file. Skipped where the file system has no POSIX permissions (Windows)."""
    if os.name == "nt":
        return
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if mode & 0o077:
        raise PermissionError(f"device key file {path}: mode {mode:04o} lets others "
                              f"{'read' if mode & 0o044 else 'write'} it; a device key file "
                              f"must be its owner's only (chmod 600 {path})")


def read_private_key_file(path):
    """The device key in the file ``path`` (see :func:`~.session_host.read_device_key`), once
    :func:`check_private` has passed it. Errors name the file, never its bytes:
    :class:`FileNotFoundError` and other :class:`OSError`, :class:`PermissionError` for a file
    others may read, :class:`ValueError` for one that is no key."""
    check_private(path)
    return read_device_key(path)


class KeyFileError(Exception):
    """A device key file that cannot be used: missing, unreadable, others may read or write it,
    or it holds no key. The message names the file and the reason, never the file's bytes."""


def load_key_file(path):
    """:func:`read_private_key_file`, every refusal as one :class:`KeyFileError` whose message
    a command can print as it is (what ``build``, ``bench`` and the host commands do)."""
    try:
        return read_private_key_file(path)
    except OSError as e:
        # (check_private's PermissionError carries our message; the others name the cause.)
        raise KeyFileError(str(e) if isinstance(e, PermissionError) and not e.filename
                           else f"device key file {path}: {e.strerror}") from None
    except ValueError as e:
        raise KeyFileError(str(e)) from None


def write_key_file(path):
    """Make a new device key from the operating system's random source and write it to
    ``path`` as 64 hexadecimal digits and a line break, readable and writable by its owner
    only (mode 0600, set as the file is created, so it is never readable by others). Refuses
    (:class:`FileExistsError`) to replace a file. Returns the key's :func:`fingerprint`."""
    key = secrets.token_bytes(DEVICE_SECRET_BYTES)
    fd = os.open(Path(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(key.hex() + "\n")
    return fingerprint(key)

"""A bitstream build holding a device secret (:func:`aes_fpga.flow.build.build`'s
``device_secret``, ``aes-fpga build --device-key-file``).

Where the secret goes: into the design (the appliance's
:class:`~aes_fpga.appliance.gateware.ProtocolEngine`, as a constant loaded into its KDF core
after reset), hence into the files made from it in the build folder: the HDL Amaranth writes
(``top.il`` or ``top.v``), the synthesized netlist (``top.json``), the placed design
(``top.config``, ``top.fasm``, ``top.frames``, Vivado's checkpoints) and the bitstream
(``top.bit``). Nowhere else: not in ``report.json`` or ``report.md`` (they carry the key's
:func:`~aes_fpga.appliance.device_key.fingerprint` only), not in a message, not in the
synthesis cache (a netlist holding a secret is never stored there: the cache is shared by all
of a user's builds and outlives the build folder).

Who may read them: the build folder is made (or, if it exists, changed to) mode 0700 and the
build runs under umask 077, so that every file a tool writes there is its owner's only from
the moment it is created; afterwards every file and folder in the tree loses its group and
other permission bits (a tool that sets a mode of its own included).
"""

import contextlib
import os
import stat

from ..appliance.device_key import fingerprint
from ..appliance.session_spec import DEVICE_SECRET_BYTES

__all__ = ["check_secret_options", "secret_report", "private_tree", "restrict_tree"]


def check_secret_options(secret, design, designs, entropy_raw):
    """Check a build with the device secret ``secret`` of ``design`` (one of ``designs``,
    those that take one): :class:`ValueError`, naming the parameter and its option, never
    showing the secret. (The core needs nothing more: the sessions' keys are held by the
    records' own cipher.)"""
    if len(bytes(secret)) != DEVICE_SECRET_BYTES:
        raise ValueError(f"device_secret (--device-key-file): {DEVICE_SECRET_BYTES} bytes, "
                         f"got {len(bytes(secret))}")
    if design not in designs:
        raise ValueError(f"device_secret (--device-key-file): design {design} has no protocol "
                         f"engine; the {' and '.join(designs)} designs take a device key")
    if entropy_raw:
        raise ValueError("entropy_raw (--entropy-raw): a diagnostic build gives the source's "
                         "raw samples, whose words are no secret; a device key goes into a "
                         "normal build")


def secret_report(secret):
    """The build report's entries on the device key: ``device`` (``"secured"`` or
    ``"open"``) and ``device_key_fingerprint`` (the key's
    :func:`~aes_fpga.appliance.device_key.fingerprint`, or ``None``)."""
    if secret is None:
        return {"device": "open", "device_key_fingerprint": None}
    return {"device": "secured", "device_key_fingerprint": fingerprint(secret)}


def restrict_tree(folder):
    """Take every group and other permission bit off ``folder`` and everything in it (the
    owner's bits are kept: a script stays executable)."""
    for root, dirs, files in os.walk(folder):
        for name in (*dirs, *files):
            path = os.path.join(root, name)
            if not os.path.islink(path):
                mode = stat.S_IMODE(os.lstat(path).st_mode)
                os.chmod(path, mode & 0o700)
    os.chmod(folder, stat.S_IMODE(os.stat(folder).st_mode) & 0o700)


@contextlib.contextmanager
def private_tree(folder, private):
    """Make the build folder ``folder`` (with its parents); with ``private``, make it its
    owner's only (mode 0700, what it held before included), run the body under umask 077
    and restrict the tree again when the body is done, whatever happened in it.

    (The umask is the process's: a program running builds in threads at the same time gets it
    too while the build runs, which can only make its new files more private.)"""
    if not private:
        folder.mkdir(parents=True, exist_ok=True)
        yield
        return
    old = os.umask(0o077)
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        restrict_tree(folder)
        yield
    finally:
        try:
            if folder.is_dir():
                restrict_tree(folder)
        finally:
            os.umask(old)

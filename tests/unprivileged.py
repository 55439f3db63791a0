"""Permission refusals tested even when the suite runs as root, as CI does. Root reads and
writes past permission bits; run as root, the command goes through ``unshare --user``: a new
user namespace in which the process keeps its user but none of root's capabilities over the
machine's files, so the permission bits hold for it as for anyone. Run by another user, it
runs as that user."""

import os
import subprocess
import sys


def run_cli(argv, *, timeout=120):
    """``python -m aes_fpga ARGV`` without the power to pass permission bits:
    ``(returncode, stderr)``."""
    command = [sys.executable, "-m", "aes_fpga", *argv]
    if os.geteuid() == 0:
        command = ["unshare", "--user", "--", *command]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stderr

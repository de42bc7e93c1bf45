"""The README's `make demo` on a stock Debian 12 whose python3 is Debian's own (PEP 668: no pip into the
system, no pip at all before python3-venv): a fresh debootstrapped bookworm (scripts/wireshark-chroot.sh,
its base cached under /var/cache/nrsack) with make added, the clone copied in, then `make demo` as root.

Part of `make test`: it installs every Debian package and Python dependency from the mirrors into the
fresh system, about 3 minutes on a quiet machine (10 at a load of 15), plus about a minute for the
base's debootstrap on a machine that has not cached it yet. It is the longest test, so the collection puts it first (conftest.py): pytest-xdist starts it on
one worker while the others run the rest. Without root or debootstrap it fails: a skip here would count
a set-up nobody tried as passing."""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from support import tshark
from support.paths import source_copy

pytestmark = [pytest.mark.chroot, pytest.mark.root, pytest.mark.slow]

CLONE = "/srv/nrsack"  # where the newcomer's clone sits in the fresh system


HOST_TRUST = "/etc/ssl/certs/nrsack-host-ca-bundle.crt"  # in the fresh system


def inside(system: Path, command: str, timeout: float) -> subprocess.CompletedProcess:
    """`command` run by root's shell in the fresh system: its own /proc and /dev in a private mount
    namespace (nothing stays mounted), the host's network, DNS and TLS trust (a network that inspects
    TLS needs its CA for PyPI, as this machine's pip does), an environment of its own."""
    shutil.copy("/etc/resolv.conf", system / "etc" / "resolv.conf")
    shutil.copy(os.environ.get("PIP_CERT") or os.environ.get("SSL_CERT_FILE") or "/etc/ssl/certs/ca-certificates.crt",
                system / HOST_TRUST.lstrip("/"))
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root",
           "LANG": "C.UTF-8", "TERM": "dumb", "PIP_CERT": HOST_TRUST}
    script = 'mount -t proc proc "$1/proc"; mount --rbind /dev "$1/dev"; exec chroot "$1" /bin/sh -ec "$2"'
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-ec", script, "sh",
                           str(system), command], env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def stock_debian():
    if os.geteuid() != 0 or not (shutil.which("debootstrap") or shutil.which("debootstrap", path="/usr/sbin:/sbin")):
        pytest.fail("needs root and debootstrap (scripts/setup.sh installs it)")
    system = Path(tempfile.mkdtemp(prefix="nrsack-bookworm-"))
    made = subprocess.run([str(tshark.CHROOT_SCRIPT), "fresh", "bookworm", str(system)], capture_output=True,
                          text=True, timeout=1800)
    assert made.returncode == 0, made.stderr[-3000:]
    source_copy(system / CLONE.lstrip("/"))
    yield system
    shutil.rmtree(system, ignore_errors=True)


def test_make_demo_on_a_stock_debian_12(stock_debian):
    before = inside(stock_debian, "python3 -c pass || echo no-python; command -v pip pip3 || echo no-pip", 60)
    assert "no-pip" in before.stdout, before.stdout  # Debian's minimal system: no pip to misuse
    demo = inside(stock_debian, f"cd {CLONE} && make demo", 3600)
    log = stock_debian.with_name(stock_debian.name + "-make-demo.log")  # kept: the chroot goes, the log stays
    log.write_text(demo.stdout + demo.stderr)
    assert demo.returncode == 0, f"make demo failed, log: {log}\n{demo.stderr[-2000:]}"
    for seen in ("nrsack analyze", "0.0059", "+25.82", "0 errors, 0 warnings, 0 notes"):
        assert seen in demo.stdout, seen
    # every user has nrsack, from Debian's own python3 in a virtual environment
    where = inside(stock_debian, "readlink -f /usr/local/bin/nrsack; /opt/nrsack/venv/bin/python -c "
                                 "'import sys; print(sys.base_prefix)'; /usr/bin/python3 -c 'import nrsack' || echo clean", 60)
    lines = where.stdout.split()
    assert lines[:2] == ["/opt/nrsack/venv/bin/nrsack", "/usr"] and lines[-1] == "clean", where.stdout
    as_user = inside(stock_debian, f"cd /tmp && setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/tmp "
                                   f"PATH=/usr/local/bin:/usr/bin:/bin nrsack analyze {CLONE}/sample-pcaps/sctp-nrsack-fig4.pcap "
                                   "--format json", 120)
    assert as_user.returncode == 0 and '"p_over_q"' in as_user.stdout, as_user.stderr
    again = inside(stock_debian, f"cd {CLONE} && make setup", 600)  # a second run: quick
    assert again.returncode == 0, again.stderr[-3000:]

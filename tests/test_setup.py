"""What scripts/setup.sh (the README's `make demo` / `make test`) leaves on the machine, as a user who is
not root meets it: `nrsack` on PATH from a virtual environment of Debian's python3, and the Wireshark
plugin it installs for that user loaded by that user's tshark.

Runs against the set-up's install (NRSACK_PREFIX, default /opt/nrsack, and its link in NRSACK_BIN_DIR,
default /usr/local/bin), which `make test` makes first; run by hand before `make setup`, it skips saying
so (under CI it fails instead)."""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from support import tshark

pytestmark = [pytest.mark.setup, pytest.mark.tshark]

PREFIX = Path(os.environ.get("NRSACK_PREFIX", "/opt/nrsack"))
BIN_DIR = Path(os.environ.get("NRSACK_BIN_DIR", "/usr/local/bin"))
FIG4 = tshark.REPO / "sample-pcaps" / "sctp-nrsack-fig4.pcap"
AS_ROOT = os.geteuid() == 0


@pytest.fixture(scope="module")
def installed():
    link = BIN_DIR / "nrsack"
    if not (link.exists() and (PREFIX / "venv" / "bin" / "python").exists()):
        message = f"no set-up install ({link} -> {PREFIX}/venv): run `make setup` first"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return link


@pytest.fixture
def user(installed):
    """Runs a command as a normal user (uid 65534 when the tests run as root) with a fresh HOME and the
    PATH a login shell gives: nothing of root's, nor of this test's Python."""
    home = Path(tempfile.mkdtemp(prefix="nrsack-setup-user-"))
    if AS_ROOT:
        os.chown(home, tshark.NOBODY, tshark.NOBODY)
    env = {"PATH": f"{BIN_DIR}:/usr/bin:/bin", "HOME": str(home), "LC_ALL": "C.UTF-8", "TZ": "UTC"}

    def run(*cmd, timeout=600):
        prefix = ["setpriv", f"--reuid={tshark.NOBODY}", f"--regid={tshark.NOBODY}", "--clear-groups"] if AS_ROOT else []
        return subprocess.run([*prefix, *map(str, cmd)], env=env, capture_output=True, text=True, cwd=home,
                              timeout=timeout)

    run.home = home
    yield run
    shutil.rmtree(home, ignore_errors=True)


def test_the_environment_is_debians_python_and_the_system_python_is_untouched(installed):
    """PEP 668: Debian's python3 refuses pip installs into the system; set-up installs into its own
    environment of that python3 and puts nothing into the system's."""
    venv_python = PREFIX / "venv" / "bin" / "python"
    base = subprocess.run([venv_python, "-c", "import sys; print(sys.base_prefix)"], capture_output=True, text=True)
    assert base.stdout.strip() == "/usr", base.stderr
    system = subprocess.run(["/usr/bin/python3", "-c", "import nrsack"], capture_output=True, text=True,
                            env={"PATH": "/usr/bin:/bin"}, cwd="/")
    assert system.returncode != 0 and "No module named 'nrsack'" in system.stderr
    assert Path(os.path.realpath(installed)) == (PREFIX / "venv" / "bin" / "nrsack").resolve()


def test_a_normal_user_runs_nrsack_and_its_plugin_in_their_own_tshark(user):
    """The README's Wireshark section as a normal user: `nrsack wireshark install --user`, then that user's
    tshark loads the plugin from their home and decodes a sample with it."""
    analyzed = user("nrsack", "analyze", FIG4, "--sndbuf", "8000", "--format", "json")
    assert analyzed.returncode == 0, analyzed.stderr
    assert '"p_over_q": 0.005917159763313609' in analyzed.stdout
    installed = user("nrsack", "wireshark", "install", "--user")
    assert installed.returncode == 0, installed.stderr
    assert "C plugin built for Wireshark" in installed.stdout
    plugins = user("tshark", "-G", "plugins").stdout
    expected = user.home / ".local/lib/wireshark/plugins" / tshark.WIRESHARK_RELEASE / "epan/nrsack.so"
    assert str(expected) in plugins, plugins
    decoded = user("tshark", "-r", FIG4, "-o", "nrsack.sndbuf:8000", "-o", "sctp.relative_tsns:FALSE",
                   "-Y", "nrsack.blocked", "-T", "fields", "-e", "frame.number")
    assert decoded.returncode == 0, decoded.stderr
    assert decoded.stdout.split() and all(n.isdigit() for n in decoded.stdout.split())
    status = user("nrsack", "wireshark", "status")
    assert status.returncode == 0 and "nrsack.so" in status.stdout.split("tshark -G plugins:")[1]

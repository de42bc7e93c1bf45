"""`nrsack wireshark install|uninstall|status` as a new user runs it: the package installed the way pip
installs it (a --target folder, so the C sources and the Lua plugin come from its package data), run as
an unprivileged user (uid 65534 when the tests run as root) with a fresh HOME, then that user's own
`tshark -G plugins` and `tshark -C nrsack` show what the command installed. Native Wireshark only."""

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import click
import pytest

from support import tshark
from support.paths import source_copy
from nrsack.wireshark import install as installer

pytestmark = pytest.mark.tshark

AS_ROOT = os.geteuid() == 0
# The test user cannot enter /root, where this interpreter may live: the system Python then.
PYTHON = "/usr/bin/python3" if AS_ROOT else sys.executable
FIG4 = tshark.REPO / "sample-pcaps" / "sctp-nrsack-fig4.pcap"


def world_readable(folder: Path):
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() or os.access(path, os.X_OK) else 0o644)


@pytest.fixture(scope="module")
def package():
    """nrsack pip-installed into a folder the test user can read, with click beside it."""
    folder = Path(tempfile.mkdtemp(prefix="nrsack-pkg-"))
    source = source_copy(Path(tempfile.mkdtemp(prefix="nrsack-src-")))
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                           "--target", str(folder), str(source)], capture_output=True, text=True)
    shutil.rmtree(source, ignore_errors=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    shutil.copytree(Path(click.__file__).parent, folder / "click")
    world_readable(folder)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def user(package):
    """Runs commands as the test user with its own empty HOME."""
    home = Path(tempfile.mkdtemp(prefix="nrsack-user-"))
    if AS_ROOT:
        os.chown(home, tshark.NOBODY, tshark.NOBODY)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "PYTHONPATH": str(package), "LC_ALL": "C.UTF-8", "TZ": "UTC"}

    def run(*cmd):
        prefix = ["setpriv", f"--reuid={tshark.NOBODY}", f"--regid={tshark.NOBODY}", "--clear-groups"] if AS_ROOT else []
        return subprocess.run([*prefix, *cmd], env=env, capture_output=True, text=True, cwd=home, timeout=600)

    def nrsack(*args):
        return run(PYTHON, "-c", "from nrsack.cli import main; main()", *args)

    run.nrsack, run.home = nrsack, home
    yield run
    shutil.rmtree(home, ignore_errors=True)


def nrsack_plugins(user) -> list[str]:
    out = user("tshark", "-G", "plugins").stdout
    return [line.split("\t")[-1].strip() for line in out.splitlines() if line.startswith("nrsack.")]


def test_install_status_replace_uninstall(user):
    """One C build: install picks C (the host has wireshark-dev of tshark's exact version), --lua then
    replaces it, uninstall removes everything; each step as the user's own tshark sees it."""
    assert nrsack_plugins(user) == []
    proc = user.nrsack("wireshark", "install", "--user")
    assert proc.returncode == 0, proc.stderr
    assert "C plugin built for Wireshark" in proc.stdout
    release = tshark.WIRESHARK_RELEASE
    assert nrsack_plugins(user) == [str(user.home / ".local/lib/wireshark/plugins" / release / "epan/nrsack.so")]
    status = user.nrsack("wireshark", "status")
    assert status.returncode == 0 and "nrsack.so" in status.stdout.split("tshark -G plugins:")[1]
    assert "running as root" not in status.stderr

    proc = user.nrsack("wireshark", "install", "--user", "--lua")
    assert proc.returncode == 0, proc.stderr
    assert "removed the C plugin" in proc.stdout
    assert nrsack_plugins(user) == [str(user.home / ".local/lib/wireshark/plugins/nrsack.lua")]

    proc = user.nrsack("wireshark", "uninstall", "--user")
    assert proc.returncode == 0 and "removed profile" in proc.stdout
    assert nrsack_plugins(user) == []
    assert not (user.home / ".config/wireshark/profiles/nrsack").exists()


def test_profile_is_installed_with_its_columns(user):
    assert user.nrsack("wireshark", "install", "--user", "--lua").returncode == 0
    rows = user("tshark", "-C", "nrsack", "-o", "nrsack.sndbuf:8000", "-r", str(FIG4), "-T", "tabs").stdout.splitlines()
    frame12 = [c.strip() for c in rows[11].split("\t")]
    assert frame12[-5:-1] == ["8000", "8000", "", "True"], rows[11]


def test_own_profile_of_the_same_name_is_left_alone(user):
    mine = user.home / ".config/wireshark/profiles/nrsack"
    assert user("mkdir", "-p", str(mine)).returncode == 0
    proc = user.nrsack("wireshark", "install", "--user", "--lua")
    assert proc.returncode == 2 and "was not installed by nrsack" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_system_install_without_root_fails_with_one_line(user):
    proc = user.nrsack("wireshark", "install", "--system", "--lua")
    assert proc.returncode == 2, proc.stdout
    assert proc.stderr.startswith("nrsack: error:") and len(proc.stderr.strip().splitlines()) == 1


def test_missing_tshark_fails_with_one_line(user):
    proc = user.nrsack("wireshark", "status", "--tshark", str(user.home / "no-such-tshark"))
    assert proc.returncode == 2 and proc.stderr.startswith("nrsack: error:") and "Traceback" not in proc.stderr


def test_untested_release_is_refused_unless_forced():
    ws = installer.find_wireshark()
    installer.check_tested(ws, force=False)  # the host's release is a tested one
    untested = replace(ws, version="4.2.9")
    with pytest.raises(installer.InstallError, match="4.2.9 is untested"):
        installer.check_tested(untested, force=False)
    installer.check_tested(untested, force=True)


@pytest.mark.skipif(not AS_ROOT, reason="the root warning needs the tests to run as root")
def test_status_as_root_warns_about_personal_and_lua_plugins():
    proc = subprocess.run([sys.executable, "-c", "from nrsack.cli import main; main()", "wireshark", "status"],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "running as root" in proc.stderr and "Lua" in proc.stderr

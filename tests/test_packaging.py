"""The package as a user installs it: `pip wheel .`, then that wheel alone in a fresh virtual
environment (no repository beside it, no compiler needed after the build) runs analyze, check,
the compiled simulator and the dashboard on the bundled samples."""

import json
import os
import re
import subprocess
import sys
import time
import urllib.request

import pytest

from support.paths import REPO, source_copy

pytestmark = pytest.mark.slow


def run(*args, cwd, timeout=600, env=None):
    return subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=env, check=False)


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A fresh venv holding only the built wheel and its dependencies (at constraints.txt's versions)."""
    work = tmp_path_factory.mktemp("wheel")
    built = run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", work / "dist",
                source_copy(work / "src"), cwd=work)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (work / "dist").glob("nrsack-*.whl")
    made = run(sys.executable, "-m", "venv", work / "venv", cwd=work)
    assert made.returncode == 0, made.stderr
    pip = work / "venv" / "bin" / "pip"
    installed = run(pip, "install", "-q", "--disable-pip-version-check", "-c", REPO / "constraints.txt", wheel,
                    cwd=work, timeout=900)
    assert installed.returncode == 0, installed.stderr[-2000:]
    # run from an empty folder, so nothing of the repository can be imported by accident
    elsewhere = work / "elsewhere"
    elsewhere.mkdir()
    return work / "venv" / "bin", elsewhere


def test_the_installed_package_is_the_wheel_not_the_repository(venv):
    bin_dir, cwd = venv
    where = run(bin_dir / "python", "-c", "import nrsack, nrsack.samples; print(nrsack.__file__); "
                "print(nrsack.__version__)", cwd=cwd)
    location, version = where.stdout.split()
    assert str(REPO) not in location and "site-packages" in location
    assert version == (REPO / "VERSION").read_text().strip()


def test_analyze_and_check_a_bundled_sample(venv):
    bin_dir, cwd = venv
    sample = run(bin_dir / "python", "-c", "import nrsack.samples as s, pathlib; "
                 "print(pathlib.Path(s.__file__).parent / 'sctp-nrsack-fig4.pcap')", cwd=cwd).stdout.strip()
    analyzed = run(bin_dir / "nrsack", "analyze", sample, "--sndbuf", "8000", "--format", "json", cwd=cwd)
    assert analyzed.returncode == 0, analyzed.stderr
    flows = json.loads(analyzed.stdout)["flows"]
    assert flows and all(0 <= f["p_over_q"] <= 1 for f in flows)
    checked = run(bin_dir / "nrsack", "check", sample, "--format", "json", cwd=cwd)
    assert checked.returncode == 0, checked.stderr
    assert isinstance(json.loads(checked.stdout)["findings"], list)


def test_simulate_runs_the_compiled_loop(venv):
    bin_dir, cwd = venv
    # engine="c" raises rather than falling back to the Python model
    code = ("from nrsack.generator.sim.engine import PathConfig, SimConfig, simulate; "
            "t = simulate(SimConfig(protocol='sctp', ack='nrsack', sndbuf=16000, total_bytes=200_000, seed=1, "
            "paths=(PathConfig(bandwidth_bps=10e6, delay_s=0.01, loss=0.02),)), engine='c'); "
            "print(t.done_ns > 0)")
    compiled = run(bin_dir / "python", "-c", code, cwd=cwd)
    assert compiled.returncode == 0 and compiled.stdout.strip() == "True", compiled.stderr
    simulated = run(bin_dir / "nrsack", "generate", "simulate", "--protocol", "tcp", "--ack", "sack", "--sndbuf",
                    "16000", "--loss", "0.01", "--bytes", "100000", "--seed", "2", "--out", cwd / "run", cwd=cwd)
    assert simulated.returncode == 0, simulated.stderr
    assert (cwd / "run" / "sender.pcap").stat().st_size > 0


def test_dashboard_serves_the_bundled_samples(venv):
    bin_dir, cwd = venv
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    server = subprocess.Popen([str(bin_dir / "nrsack"), "dashboard", "--port", "0"], cwd=cwd, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = server.stdout.readline()
        url = re.search(r"open (http://127\.0\.0\.1:\d+/?)", line)
        assert url, line
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(url.group(1), timeout=5) as page:
                    body = page.read().decode()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
        assert "capture(s)" in line and int(line.split(":")[1].split()[0]) > 0
        assert "<html" in body.lower()
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_the_documents_the_help_texts_cite_come_with_the_wheel(venv):
    bin_dir, cwd = venv
    listed = run(bin_dir / "nrsack", "docs", cwd=cwd)
    assert listed.returncode == 0 and {"metrics", "rules", "simulator"} <= {line.split()[0] for line in listed.stdout.splitlines()}
    shown = run(bin_dir / "nrsack", "docs", "metrics", cwd=cwd)
    assert shown.returncode == 0 and shown.stdout == (REPO / "docs" / "metrics.md").read_text()

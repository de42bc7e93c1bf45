"""Quick fuzz run of the plugin's ASan + UBSan build in tshark (~22k corrupted packets, ~7k in chroots); the
>= 1M-packet run is bench/fuzz_dissector.sh. Zero sanitizer reports and zero crashes."""

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from support import fuzz, tshark
from support.hostile import build_all

pytestmark = pytest.mark.tshark

# Against the chroots' Wireshark releases (NRSACK_WIRESHARK) a third of the run: the plugin code is the
# same, what differs is the epan underneath, and `make test` runs two of them.
NATIVE = tshark.WIRESHARK_TARGET == "native"
SEEDS = range(1, 7) if NATIVE else range(1, 3)
COPIES = 4
MIN_PACKETS = 20000 if NATIVE else 6000


@pytest.fixture(scope="module")
def asan_plugin():
    so = tshark.build_c_plugin(sanitize=True)
    folder = tshark.c_plugin_folder(so)
    yield so, tshark.Plugin.c(folder)
    shutil.rmtree(folder, ignore_errors=True)


def test_sanitizer_build_is_instrumented_and_runtime_preloaded(asan_plugin):
    so, plugin = asan_plugin
    symbols = subprocess.run(["nm", "-D", str(so)], capture_output=True, text=True, check=True).stdout
    assert "__asan_report_load" in symbols and "__ubsan_handle_" in symbols
    env = fuzz.sanitizer_env()
    env["ASAN_OPTIONS"] += ":help=1"  # the runtime lists its flags at start-up, proving it is in the process
    sample = fuzz.sample_captures()[0]
    proc = tshark.run_tshark(["-c", "1", "-T", "fields", "-e", "nrsack.stream"], plugin, pcap=sample, env_extra=env,
                             timeout=120)
    assert "Available flags for AddressSanitizer" in proc.stdout + proc.stderr, "libasan was not preloaded"
    assert proc.stdout.strip().splitlines()[-1] == "0", "the sanitizer build did not load"


def test_corrupted_samples_raise_no_sanitizer_report(asan_plugin):
    _, plugin = asan_plugin
    work = Path(tempfile.mkdtemp(prefix="nrsack-fuzz-"))
    try:
        base, packets = fuzz.corpus(work, COPIES)
        report = fuzz.run(plugin, base, packets, SEEDS)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert report.runs == len(SEEDS) and report.packets >= MIN_PACKETS
    assert report.problems == []


def test_hostile_captures_raise_no_sanitizer_report(asan_plugin, tmp_path):
    """Every capture of the hostile suite (odd clocks, lengths the wire contradicts, far acks, DSS
    shapes, files cut short) through the ASan+UBSan build: no sanitizer speaks. tshark itself may
    refuse a damaged file (exit 2); that is its answer, not the plugin's fault."""
    _, plugin = asan_plugin
    reports = []
    for name, data, _ in build_all():
        path = tmp_path / f"{name}.pcap"
        path.write_bytes(data)
        proc = tshark.run_tshark(["-T", "fields", "-e", "frame.number", "-e", "nrsack.rtxq.bytes"], plugin,
                                 pcap=path, env_extra=fuzz.sanitizer_env(), timeout=300, check=False)
        marks = [m for m in fuzz.SANITIZER_MARKS if m in proc.stderr]
        if marks or proc.returncode < 0:
            reports.append(f"{name}: exit {proc.returncode} {marks}\n{proc.stderr[-1500:]}")
    assert reports == [], "\n".join(reports)

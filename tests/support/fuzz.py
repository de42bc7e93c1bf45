"""Fuzzing the nrsack plugin's sanitizer build (ASan + UBSan) inside tshark: every sample capture,
corrupted with `editcap -E PROBABILITY --seed SEED`, read with all nrsack fields and the nrsack,stat tap.

Used by the quick CI run (tests/test_dissector_fuzz.py) and the >= 1M-packet run (bench/fuzz_dissector.sh):

    base, n = fuzz.corpus(workdir, copies)       one pcapng of all sample captures, `copies` times over
    report = fuzz.run(plugin, base, n, seeds)    FuzzReport(packets, runs, problems)

A problem is any tshark run that exits non-zero or prints a sanitizer report. The plugin is a dlopen'ed
module, so the ASan runtime is preloaded into tshark (LD_PRELOAD); leak checking is off because the
subject is memory errors and undefined behaviour in the plugin, not tshark's exit-time frees.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from support import tshark

SANITIZER_MARKS = ("ERROR: AddressSanitizer", "runtime error:", "SUMMARY: UndefinedBehaviorSanitizer",
                   "AddressSanitizer:DEADLYSIGNAL", "ERROR: LeakSanitizer")


@dataclass
class FuzzReport:
    packets: int = 0
    runs: int = 0
    problems: list = field(default_factory=list)  # (seed, returncode, stderr excerpt)


def sample_captures() -> list[Path]:
    return sorted(p for p in (tshark.REPO / "sample-pcaps").rglob("*.pcap") if p.is_file())


def packet_count(path: Path) -> int:
    out = subprocess.run(["capinfos", "-c", "-M", "-T", str(path)], capture_output=True, text=True, check=True).stdout
    return int(out.strip().splitlines()[-1].split("\t")[-1])


def corpus(workdir: Path, copies: int = 1) -> tuple[Path, int]:
    """All sample captures concatenated `copies` times into one pcapng; returns (path, packets)."""
    workdir.mkdir(parents=True, exist_ok=True)
    once = workdir / "corpus-once.pcapng"
    subprocess.run(["mergecap", "-a", "-F", "pcapng", "-w", str(once), *map(str, sample_captures())], check=True)
    base = once
    if copies > 1:
        base = workdir / f"corpus-x{copies}.pcapng"
        subprocess.run(["mergecap", "-a", "-F", "pcapng", "-w", str(base), *[str(once)] * copies], check=True)
    return base, packet_count(base)


def sanitizer_env() -> dict:
    runtime = tshark.asan_runtime()
    if not runtime:
        raise RuntimeError("libasan not found (gcc -print-file-name=libasan.so)")
    return {
        "LD_PRELOAD": runtime,
        "ASAN_OPTIONS": "detect_leaks=0:halt_on_error=1:abort_on_error=0:exitcode=86",
        "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
    }


def problem_of(proc: subprocess.CompletedProcess) -> str | None:
    marks = [m for m in SANITIZER_MARKS if m in proc.stderr]
    if proc.returncode != 0 or marks:
        return f"exit {proc.returncode}, {marks or 'no sanitizer mark'}:\n{proc.stderr[-3000:]}"
    return None


def run(plugin: tshark.Plugin, base: Path, packets: int, seeds, probability: float = 0.02, workdir: Path | None = None,
        progress=None) -> FuzzReport:
    workdir = Path(workdir or base.parent)
    report = FuzzReport()
    fields = sum((["-e", f] for f in tshark.NRSACK_FIELDS), [])
    env = sanitizer_env()
    for seed in seeds:
        corrupt = workdir / f"fuzz-{seed}.pcapng"
        subprocess.run(["editcap", "-E", str(probability), "--seed", str(seed), str(base), str(corrupt)],
                       check=True, capture_output=True)
        proc = tshark.run_tshark(["-T", "fields", "-E", "occurrence=a", *fields, "-z", "nrsack,stat", "-z", "expert"],
                                 plugin, pcap=corrupt, env_extra=env, check=False, timeout=3600)
        report.runs += 1
        report.packets += packets
        problem = problem_of(proc)
        if problem:
            report.problems.append((seed, proc.returncode, problem))
        corrupt.unlink()
        if progress:
            progress(seed, report)
    return report

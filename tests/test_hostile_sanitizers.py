"""The analyzer's C reader and scoreboard built with AddressSanitizer and UndefinedBehaviorSanitizer
read every hostile capture (tests/support/hostile.py), from a file and from a pipe, through
analyze (a file also with --jobs 2) and check: no sanitizer report (C never reads out of bounds, no signed overflow)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.hostile import build_all

ROOT = Path(__file__).resolve().parent.parent

CHILD = r'''
import glob, importlib.util, os, pathlib, signal, sys, tempfile
sys.path.insert(0, sys.argv[2])
so = glob.glob(sys.argv[1] + "/nrsack/analyzer/_native*.so")[0]
spec = importlib.util.spec_from_file_location("nrsack.analyzer._native", so)
module = importlib.util.module_from_spec(spec)
sys.modules["nrsack.analyzer._native"] = module  # before nrsack.analyzer imports the installed one
spec.loader.exec_module(module)
from nrsack.analyzer.rules import checker as C
from nrsack.analyzer.read import events as E
from nrsack.analyzer.views import stream
from support.hostile import build_all
folder = pathlib.Path(tempfile.mkdtemp())
read = 0
for name, data, _ in build_all():
    path = folder / f"{name}.pcap"
    path.write_bytes(data)
    fifo = folder / f"{name}.fifo"
    os.mkfifo(fifo)
    if os.fork() == 0:  # a pipe too: the reader's pipe path (the first bytes given back)
        # if the reader dies (a sanitizer report), this writer must neither hold the report's pipes open
        # nor wait for a reader for ever
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        os.dup2(1, 2)
        signal.alarm(60)
        with open(fifo, "wb") as writer:
            try:
                writer.write(data)
            except BrokenPipeError:
                pass
        os._exit(0)
    for source in (str(path), str(fifo)):
        try:
            stream.analyze_to_files(source)
            if source == str(path):
                stream.analyze_to_files(source, jobs=2)  # the compiled parts run without the GIL, on threads
                C.check_capture(E.read_capture(source))
        except E.CaptureError:
            pass
        read += 1
    os.wait()
print("read", read)
'''


@pytest.mark.slow
def test_hostile_captures_under_asan_and_ubsan(tmp_path):
    flags = "-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
    build = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--build-lib", tmp_path / "lib",
                            "--build-temp", tmp_path / "tmp"], cwd=ROOT, capture_output=True, text=True,
                           env=dict(os.environ, CFLAGS=flags, LDFLAGS="-fsanitize=address,undefined"))
    assert build.returncode == 0, build.stderr
    runtime = [subprocess.run(["gcc", f"-print-file-name={lib}"], capture_output=True, text=True).stdout.strip()
               for lib in ("libasan.so", "libubsan.so")]
    run = subprocess.run([sys.executable, "-c", CHILD, tmp_path / "lib", ROOT / "tests"], capture_output=True,
                         text=True, timeout=900,
                         env=dict(os.environ, LD_PRELOAD=":".join(runtime), ASAN_OPTIONS="detect_leaks=0"))
    assert run.returncode == 0, run.stderr[-3000:]
    assert "runtime error" not in run.stderr and "AddressSanitizer" not in run.stderr, run.stderr[-3000:]
    assert run.stdout.split() == ["read", str(2 * len(build_all()))]  # every capture, from a file and a pipe

"""The dashboard as a browser's requests see it: callback requests (update, payload) and `nrsack dashboard` in
a process of its own whose peak memory is measured from outside (served_measured), shared by the hostile
tests and bench/bench_dashboard.py."""

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

UPLOAD_OUT = "..capture.options...capture.value...upload-message.children...upload-message.className.."


def payload(path):
    return "data:application/octet-stream;base64," + base64.b64encode(Path(path).read_bytes()).decode()


def update(url, output, inputs, state=(), timeout=60):
    """One callback request as the page sends it: -> (HTTP status, body)."""
    outputs = [dict(zip(("id", "property"), part.split("."))) for part in output.strip(".").split("...")]
    body = {"output": output, "outputs": outputs if len(outputs) > 1 else outputs[0], "inputs": [dict(zip(("id", "property", "value"), i)) for i in inputs],
            "state": [dict(zip(("id", "property", "value"), s)) for s in state],
            "changedPropIds": [f"{inputs[0][0]}.{inputs[0][1]}"]}
    request = urllib.request.Request(url + "_dash-update-component", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def upload(url, path, name, timeout=60):
    """The page's upload of the capture at `path` as `name`: -> (HTTP status, body)."""
    return update(url, UPLOAD_OUT, [("upload", "contents", payload(path))], [("upload", "filename", name)], timeout)


# The server is started by a small Python parent that reports its ru_maxrss: a child forked straight from a
# pytest worker starts with the worker's resident pages, and ru_maxrss keeps them (HELPERS.md, stop 26).
_PARENT = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
print(child.pid, child.stdout.readline().strip(), flush=True)
_, status, usage = os.wait4(child.pid, 0)
print(usage.ru_maxrss, os.waitstatus_to_exitcode(status), flush=True)
"""


@dataclass
class Served:
    url: str
    peak_mb: float = None   # the server's peak RSS, once it stopped
    exit_code: int = None


@contextmanager
def served_measured(*args, env=None):
    """`nrsack dashboard --port 0 ARGS` in a process of its own: yields a Served; when the block ends the
    server is stopped (SIGTERM, as a service manager does) and its peak RSS and exit code are filled in."""
    nrsack = shutil.which("nrsack", path=os.path.dirname(sys.executable)) or shutil.which("nrsack")
    parent = subprocess.Popen([sys.executable, "-c", _PARENT, nrsack, "dashboard", "--port", "0", *map(str, args)],
                              stdout=subprocess.PIPE, text=True, env=env)
    pid, line = parent.stdout.readline().split(" ", 1)
    served = Served(line.split("open ", 1)[1].split()[0] if "open " in line else "")
    try:
        assert served.url, f"the dashboard did not start: {line!r}"
        yield served
    finally:
        try:
            os.kill(int(pid), signal.SIGTERM)
        except ProcessLookupError:  # it ended on its own (the parent reaped it)
            pass
        maxrss_kb, code = map(int, parent.stdout.readline().split())
        parent.wait(timeout=60)
        served.peak_mb, served.exit_code = maxrss_kb / 1024, code

"""The dashboard and scripts/tshark-nrsack.sh under hostile use : callback inputs of the
wrong JSON type get a 400 with a message (never a 500), a heavy check does not stall other users,
uploads are pruned by age and count, and neither leaves its temporary folders behind, whatever way
it ends."""

import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from nrsack.dashboard import app as APP, library as LIB
from support.dashboard import UPLOAD_OUT, payload, served_measured, update, upload
from support.hostile import many_blocks_capture, write_flood
from support.paths import REPO, SAMPLES



@pytest.fixture
def served(tmp_path):
    library = LIB.Library([SAMPLES], upload_dir=tmp_path / "uploads")
    app = APP.create_app(library=library)
    server, url = APP.serve_in_background(app)
    yield url, library
    server.shutdown()
    library.close()


@pytest.mark.parametrize("contents, filename", [({"a": 1}, "x.pcap"), ("data:,AAAA", ["x.pcap"]), (12, 3),
                                                ([1, 2], {"name": "x"})])
def test_an_upload_with_fields_of_the_wrong_type_is_a_400(served, contents, filename):
    url, library = served
    status, body = update(url, UPLOAD_OUT, [("upload", "contents", contents)], [("upload", "filename", filename)])
    assert status == 400 and body.startswith("bad request: upload:"), (status, body)
    assert not any(c.uploaded for c in library.captures.values())


def test_a_request_dash_cannot_parse_is_a_400(served):
    url, _ = served
    body = json.dumps({"output": UPLOAD_OUT, "outputs": [], "inputs": [], "state": [], "changedPropIds": []})
    request = urllib.request.Request(url + "_dash-update-component", body.encode(), {"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as answer:
        urllib.request.urlopen(request, timeout=60)
    assert answer.value.code == 400 and answer.value.read().decode().startswith("bad request:")


def test_a_selection_of_the_wrong_shape_is_a_400_and_a_good_one_a_200(served):
    url, library = served
    out = "..kpis.children...blocking.data.."
    assert update(url, out, [("selection", "data", ["c0", "0a"])])[0] == 400
    status, body = update(url, out, [("selection", "data", {"capture": 5})])
    assert status == 400 and "malformed input" in body
    good = update(url, UPLOAD_OUT, [("upload", "contents", payload(SAMPLES / "sctp-nrsack-fig4.pcap"))],
                  [("upload", "filename", "fig4.pcap")])
    assert good[0] == 200 and "uploaded and analysed" in good[1]


def test_a_heavy_check_does_not_stall_other_users(tmp_path):
    heavy = tmp_path / "heavy.pcap"
    many_blocks_capture(heavy, 8000, 2)
    library = LIB.Library([heavy, SAMPLES / "sctp-nrsack-fig4.pcap"], upload_dir=tmp_path / "uploads")
    heavy_id, light_id = list(library.captures)
    order = []
    checking = threading.Thread(target=lambda: (library.findings(heavy_id), order.append("heavy")))
    checking.start()
    while not library._pending and checking.is_alive():  # the heavy analysis has begun
        time.sleep(0.01)
    library.analysis(light_id)
    order.append("light")
    checking.join()
    assert order == ["light", "heavy"]
    library.close()


def test_uploads_are_pruned_by_count_and_by_age(tmp_path):
    library = LIB.Library([SAMPLES], upload_dir=tmp_path / "uploads", kept_uploads=2)
    names = [f"u{k}.pcap" for k in range(4)]
    for name in names:
        library.upload(payload(SAMPLES / "sctp-nrsack-fig4.pcap"), name)
    uploads = [c for c in library.captures.values() if c.uploaded]
    assert [c.name for c in uploads] == names[-2:]
    assert sorted(p.name for p in (tmp_path / "uploads").iterdir()) == sorted(Path(c.path).name for c in uploads)
    library.upload_max_age_s = 0  # every earlier upload is now too old
    library.upload(payload(SAMPLES / "sctp-nrsack-fig4.pcap"), "last.pcap")
    assert [c.name for c in library.captures.values() if c.uploaded] == ["last.pcap"]
    assert len(list((tmp_path / "uploads").iterdir())) == 1
    library.close()


def test_the_prune_keeps_the_number_it_says(tmp_path):
    library = LIB.Library([SAMPLES], upload_dir=tmp_path / "uploads")
    for k in range(1, LIB.KEPT_UPLOADS + 5):
        library.upload(payload(SAMPLES / "sctp-nrsack-fig4.pcap"), f"u{k}.pcap")
        uploads = [c.name for c in library.captures.values() if c.uploaded]
        assert uploads == [f"u{j}.pcap" for j in range(max(k - LIB.KEPT_UPLOADS, 0) + 1, k + 1)]
        assert len(list((tmp_path / "uploads").iterdir())) == len(uploads)
    library.close()


def test_twenty_concurrent_uploads_all_succeed_and_the_prune_keeps_its_count(served):
    # each upload's capture is in use until its answer is made: a concurrent upload's prune waits for it
    url, library = served
    answers = [None] * 20

    def send(k):
        answers[k] = update(url, UPLOAD_OUT, [("upload", "contents", payload(SAMPLES / "sctp-nrsack-fig4.pcap"))],
                            [("upload", "filename", f"u{k}.pcap")])

    threads = [threading.Thread(target=send, args=(k,)) for k in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [status for status, _ in answers] == [200] * 20, [a for a in answers if a[0] != 200][:2]
    assert all("uploaded and analysed" in body for _, body in answers)
    assert len([c for c in library.captures.values() if c.uploaded]) == LIB.KEPT_UPLOADS
    assert len(list(library.upload_dir.iterdir())) == LIB.KEPT_UPLOADS


FLOOD_FLOWS = 100_000
# The server's peak RSS with an upload of 100,000 never-closed data flows (32 MB): 2,540 MB when the dashboard
# analysed uploads in memory; streamed (dashboard/stored.py) about 800 MB, most of it the analyzer's open-flow
# budget (50,000 flows held open) and the upload's own bytes. bench/bench_dashboard.py --flood measures 200,000.
FLOOD_BOUND_MB = 1300


@pytest.mark.slow  # a server process analysing 100,000 flows: a minute
def test_an_upload_of_a_flood_of_flows_is_served_in_bounded_memory(tmp_path):
    capture = tmp_path / "flood.pcap"
    write_flood(capture, FLOOD_FLOWS, "unacked")
    with served_measured(env=dict(os.environ, TMPDIR=str(tmp_path))) as served:
        status, body = upload(served.url, capture, "flood.pcap", timeout=1200)
        assert status == 200 and "uploaded and analysed" in body, (status, body[:300])
        capture_id = json.loads(body)["response"]["capture"]["value"]
        status, body = update(served.url, "..flows.data...flows.active_cell...flows-message.children..",
                              [("capture", "value", capture_id), ("sndbuf", "value", None)], timeout=600)
        flows = json.loads(body)["response"]
        assert status == 200 and len(flows["flows"]["data"]) == APP.LISTED_ENTRIES
        assert f"{FLOOD_FLOWS} sender direction(s), the first {APP.LISTED_ENTRIES} listed" in flows["flows-message"]["children"]
        row = flows["flows"]["data"][-1]
        assert row["bytes"] == 100 and row["sender → receiver"].endswith("→ 198.51.100.2:80")  # write_flood's server
        selection = {"capture": capture_id, "sndbuf": None, "entry": row["id"]}
        status, body = update(served.url, "..ladder-graph.figure...ladder-caption.children..",
                              [("selection", "data", selection), ("focus", "data", None)], timeout=600)
        ladder = json.loads(body)["response"]["ladder-graph"]["figure"]
        assert status == 200 and len(ladder["layout"]["meta"]["frames"]) == 4  # the flow's SYN, SYN-ACK, ACK, data
    assert served.exit_code == 0 and served.peak_mb < FLOOD_BOUND_MB, (served.exit_code, served.peak_mb)


UNFIT_BODIES = [{"output": "x"}, {}, [], "x", 5, None, {"output": UPLOAD_OUT, "outputs": 3},
                {"output": "flows.data", "inputs": [{"id": "capture", "property": "value", "value": "c0"}]},
                {"output": "..flows.data...flows.active_cell...flows-message.children..", "inputs": 7},
                {"output": "..flows.data...flows.active_cell...flows-message.children..", "outputs": [],
                 "inputs": [{}], "changedPropIds": 5},
                {"output": "..flows.data...flows.active_cell...flows-message.children..",
                 "outputs": [{"id": "flows", "property": "data"}],  # one output of the callback's three
                 "inputs": [{"id": "capture", "property": "value", "value": "c0"},
                            {"id": "sndbuf", "property": "value", "value": None}], "changedPropIds": ["capture.value"]}]


def test_every_body_that_fits_no_callback_is_a_400_without_a_traceback(served, capfd):
    url, _ = served
    for body in UNFIT_BODIES:
        request = urllib.request.Request(url + "_dash-update-component", json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(request, timeout=60)
        assert answer.value.code == 400 and answer.value.read().decode().startswith("bad request:"), body
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.slow  # processes started and stopped: seconds each
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_the_dashboard_removes_its_upload_folder_when_stopped(tmp_path, stop):
    env = dict(os.environ, TMPDIR=str(tmp_path))
    process = subprocess.Popen([sys.executable, "-c", "from nrsack.cli import main; main()", "dashboard", "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = process.stdout.readline()
    url = re.search(r"open (http://\S+/)", line).group(1)
    folders = list(tmp_path.glob("nrsack-dashboard-*"))
    assert len(folders) == 1
    status, _ = update(url, UPLOAD_OUT, [("upload", "contents", payload(SAMPLES / "sctp-nrsack-fig4.pcap"))],
                       [("upload", "filename", "fig4.pcap")])
    assert status == 200 and any(folders[0].iterdir())
    process.send_signal(stop)
    process.wait(timeout=30)
    assert not folders[0].exists(), process.stderr.read()


@pytest.fixture
def script_folder():
    """The script's TMPDIR: as root, tshark runs as nobody, who cannot pass pytest's 0700 tmp_path."""
    folder = Path(tempfile.mkdtemp(prefix="nrsack-script-test."))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def script_env(script_folder, nrsack_c_plugin):
    return dict(os.environ, TMPDIR=str(script_folder))


def leftovers(folder):
    return sorted(p.name for p in folder.glob("nrsack-*"))


@pytest.mark.tshark
def test_tshark_script_cleans_up_when_tshark_fails(script_folder, script_env):
    result = subprocess.run(["bash", REPO / "scripts" / "tshark-nrsack.sh", "-r", script_folder / "absent.pcap"],
                            capture_output=True, env=script_env)
    assert result.returncode != 0 and leftovers(script_folder) == []


@pytest.mark.tshark
def test_tshark_script_cleans_up_when_it_ends_normally(script_folder, script_env):
    result = subprocess.run(["bash", REPO / "scripts" / "tshark-nrsack.sh", "-r", "-", "-c", "1"],
                            input=(SAMPLES / "sctp-nrsack-fig4.pcap").read_bytes(), capture_output=True, env=script_env)
    assert result.returncode == 0 and b"INIT" in result.stdout and leftovers(script_folder) == []


@pytest.mark.tshark
def test_tshark_script_cleans_up_and_stops_tshark_on_sigterm(script_folder, script_env):
    fifo = script_folder / "never-written.fifo"
    os.mkfifo(fifo, 0o666)
    script = subprocess.Popen(["bash", REPO / "scripts" / "tshark-nrsack.sh", "-r", fifo], env=script_env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while len(leftovers(script_folder)) < 1 + (os.getuid() == 0) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # tshark is waiting for the FIFO's writer
    assert running_with(fifo)
    script.send_signal(signal.SIGTERM)
    assert script.wait(timeout=30) == 143
    assert leftovers(script_folder) == []
    # the script's trap signals tshark and exits without waiting for it: tshark may take a moment to go.
    # Watched through /proc, not by opening the FIFO (a writer's open would end tshark's read itself)
    deadline = time.monotonic() + 30
    while running_with(fifo) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not running_with(fifo), "tshark outlived the script"
    with pytest.raises(OSError) as no_reader:  # tshark went with the script: nobody reads the FIFO
        os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    assert no_reader.value.errno == errno.ENXIO


def running_with(path) -> list:
    """The processes whose command line names `path` (tshark, or setpriv starting it as nobody)."""
    found = []
    for process in Path("/proc").iterdir():
        if process.name.isdigit():
            try:
                if str(path).encode() in (process / "cmdline").read_bytes().split(b"\0"):
                    found.append(int(process.name))
            except OSError:  # (ended meanwhile)
                pass
    return found

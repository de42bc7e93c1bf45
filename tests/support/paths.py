"""Where the tests find the repository and its sample captures (NRSACK_SAMPLE_PCAPS overrides the
bundled sample-pcaps/, e.g. to run the suites on a copy)."""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAMPLES = Path(os.environ.get("NRSACK_SAMPLE_PCAPS", REPO / "sample-pcaps"))
CONFORMANCE = SAMPLES / "conformance"
# real-stack captures from `nrsack lab run`, each with the stack's truth (NAME.truth.json) instead of a
# hand-written expected file and golden output: not generated timelines
LAB_SAMPLES = SAMPLES / "lab"
# lab runs kept whole for a test of their own (gzip: the analyzer and tshark read it as it is), each a folder
# with the run's sender.pcap.gz, truth.json and config.json as `nrsack lab run` wrote them
STORED_RUNS = REPO / "tests" / "captures"


def timeline_pcaps():
    """The sample captures `nrsack generate timelines` writes (all but the lab's)."""
    return sorted(p for p in SAMPLES.rglob("*.pcap") if LAB_SAMPLES not in p.parents)


def source_copy(dest: Path) -> Path:
    """The repository's tracked files copied to dest: pip builds a local folder in place (its build/),
    so two builds of REPO itself at once, in two test workers, would overwrite each other's files."""
    import subprocess

    tracked = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        source, target = REPO / name, dest / name
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
            target.chmod(source.stat().st_mode & 0o777)  # the scripts stay executable
    return dest

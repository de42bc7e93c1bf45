"""`nrsack analyze` of several independent captures: each analysed as `analyze CAPTURE` would stream it,
one by one in this process or spread over a Dask cluster (the sweep extra: generator/sim/sweep.py's
runner, a local cluster of --workers processes or the one at --scheduler), then put together: the
tables as one dataset partitioned by capture (OUT/rtxq/capture=NAME/part-0.parquet, Hive layout), one
summary with a `capture` column first, one JSON document {"captures": [each capture's document]}.

A worker writes its capture's tables into OUT itself: OUT must be a folder every worker can write
(the same machine, or a shared file system) when the cluster is elsewhere.
"""

import dataclasses
from dataclasses import dataclass
import os
from pathlib import Path
import shutil

from nrsack.analyzer.read import events as E


@dataclass
class Job:
    """One capture's analysis, as a worker is given it (picklable)."""

    capture: object       # a path or events.Ring
    label: str            # its partition's name in the dataset
    sndbuf: int = None
    flow_filter: str = None
    out_dir: str = None   # the dataset's folder (tables wanted), or None
    fmt: str = "csv"
    check: bool = False
    severity: str = "note"
    max_open_flows: int = None
    jobs: int = 1         # threads for this capture (--jobs; state/workers.py)


def analyze_job(job: Job) -> dict:
    """One capture -> {"label", "analysis" (StreamedAnalysis, entries kept), "found" (--check's findings),
    "files", "error" (why it is unusable, else None)}.
    Runs on a Dask worker: everything it returns is picklable."""
    from nrsack.analyzer.views import formats, stream
    from nrsack.analyzer.views.cli import check_findings, open_flows

    keep = None if job.flow_filter is None else (lambda entry_id: formats.id_matches(entry_id, job.flow_filter))
    checker = None
    if job.check:
        from nrsack.analyzer.rules.checker import Checker

        checker = Checker()
    part = None if job.out_dir is None else Path(job.out_dir) / f".capture={job.label}"
    out = {"label": job.label, "analysis": None, "found": None, "files": [], "error": None}
    try:
        result = stream.analyze_to_files(job.capture, part, job.fmt, job.sndbuf, keep,
                                         observe=None if checker is None else checker.attach, jobs=job.jobs,
                                         **open_flows(job.max_open_flows))
    except E.CaptureError as error:
        if part is not None:
            shutil.rmtree(part, ignore_errors=True)
        out["error"] = str(error)
        return out
    if part is not None:
        for table in ("rtxq", "blocking"):
            into = Path(job.out_dir) / table / f"capture={job.label}"
            into.mkdir(parents=True, exist_ok=True)
            os.replace(part / f"{table}.{job.fmt}", into / f"part-0.{job.fmt}")
            out["files"].append(into / f"part-0.{job.fmt}")
        shutil.rmtree(part)
    result.entries = list(result.entries)  # a run's own live in its temporary file
    result.files = []
    out["analysis"] = result
    if checker is not None:
        out["found"] = list(check_findings(checker, job.flow_filter, job.severity))
    return out


def labels(captures) -> list:
    """Each capture's partition name: its file's (a ring: its folder's or its first file's) name, made
    unique with -2, -3 ... in the order given."""
    names, seen = [], {}
    for capture in captures:
        path = capture.name if isinstance(capture, E.Ring) and os.path.isdir(capture.name) else \
            capture.paths[0] if isinstance(capture, E.Ring) else capture
        name = os.path.basename(os.path.normpath(path))
        seen[name] = seen.get(name, 0) + 1
        names.append(name if seen[name] == 1 else f"{name}-{seen[name]}")
    return names


def run_jobs(jobs, workers=None, scheduler=None, progress=None) -> list:
    """analyze_job of every job, in their order: in this process without workers or scheduler, else on a
    local Dask cluster of `workers` processes or the one at `scheduler`. progress(): after each capture."""
    import importlib.util

    from nrsack.generator.sim import sweep

    if scheduler is not None and importlib.util.find_spec("distributed") is None:
        raise E.CaptureError("a Dask scheduler needs the sweep extra: pip install 'nrsack[sweep]'")
    if scheduler is not None:  # its workers started in folders of their own: paths from the root
        jobs = [dataclasses.replace(job, capture=_absolute(job.capture),
                                    out_dir=None if job.out_dir is None else os.path.abspath(job.out_dir))
                for job in jobs]

    serial = workers is None and scheduler is None
    try:
        done = sweep.run(jobs, scheduler=scheduler, workers=workers, serial=serial, progress=progress,
                         task=_boxed)
    except OSError as error:  # a scheduler that cannot be reached
        raise E.CaptureError(f"Dask scheduler {scheduler}: {error}") from None
    return done["result"].tolist()


def _absolute(capture):
    """The capture with its files' absolute paths, under the name it was given (a file: a Ring of one)."""
    if isinstance(capture, E.Ring):
        return E.Ring(tuple(map(os.path.abspath, capture.paths)), capture.name)
    return E.Ring((os.path.abspath(capture),), capture)


def _boxed(job):
    """analyze_job's dict in one column: sweep.run makes a table of its tasks' dicts, whose columns would
    turn a None into NaN."""
    return {"result": analyze_job(job)}


def merged_summary(results, flow_filter=None):
    """Every usable capture's summary rows (those --flow names), `capture` first, as one table made as
    one capture's is (scoreboard.summary_frame)."""
    from nrsack.analyzer.state import scoreboard as A
    from nrsack.analyzer.views import formats

    entries, captures = [], []
    for result in results:
        mine = list(result["analysis"].all_entries())
        entries += mine
        captures += [result["label"]] * len(mine)
    summary = A.summary_frame(entries)
    summary.insert(0, "capture", captures)
    if flow_filter is not None:
        summary = summary[summary["id"].map(lambda entry_id: formats.id_matches(entry_id, flow_filter)).astype(bool)]
    return summary

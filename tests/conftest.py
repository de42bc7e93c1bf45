"""Session-wide checks and fixtures: the compiled parts are current, and the C Wireshark plugin
(dissector/) is built once per session."""

import ast
import importlib.util
import re
import shutil
from pathlib import Path

import pytest

from support import tshark
from support.paths import REPO


def compiled_sources():
    """{extension module: the files it is built from}, read from setup.py's Extension(...) calls (sources
    and depends, never a second list to keep in step) with the headers they include ("..." in their
    include_dirs or beside them): an editable install does not rebuild an extension when these change."""
    tree = ast.parse((REPO / "setup.py").read_text())
    compiled = {}
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "Extension":
            module = ast.literal_eval(call.args[0])
            options = {k.arg: ast.literal_eval(k.value) for k in call.keywords
                       if k.arg in ("sources", "depends", "include_dirs")}
            folders = [REPO / d for d in options.get("include_dirs", [])]
            files, todo = set(), [REPO / f for f in options.get("sources", []) + options.get("depends", [])]
            while todo:
                source = todo.pop()
                if source in files or not source.is_file():
                    continue
                files.add(source)
                for header in re.findall(r'^\s*#\s*include\s+"([^"]+)"', source.read_text(), re.M):
                    todo += [folder / header for folder in (source.parent, *folders) if (folder / header).is_file()]
            compiled[module] = sorted(str(f.relative_to(REPO)) for f in files)
    return compiled


def pytest_sessionstart(session):
    refuse_stale_builds()
    # NRSACK_WIRESHARK=trixie|forky: make (or unpack) that chroot once, before any test, so a broken
    # mirror fails the run loudly at its start rather than in every test.
    if tshark.WIRESHARK_TARGET != "native" and not tshark.target_unavailable():
        tshark.prepare_target()


def refuse_stale_builds():
    for module, sources in compiled_sources().items():
        spec = importlib.util.find_spec(module)
        if spec is None or spec.origin is None:
            raise pytest.UsageError(f"{module} is not built: run `make build`")
        built = Path(spec.origin).stat().st_mtime
        newer = [s for s in sources if (REPO / s).exists() and (REPO / s).stat().st_mtime > built]
        if newer and str(REPO) in spec.origin:
            raise pytest.UsageError(f"{module} is older than {', '.join(newer)}: run `make build`")


@pytest.fixture(scope="session")
def nrsack_c_plugin():
    """Plugin.c(...) of a fresh CMake build of dissector/ into build/dissector."""
    # not under pytest's tmp_path: its 0700 parents would hide the plugin from the unprivileged tshark
    folder = tshark.c_plugin_folder(tshark.build_c_plugin())
    yield tshark.Plugin.c(folder)
    shutil.rmtree(folder, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    """The chroot tests (minutes of downloads) go first: pytest-xdist hands out the collection in
    consecutive batches, so the first worker starts them at once and the others run the rest meanwhile,
    instead of one worker starting them when everything else is done. A chroot target this machine
    cannot run (no root, no debootstrap) skips, saying why."""
    items.sort(key=lambda item: item.get_closest_marker("chroot") is None)  # stable: the rest keep their order
    reason = tshark.target_unavailable() if tshark.WIRESHARK_TARGET != "native" else None
    for item in items if reason else []:
        item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="module")
def vector_pcaps(tmp_path_factory):
    """support/vectors.py's hand-built captures, written once a module: name -> path."""
    from support import pcaps
    from support.vectors import VECTORS

    folder = tmp_path_factory.mktemp("lua-vectors")
    return {name: Path(pcaps.write(folder / f"{name}.pcap", build())) for name, build in VECTORS.items()}

"""`nrsack lab run` from the tests, through the real command line."""

import json

from click.testing import CliRunner

from nrsack.cli import main


def lab_run(out, *args):
    """Runs the lab into `out`; its truth.json."""
    result = CliRunner().invoke(main, ["lab", "run", *args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    return json.loads((out / "truth.json").read_text())



def root_lab_run(tmp_path_factory, stack, args):
    """A run of a stack that needs namespaces (root) for a module's tests: (folder, truth.json), or
    a skip saying why it cannot run here."""
    import pytest

    from nrsack.lab.namespaces import namespaces_unavailable

    reason = namespaces_unavailable(stack)
    if reason:
        pytest.skip(reason)
    out = tmp_path_factory.mktemp(stack)
    return out, lab_run(out, "--stack", stack, *args)

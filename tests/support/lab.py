"""`nrsack lab run` from the tests, through the real command line."""

import json

from click.testing import CliRunner

from nrsack.cli import main


def lab_run(out, *args):
    """Runs the lab into `out`; its truth.json."""
    result = CliRunner().invoke(main, ["lab", "run", *args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    return json.loads((out / "truth.json").read_text())


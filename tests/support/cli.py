"""`nrsack` commands run in-process (click's CliRunner) for the tests."""

from click.testing import CliRunner

from nrsack.cli import main


def invoke(*args):
    """The command's result; a crash (an exception other than its exit) or a traceback fails the test."""
    result = CliRunner().invoke(main, [str(a) for a in args])
    # a SystemExit is the command's exit code; anything else escaped it (a crash)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    return result

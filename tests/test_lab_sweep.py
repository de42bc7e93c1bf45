"""`nrsack lab sweep`: a small grid on usrsctp through a local Dask cluster; the simulator's tables."""

import pandas as pd
import pytest
from click.testing import CliRunner

from nrsack.cli import main

pytestmark = pytest.mark.slow


def test_sweep_writes_runs_gain_and_regions(tmp_path):
    result = CliRunner().invoke(main, ["lab", "sweep", "--sndbuf", "8192", "--loss", "0,0.02", "--delay", "2",
                                       "--bytes", "100000", "--seeds", "1", "--workers", "2",
                                       "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    runs = pd.read_csv(tmp_path / "runs.csv")
    assert len(runs) == 4 and runs.complete.all()
    assert set(runs.ack) == {"sack", "nrsack"}
    assert (runs[runs.loss > 0].lost_forward > 0).all() and (runs[runs.loss == 0].lost_forward == 0).all()
    gain = pd.read_csv(tmp_path / "gain.csv")
    assert list(gain.loss) == [0.0, 0.02] and (gain.T_sack_mbps > 0).all() and (gain.T_nr_mbps > 0).all()
    assert (tmp_path / "regions.csv").exists()
    for name in ("sack-b8192-l0.02-d2-s1", "nrsack-b8192-l0-d2-s1"):
        assert (tmp_path / "runs" / name / "sender.pcap").stat().st_size > 100_000
    # the dashboard opens the lab's sweep folder as it opens the simulator's: one heat map of the gains
    from nrsack.dashboard import app as APP, library as LIB

    board = APP.Dashboard(LIB.Library([tmp_path]))
    options, group = board.sweep_groups("0")
    fig, _ = board.sweep_view("0", group)
    assert len(options) == 1 and fig.data[0].type == "heatmap"
    assert [round(v, 6) for v in fig.data[0].z[0]] == [round(v, 6) for v in gain.sort_values("loss").gain_pct]


def test_sweep_bad_grid_is_a_usage_error(tmp_path):
    result = CliRunner().invoke(main, ["lab", "sweep", "--loss", "0,2", "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and "loss" in result.output
    assert not (tmp_path / "x").exists()


@pytest.mark.root
def test_linux_tcp_sweep_tables_the_whatif(tmp_path):
    from nrsack.lab.namespaces import namespaces_unavailable

    reason = namespaces_unavailable()
    if reason:
        pytest.skip(reason)
    result = CliRunner().invoke(main, ["lab", "sweep", "--stack", "linux-tcp", "--sndbuf", "16384",
                                       "--loss", "0,0.02", "--delay", "5", "--bandwidth", "20", "--bytes", "300000",
                                       "--seeds", "1", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    runs = pd.read_csv(tmp_path / "runs.csv")
    assert len(runs) == 2 and runs.complete.all() and set(runs.ack) == {"sack"} and set(runs.protocol) == {"tcp"}
    assert (runs.lost_forward > 0).tolist() == [False, True]
    whatif = pd.read_csv(tmp_path / "whatif.csv").set_index("loss")
    assert (whatif.max_rtxq_whatif_kb <= whatif.max_rtxq_sack_kb).all()
    # no loss, no SACK blocks: nothing to free; under loss the SACKed data held is what NR-SACKs free
    assert whatif.freed_pct[0.0] == 0 and whatif.freed_pct[0.02] > 0
    assert whatif.sacked_share_pct[0.0] == 0 and 0 < whatif.sacked_share_pct[0.02] < 100
    assert whatif.app_blocked_over_q.min() > 0.3 and not (tmp_path / "gain.csv").exists()
    assert (whatif.p_over_q <= whatif.b_over_q).all() and (whatif.b_over_q <= whatif.app_blocked_over_q).all()


def test_linux_tcp_sweep_runs_here_only(tmp_path):
    result = CliRunner().invoke(main, ["lab", "sweep", "--stack", "linux-tcp", "--scheduler", "tcp://10.9.9.9:8786",
                                       "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and "one at a time" in result.output
    assert not (tmp_path / "x").exists()

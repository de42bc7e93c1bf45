"""The papers' qualitative results on a small sweep (SCTP paper, section 5): NR-SACK throughput is
at least SACK's, there is no gain without loss, the gain grows as the send buffer shrinks, and
with BDP >= send buffer the bandwidth does not change the gain."""

import subprocess
import sys

import pandas as pd
import pytest

from nrsack.generator.sim import sweep as sw

SEEDS = 8
COMMON = dict(delay_ms=10.0, nbytes=2_000_000)  # BDP at 20 Mbit/s: 50 kB >= every buffer below


@pytest.fixture(scope="module", params=["rfc", "ns2"])
def table(request):
    """The papers' qualitative results must hold under every profile."""
    common = dict(COMMON, profile=request.param)
    points = sw.grid(sndbufs=(8000, 32000), losses=(0.0, 0.01), seeds=SEEDS,
                     bandwidths_mbps=(20.0,), **common)
    points += sw.grid(sndbufs=(8000,), losses=(0.01,), seeds=SEEDS, bandwidths_mbps=(40.0,), **common)
    return sw.gain_table(sw.run(points, serial=True)).set_index(["sndbuf", "bandwidth_mbps", "loss"])


def test_nrsack_never_worse_than_sack(table):
    assert (table.seeds == SEEDS).all()
    for key, row in table.iterrows():
        assert row.gain_pct >= -row.gain_pct_std, f"{key}: gain {row.gain_pct:.2f} %"


def test_no_gain_without_loss(table):
    lossless = table.xs(0.0, level="loss")
    assert (lossless.gain_pct == 0).all()
    assert (lossless.p_over_q_sack == 0).all()
    # without loss the transfer is buffer-limited: B per round trip
    assert lossless.T_sack_mbps.loc[(32000, 20.0)] > 3 * lossless.T_sack_mbps.loc[(8000, 20.0)]


def test_gain_grows_as_the_send_buffer_shrinks(table):
    small, large = table.loc[(8000, 20.0, 0.01)], table.loc[(32000, 20.0, 0.01)]
    assert small.gain_pct > 0
    assert small.gain_pct > large.gain_pct
    # and the send buffer blocks longer inside loss recovery, the p/q the papers relate gain to
    assert small.p_over_q_sack > large.p_over_q_sack


def test_bandwidth_does_not_change_the_gain_when_bdp_exceeds_the_buffer(table):
    slow, fast = table.loc[(8000, 20.0, 0.01)], table.loc[(8000, 40.0, 0.01)]
    assert abs(slow.gain_pct - fast.gain_pct) <= max(1.0, slow.gain_pct_std, fast.gain_pct_std)
    # the throughputs themselves barely move either: the buffer, not the link, limits them
    assert abs(fast.T_sack_mbps / slow.T_sack_mbps - 1) < 0.05


def test_region_of_gain(table):
    t = table.reset_index()
    regions = sw.regions_of_gain(t, x=1.0)
    small = regions[(regions.sndbuf == 8000) & (regions.bandwidth_mbps == 20.0)]
    assert small.loss_from.tolist() == [0.01] and small.loss_to.tolist() == [0.01]


@pytest.mark.slow
def test_dask_local_cluster_gives_the_serial_results():
    points = sw.grid(sndbufs=(8000,), losses=(0.02,), seeds=2, delay_ms=10.0, nbytes=200_000,
                     bandwidths_mbps=(20.0,))
    serial = sw.run(points, serial=True)
    parallel = sw.run(points, workers=2)
    pd.testing.assert_frame_equal(serial, parallel)


def test_without_dask_a_local_process_pool_gives_the_serial_results(tmp_path):
    # the sweep extra not installed: `import dask` fails (None in sys.modules makes it fail)
    script = """
import sys
sys.modules["dask"] = sys.modules["dask.distributed"] = None
import pandas as pd
from nrsack.generator.sim import sweep as sw
points = sw.grid(sndbufs=(8000,), losses=(0.02,), seeds=2, delay_ms=10.0, nbytes=100_000, bandwidths_mbps=(20.0,))
pd.testing.assert_frame_equal(sw.run(points, serial=True), sw.run(points, workers=2))
try:
    sw.run(points, scheduler="tcp://127.0.0.1:1")
except RuntimeError as error:
    print(error)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "nrsack[sweep]" in done.stdout


@pytest.mark.parametrize("protocol", ["cmt", "mptcp"])
def test_multipath_nrsack_never_worse_than_sack(protocol):
    """CMT (one send buffer over two paths) and MPTCP (data-level NR blocks beside subflow
    SACKs): NR-SACK gains when a path loses, within the seeds' spread."""
    points = sw.grid(protocol=protocol, sndbufs=(16000, 64000), losses=(0.02,), seeds=3,
                     bandwidths_mbps=(20.0,), delay_ms=10.0, nbytes=400_000, paths=2)
    table = sw.gain_table(sw.run(points, serial=True))
    for _, row in table.iterrows():
        assert row.gain_pct >= -row.gain_pct_std, f"{protocol} {row.sndbuf}: {row.gain_pct:.1f} %"
    assert table.gain_pct.mean() > 0

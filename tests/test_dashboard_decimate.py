"""Server-side decimation: the drawn envelope of a step function is the full series' envelope."""

import numpy as np
import pytest

from nrsack.dashboard import decimate as D


def random_steps(n, seed):
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.exponential(1.0, n))
    y = np.cumsum(rng.integers(-1000, 1001, n)).astype(np.int64)
    return t, y


@pytest.mark.parametrize("n, buckets, seed", [(50_000, 300, 1), (10_001, 97, 2), (200_000, 1200, 3)])
def test_every_bucket_keeps_its_first_min_max_and_last(n, buckets, seed):
    t, y = random_steps(n, seed)
    keep = D.minmax_indices(t, y, buckets)
    assert len(keep) <= 4 * buckets and np.all(np.diff(keep) > 0)
    width = (t[-1] - t[0]) / buckets
    bucket = np.minimum(((t - t[0]) / width).astype(int), buckets - 1)
    for b in np.unique(bucket):
        members = np.flatnonzero(bucket == b)
        kept = np.intersect1d(keep, members)
        assert kept[0] == members[0] and kept[-1] == members[-1]
        assert y[kept].min() == y[members].min() and y[kept].max() == y[members].max()


def test_few_points_are_sent_as_they_are():
    t, y = random_steps(100, 4)
    assert np.array_equal(D.minmax_indices(t, y, 50), np.arange(100))


def test_window_reaches_both_edges_of_the_zoom():
    t = np.arange(10.0)
    y = np.arange(10)
    tw, yw = D.decimate(t, y, 2.5, 6.5, 100)
    # the step held from t=2 is visible at 2.5, and the one starting at 7 closes the window
    assert tw.tolist() == [2.0, 3.0, 4.0, 5.0, 6.0, 7.0] and yw.tolist() == [2, 3, 4, 5, 6, 7]


def test_zooming_in_shows_detail_the_full_view_merged():
    t, y = random_steps(100_000, 5)
    x0, x1 = t[40_000], t[40_500]
    tw, yw = D.decimate(t, y, x0, x1, 1000)
    inside = (t >= x0) & (t <= x1)
    # 500 points in view with 1000 buckets: every one of them is sent
    assert np.isin(t[inside], tw).all()


def test_intervals_merge_only_when_too_many_to_draw():
    starts = np.arange(0.0, 100.0, 1.0)
    ends = starts + 0.5
    s, e, count = D.merge_intervals(starts, ends, 10.2, 20.0, 0.1, limit=50)
    assert count == 11 and s.tolist() == list(np.arange(10.0, 21.0)) and e.tolist() == list(np.arange(10.5, 21.0))
    s, e, count = D.merge_intervals(starts, ends, 0, 100, 0.6, limit=10)
    assert count == 100 and s.tolist() == [0.0] and e.tolist() == [99.5]
    s, e, count = D.merge_intervals(starts, ends, 0, 100, 0.4, limit=120)
    assert len(s) == 100  # gaps wider than a pixel stay separate while few enough
    uneven_starts = np.array([0.0, 1.0, 10.0, 11.0, 30.0])
    s, e, count = D.merge_intervals(uneven_starts, uneven_starts + 0.5, 0, 40, 0.1, limit=3)
    assert count == 5 and s.tolist() == [0.0, 10.0, 30.0] and e.tolist() == [1.5, 11.5, 30.5]

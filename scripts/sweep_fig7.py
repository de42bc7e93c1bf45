"""Reproduce the shape of the SCTP paper's figure 7 (Yilmaz et al. 2010): SCTP throughput gain of
NR-SACKs over SACKs against the loss rate, 100 Mbit/s, 45 ms one-way, send buffers 8K, 32K, 64K,
with the regions of gain (>= 5 %). Writes docs/simulator_fig7.csv, docs/simulator_fig7_regions.csv
and docs/simulator_fig7.html (Plotly), and prints the table as Markdown.

    python scripts/sweep_fig7.py [--seeds 6] [--bytes 3000000] [--workers 2] [--scheduler ADDR]
"""

import argparse
from pathlib import Path

import plotly.graph_objects as go

from nrsack.generator.sim import sweep as sw

LOSSES = (0.0, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2)
BUFFERS = (8192, 32768, 65536)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--bytes", type=int, default=3_000_000)
    ap.add_argument("--payload", type=int, default=1452,
                    help="payload per DATA chunk; 1452 = ns-2's 1468-byte chunks minus their header")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--scheduler", default=None)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "docs")
    args = ap.parse_args()
    points = sw.grid(sndbufs=BUFFERS, losses=LOSSES, seeds=args.seeds, bandwidths_mbps=(100.0,),
                     delay_ms=45.0, nbytes=args.bytes, payload=args.payload)
    runs = sw.run(points, scheduler=args.scheduler, workers=args.workers)
    table = sw.gain_table(runs)
    regions = sw.regions_of_gain(table)
    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "simulator_fig7.csv", index=False, float_format="%.4f")
    regions.to_csv(args.out / "simulator_fig7_regions.csv", index=False)
    fig = go.Figure()
    for b in BUFFERS:
        part = table[table.sndbuf == b].sort_values("loss")
        x = [max(v, 1e-4) * 100 for v in part.loss]  # 0 % drawn at 0.01 % on the log axis
        fig.add_trace(go.Scatter(x=x, y=part.gain_pct, mode="lines+markers", name=f"{b // 1024}K",
                                 error_y=dict(type="data", array=part.gain_pct_std, visible=True)))
    fig.add_hline(y=5, line_dash="dot", annotation_text="5 % (region of gain)")
    fig.update_layout(title="SCTP throughput gain with NR-SACKs (simulated; 45 ms, 100 Mbit/s)",
                      xaxis=dict(title="loss rate (%), 0 drawn at 0.01", type="log"),
                      yaxis_title="gain (%)", template="plotly_white")
    fig.write_html(args.out / "simulator_fig7.html", include_plotlyjs="cdn")
    cols = ["sndbuf", "loss", "T_sack_mbps", "T_nr_mbps", "gain_pct", "gain_pct_std",
            "p_over_q_sack", "b_over_q_sack"]
    print(table[cols].to_markdown(index=False, floatfmt=".3f") if _has_tabulate()
          else table[cols].to_string(index=False))
    print()
    print(regions.to_string(index=False))


def _has_tabulate():
    try:
        import tabulate  # noqa: F401
        return True
    except ImportError:
        return False


if __name__ == "__main__":
    main()

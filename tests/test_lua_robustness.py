"""The Lua plugin on bad input, and its footprint on what Wireshark already shows.

- Fuzzed captures: every sample capture (timelines, broken and conformance vectors, merged by
  tests/support/fuzz.py) and the hand-built ones of test_lua_parity.py, corrupted with
  `editcap -E 0.02` over a few seeds (bench/bench_lua.py --fuzz runs many more): tshark exits
  normally, prints no "Lua Error", and the plugin's own guard ("analysis stopped": a Lua error caught
  and reported as GEN-01) never fires, on one pass with all nrsack fields and on two passes with -V.
- Loading the plugin changes no built-in field: -T fields of SCTP / TCP / MPTCP fields and the whole
  -V tree without the "NR-SACK analysis" subtrees are identical with and without -X lua_script.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from support import fuzz, tshark
from support.samples import SAMPLES
from support.tshark import LUA_PLUGIN
from support.vectors import VECTORS

pytestmark = pytest.mark.tshark

# The papers' timelines (not the many one-rule vectors below them) for the footprint test: CI time.
TIMELINE_PCAPS = sorted(SAMPLES.glob("*.pcap"))
FUZZ_SEEDS = [1, 2, 3, 4]
FUZZ_PROBABILITY = 0.02
LUA_ERROR_MARKS = ("Lua Error", "analysis stopped")

BUILTIN_FIELDS = [
    "frame.number", "frame.protocols", "_ws.col.Info", "_ws.expert.message",
    "sctp.verification_tag", "sctp.chunk_type", "sctp.chunk_length", "sctp.data_tsn",
    "sctp.sack_cumulative_tsn_ack", "sctp.sack_gap_block_start", "sctp.sack_gap_block_end",
    "sctp.nr_sack_cumulative_tsn_ack", "sctp.nr_sack_gap_block_start", "sctp.nr_sack_gap_block_end",
    "sctp.nr_sack_nr_gap_block_start", "sctp.nr_sack_nr_gap_block_end", "sctp.supported_chunk_type",
    "tcp.stream", "tcp.seq", "tcp.ack", "tcp.len", "tcp.options.sack_le", "tcp.options.sack_re",
    "tcp.options.experimental.exid", "tcp.options.experimental.data", "tcp.analysis.flags",
    "tcp.options.mptcp.subtype", "tcp.options.mptcp.rawdataack", "tcp.options.mptcp.rawdataseqno",
    "mptcp.stream", "mptcp.dsn", "mptcp.ack",
]


def lua_problem(proc: subprocess.CompletedProcess) -> str | None:
    text = proc.stdout + proc.stderr
    marks = [line for line in text.splitlines() if any(m in line for m in LUA_ERROR_MARKS)][:5]
    if proc.returncode != 0 or marks:
        return f"exit {proc.returncode}: {marks or proc.stderr[-1000:]}"
    return None


def fuzz_lua(corpus: Path, seeds, workdir: Path, probability: float = FUZZ_PROBABILITY) -> tuple[int, list]:
    """Runs the Lua plugin over `corpus` corrupted with each seed, one pass with every nrsack field and
    two passes with -V; returns (runs, problems)."""
    fields = sum((["-e", f] for f in tshark.NRSACK_FIELDS), [])
    modes = [["-T", "fields", "-E", "occurrence=a", *fields, "-z", "expert"], ["-2", "-V"]]
    runs, problems = 0, []
    for seed in seeds:
        corrupt = workdir / f"{corpus.stem}-fuzz-{seed}.pcapng"
        subprocess.run(["editcap", "-E", str(probability), "--seed", str(seed), str(corpus), str(corrupt)],
                       check=True, capture_output=True)
        for args in modes:
            proc = tshark.run_tshark(args, LUA_PLUGIN, pcap=corrupt, prefs={"nrsack.sndbuf": "3000"},
                                     check=False, timeout=600)
            runs += 1
            problem = lua_problem(proc)
            if problem:
                problems.append(f"{corpus.name} seed {seed} {args[0]}: {problem}")
        corrupt.unlink()
    return runs, problems


def without_nrsack_subtrees(verbose: str) -> str:
    """-V text minus every top-level "NR-SACK analysis" subtree (what the plugin adds, by design)."""
    kept, skipping = [], False
    for line in verbose.splitlines():
        if not line or not line[0].isspace():  # a blank line ends a frame
            skipping = line.startswith("NR-SACK analysis")
        if not skipping:
            kept.append(line)
    return "\n".join(kept)


def without_nrsack_findings(fields_output: str) -> list[list[list[str]]]:
    """-T fields rows (columns, occurrences) minus the plugin's own expert messages (its output)."""
    return [[[m for m in column.split(tshark.AGGREGATOR) if m and not tshark.RULE_RE.match(m)]
             for column in line.split("\t")] for line in fields_output.splitlines()]


@pytest.fixture(scope="module")
def fuzz_corpora(tmp_path_factory, vector_pcaps):
    work = tmp_path_factory.mktemp("lua-fuzz")
    samples, _ = fuzz.corpus(work, copies=3)  # each copy is corrupted differently
    vectors = work / "vectors.pcapng"
    subprocess.run(["mergecap", "-a", "-F", "pcapng", "-w", str(vectors),
                    *(str(vector_pcaps[name]) for name in sorted(VECTORS))], check=True)
    return work, [samples, vectors]


def test_fuzzed_captures_raise_no_lua_error(fuzz_corpora):
    work, corpora = fuzz_corpora
    assert fuzz.packet_count(corpora[0]) > 2000, "the sample corpus is too small to mean much"
    runs, problems = 0, []
    for corpus in corpora:
        r, p = fuzz_lua(corpus, FUZZ_SEEDS, work)
        runs, problems = runs + r, problems + p
    assert runs == len(corpora) * len(FUZZ_SEEDS) * 2
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", sorted(VECTORS) + [p.name for p in TIMELINE_PCAPS])
def test_loading_the_plugin_changes_no_builtin_field(name, vector_pcaps):
    pcap = vector_pcaps[name] if name in VECTORS else SAMPLES / name
    args = ["-T", "fields", "-E", "occurrence=a", "-E", "header=y", "-E", f"aggregator={tshark.AGGREGATOR}"]
    for f in BUILTIN_FIELDS:
        args += ["-e", f]
    prefs = dict(tshark.GOLDEN_PREFS)
    plain = tshark.run_tshark(args, tshark.Plugin.none(), prefs=prefs, pcap=pcap).stdout
    with_lua = tshark.run_tshark(args, LUA_PLUGIN, prefs=prefs, pcap=pcap).stdout
    # the plugin's own expert messages are its output, not a built-in field
    assert without_nrsack_findings(with_lua) == without_nrsack_findings(plain)
    verbose_plain = tshark.run_tshark(["-V"], tshark.Plugin.none(), prefs=prefs, pcap=pcap).stdout
    verbose_lua = tshark.run_tshark(["-V"], LUA_PLUGIN, prefs=prefs, pcap=pcap).stdout
    assert without_nrsack_subtrees(verbose_lua) == without_nrsack_subtrees(verbose_plain)
    assert "NR-SACK analysis" in verbose_lua, "the plugin did not run"

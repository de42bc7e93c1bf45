"""`nrsack check` on NR-SACKs with many gap blocks: the rules must be linear (or n log n) in blocks.

    python3 bench/bench_check_blocks.py [--blocks 8000] [--acks 1] [--baseline main]

Writes an SCTP association whose receiver sends `--acks` NR-SACKs, each with BLOCKS R and BLOCKS NR
gap blocks (every other TSN of 4 * BLOCKS outstanding TSNs: R, NR, R, NR ...; --no-data: without
the DATA chunks, so the check's time is the acks' alone), then times
nrsack.analyzer.check on it in fresh processes: with this tree's rules ("after") and with the rules
and checker of the git revision `--baseline` ("before", default main), the same reader and flows
underneath. Prints wall seconds, findings and the ratio.
"""

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def packet(t, src, dst, sport, dport, vtag, chunks):
    body = struct.pack("!HHII", sport, dport, vtag, 0) + b"".join(chunks)
    body = body[:8] + struct.pack("<I", zlib.crc32(body) & 0xFFFFFFFF) + body[12:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(body), 0, 0x4000, 64, 132, 0, src, dst) + body
    return t, ip


def chunk(ctype, body, flags=0):
    raw = struct.pack("!BBH", ctype, flags, 4 + len(body)) + body
    return raw + b"\0" * (-len(raw) % 4)


def build(path, blocks, acks, data=True):
    a, b = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
    ext = struct.pack("!HHBB", 0x8008, 6, 0x10, 0) + b"\0\0"
    out = [packet(0.0, a, b, 5000, 5001, 0, [chunk(1, struct.pack("!IIHHI", 1, 1 << 20, 1, 1, 1) + ext)]),
           packet(0.001, b, a, 5001, 5000, 1, [chunk(2, struct.pack("!IIHHI", 2, 1 << 20, 1, 1, 1) + ext)])]
    t, tsns = 0.002, 4 * blocks + 2
    for first in range(1, tsns + 1 if data else 1, 700):  # DATA chunks of 4 bytes, 700 to a packet
        out.append(packet(t, a, b, 5000, 5001, 2, [chunk(0, struct.pack("!IHHI", tsn, 0, 0, 0) + b"data", 3)
                                                   for tsn in range(first, min(first + 700, tsns + 1))]))
        t += 0.0001
    # cum ack 1; gap blocks at offsets 2, 4, 6 ... alternately R and NR, each one TSN
    r = [(2 + 4 * k, 2 + 4 * k) for k in range(blocks)]
    nr = [(4 + 4 * k, 4 + 4 * k) for k in range(blocks)]
    for k in range(acks):
        body = struct.pack("!IIHHHH", 1, 1 << 20, len(r), len(nr), 0, 0)
        body += b"".join(struct.pack("!HH", s, e) for s, e in r + nr)
        out.append(packet(t + 0.01 * (k + 1), b, a, 5001, 5000, 1, [chunk(0x10, body)]))
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 101))
        for t, ip in out:
            f.write(struct.pack("<IIII", 1_700_000_000 + int(t), int(t % 1 * 1e6), len(ip), len(ip)) + ip)


def child(path, old_tree):
    import nrsack.analyzer

    if old_tree:  # the baseline's rules and checker first on the package path; the rest stays this tree's
        nrsack.analyzer.__path__.insert(0, old_tree)
    from nrsack.analyzer import check

    start = time.perf_counter()
    findings = check(path)
    print(json.dumps({"wall_s": time.perf_counter() - start, "findings": len(findings),
                      "rules": sorted(set(findings["rule"]))}))


def measure(path, old_tree=""):
    out = subprocess.run([sys.executable, __file__, "--child", path, old_tree], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def baseline_tree(rev, folder):
    """The checker and rules of `rev`, extracted next to each other as a package path entry."""
    archive = subprocess.run(["git", "-C", ROOT, "archive", rev, "analyzer/checker.py", "analyzer/rules"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
    return os.path.join(folder, "analyzer")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=8000)
    parser.add_argument("--acks", type=int, default=1)
    parser.add_argument("--baseline", default="main", help="git revision of the 'before' rules ('' to skip)")
    parser.add_argument("--no-data", action="store_true",
                        help="leave the DATA chunks out: the NR-SACK alone (its blocks then cover unsent TSNs)")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(*args.child)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "blocks.pcap")
        build(path, args.blocks, args.acks, not args.no_data)
        print(f"capture: {args.acks} NR-SACK(s) of {args.blocks} R + {args.blocks} NR gap blocks, "
              f"{'no' if args.no_data else 4 * args.blocks + 2} DATA chunks, {os.path.getsize(path)} bytes")
        after = measure(path)
        print(f"after  (this tree): {after['wall_s']:.2f} s, {after['findings']} findings {after['rules']}")
        if args.baseline:
            before = measure(path, baseline_tree(args.baseline, folder))
            print(f"before ({args.baseline}): {before['wall_s']:.2f} s, {before['findings']} findings {before['rules']}")
            print(f"ratio before / after: {before['wall_s'] / after['wall_s']:.1f}")


if __name__ == "__main__":
    main()

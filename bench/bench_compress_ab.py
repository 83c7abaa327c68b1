#!/usr/bin/env python3
# Two bench_compress builds in alternating runs: each row's medians side by side, and every digest checked equal.
import argparse
import re
import statistics
import subprocess
import sys

ROW = re.compile(r"^(v4\S*)\s+(\d+q?)\s+([\d.]+)\s")
DIGEST = re.compile(r"^BENCH (\S+)_digest ([0-9a-f]+)$")
UNSTABLE = re.compile(r"^BENCH (\S+)_digest_unstable 1$")
CAPPED = re.compile(r"^BENCH (v4\S*)_(\d+q?)_power_capped_ms (-?[\d.]+)$")


def run(binary, args, timeout):
    """One run's medians and power-capped ms {(variant, rows): value} and digests {name: hex}; exits on failure."""
    try:
        p = subprocess.run([binary] + args, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        sys.exit(f"bench_compress_ab: {binary}: {e}")
    if p.returncode != 0:
        sys.exit(f"bench_compress_ab: {binary} exited with {p.returncode}: {p.stderr.strip()[-400:]}")
    if "BENCH gpu none" in p.stdout:
        sys.exit(f"bench_compress_ab: {binary} found no GPU")
    times, digests, capped = {}, {}, {}
    for line in p.stdout.splitlines():
        m = CAPPED.match(line.strip())
        if m:
            capped[(m[1], m[2])] = float(m[3])
        m = ROW.match(line)
        if m:
            times[(m[1], m[2])] = float(m[3])
        m = DIGEST.match(line.strip())
        if m:
            digests[m[1]] = m[2]
        m = UNSTABLE.match(line.strip())
        if m:  # the binary's own repeated calls disagreed: not a digest to compare
            digests[m[1]] = "unstable"
    if not times:
        sys.exit(f"bench_compress_ab: {binary} printed no rows")
    return times, digests, capped


def cells(xs):
    return "".join(f"{x:9.2f}" for x in xs)


def main():
    ap = argparse.ArgumentParser(description="Alternating runs of two bench_compress builds (base first in each pair).")
    ap.add_argument("base", help="the bench_compress binary to compare against")
    ap.add_argument("new", help="the bench_compress binary under test")
    ap.add_argument("--pairs", type=int, default=3, help="base/new pairs (default 3)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds a run may take (default 300)")
    ap.add_argument("args", nargs="*",
                    help="bench_compress's own arguments (VARIANT PATH TILE ROWS GEMV_ROWS KEY_BLOCKS ENTRIES)")
    a = ap.parse_intermixed_args()
    if a.pairs < 1:
        ap.error("--pairs must be at least 1")
    runs = {"base": [], "new": []}
    for _ in range(a.pairs):
        for side, binary in (("base", a.base), ("new", a.new)):
            runs[side].append(run(binary, a.args, a.timeout))
    keys = [k for k in runs["base"][0][0] if all(k in t for side in runs.values() for t, _, _ in side)]
    w = 9 * a.pairs
    print(f"{'variant':<10} {'rows':>5} | {'base µs':>{w}} | {'new µs':>{w}} | new/base (medians)")
    for k in keys:
        b = [t[k] for t, _, _ in runs["base"]]
        n = [t[k] for t, _, _ in runs["new"]]
        # Power capping during a row's timing lowers the clock (docs/perf.md): the most of any run, base and new.
        cap = [max(c.get(k, -1) for _, _, c in runs[side]) for side in ("base", "new")]
        note = f"   capped {cap[0]:.0f} / {cap[1]:.0f} ms" if max(cap) > 0 else ""
        ratio = statistics.median(n) / statistics.median(b)
        print(f"{k[0]:<10} {k[1]:>5} | {cells(b)} | {cells(n)} | {ratio:.3f}{note}")
    ref = runs["base"][0][1]
    bad = sorted({name for side in runs.values() for _, d, _ in side for name in set(ref) | set(d)
                  if d.get(name) != ref.get(name)})
    print(f"digests: {len(ref)} a run, {2 * a.pairs} runs: " + ("all equal" if not bad else "DIFFER: " + " ".join(bad)))
    return 1 if bad or not ref else 0


if __name__ == "__main__":
    sys.exit(main())

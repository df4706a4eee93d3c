#!/usr/bin/env python3
"""Statistical audit of private partition selection (issue 26).

Runs build/core/dxpriv_partition_audit (cmake --build build/core --target dxpriv_partition_audit),
which draws keep decisions from the production CSPRNG with the extension's own samplers, and writes

* test/bench/results/partition_selection_audit.csv: per mechanism and number of contributors n,
  the draws, the empirical keep rate, the exact keep probability and the binomial standard
  deviation of the count;
* test/bench/results/partition_selection_curve.png: the release probability against n for the
  optimal mechanism and the thresholded Laplace at the same (epsilon, delta), exact curves with the
  empirical points.

Exits 1 when an empirical count is more than 5 standard deviations from its exact expectation, or
when the empirical rate of one-contributor keys exceeds delta by more than 5 standard deviations.
Usage: partition_selection_audit.py [epsilon delta draws_for_n1]   (default 0.5 1e-5 2e7)
       partition_selection_audit.py --from-csv [epsilon delta]  (checks and plots the last CSV again)
Run it with /usr/bin/python3 (Debian's python3-matplotlib).
"""
import csv
import io
import math
import pathlib
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parents[2]
results = root / "test/bench/results"
if sys.argv[1:2] == ["--from-csv"]:
    args = sys.argv[2:] or ["0.5", "1e-5"]
    out = (results / "partition_selection_audit.csv").read_text()
else:
    args = sys.argv[1:] or ["0.5", "1e-5", "2e7"]
    binary = root / "build/core/dxpriv_partition_audit"
    out = subprocess.run([str(binary), *args], check=True, capture_output=True, text=True).stdout
    (results / "partition_selection_audit.csv").write_text(out)
rows = list(csv.DictReader(io.StringIO(out)))
eps, delta = float(args[0]), float(args[1])
bad = []
for r in rows:
    draws, kept, p, sd = int(r["draws"]), int(r["kept"]), float(r["exact"]), float(r["binomial_sd"])
    if abs(kept - draws * p) > 5 * sd + 1e-9:
        bad.append(f"{r['mechanism']} n={r['n']}: {kept} of {draws}, expected {draws * p:.1f} +- {sd:.1f}")
    if r["n"] == "1":
        bound_sd = math.sqrt(draws * delta * (1 - delta))
        print(f"{r['mechanism']}: one contributor kept {kept} of {draws} = {kept / draws:.3g} "
              f"(exact {p:.6g}, delta bound {delta:g})")
        if kept > draws * delta + 5 * bound_sd:
            bad.append(f"{r['mechanism']}: one-contributor rate above delta")

import matplotlib  # noqa: E402
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

fig, (ax, axl) = plt.subplots(1, 2, figsize=(11, 4.2))
for mech, colour in (("optimal", "tab:blue"), ("laplace", "tab:orange")):
    pts = [r for r in rows if r["mechanism"] == mech]
    n = [int(r["n"]) for r in pts]
    exact = [float(r["exact"]) for r in pts]
    emp = [float(r["empirical"]) for r in pts]
    for a in (ax, axl):
        a.plot(n, exact, "-", color=colour, label=f"{mech} (exact)")
        a.plot(n, emp, "o", color=colour, markersize=3, label=f"{mech} (empirical)")
ax.set_xlabel("contributors n")
ax.set_ylabel("release probability")
axl.set_xlabel("contributors n")
axl.set_yscale("log")
axl.axhline(delta, color="grey", linestyle=":", label=f"delta = {delta:g}")
ax.set_title(f"per-partition epsilon {eps:g}, delta {delta:g}")
axl.set_title("log scale")
ax.legend(fontsize=8)
axl.legend(fontsize=8)
fig.tight_layout()
fig.savefig(results / "partition_selection_curve.png", dpi=110)
for line in bad:
    print("FAIL", line)
print(f"{len(rows)} points, {len(bad)} outside 5 standard deviations; wrote {results}/partition_selection_audit.csv "
      f"and partition_selection_curve.png")
sys.exit(1 if bad else 0)

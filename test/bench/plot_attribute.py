#!/usr/bin/python3
"""Plots the attribute-privacy comparison written by dxpriv_attribute_experiments.

Reads test/bench/results/attribute_example2.csv and attribute_gaussian.csv (or --results DIR) and
writes attribute_comparison.png: left, Example 2 of the seed (the Wasserstein sensitivity W over
Theta = [1/2 - r, 1/2 + r]^2 against group DP's 4, with the seed's W = 1, 2, 4 marked); right, the
Gaussian model of Section 4.3 (noise standard deviation of APGM, classical and analytic, of the
Wasserstein mechanism and of group DP against the correlation rho). Needs Debian's
python3-matplotlib.
"""
import argparse
import os

from plot_local import plt, read_rows  # Agg backend, CSV rows as dictionaries


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--results", default=os.path.join(here, "results"))
    args = parser.parse_args()
    ex2 = [r for r in read_rows(os.path.join(args.results, "attribute_example2.csv")) if r["r"] != "example3"]
    gauss = read_rows(os.path.join(args.results, "attribute_gaussian.csv"))

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    r = [float(x["r"]) for x in ex2]
    left.plot(r, [float(x["w_ours"]) for x in ex2], "s-", label="Wasserstein W (ours, grid 0.01)", color="tab:blue")
    left.plot(r, [float(x["group_dp_sensitivity"]) for x in ex2], "--", label="group DP (4 records)", color="tab:red")
    seed = [(float(x["r"]), float(x["w_seed"])) for x in ex2 if x["w_seed"]]
    left.plot([s[0] for s in seed], [s[1] for s in seed], "ko", mfc="none", ms=10, label="seed's W (Example 2)")
    left.set_xlabel("r: Theta = [0.5 - r, 0.5 + r]^2")
    left.set_ylabel("sensitivity (Laplace scale x epsilon)")
    left.set_title("Example 2: binary attributes, 4 records")
    left.legend()

    rho = [float(x["rho"]) for x in gauss]
    for key, label, style in [("apgm_analytic_sd", "APGM (analytic)", "-"), ("apgm_classical_sd", "APGM (classical, seed)", ":"),
                              ("wasserstein_sd", "Wasserstein (pure eps)", "-."), ("group_dp_sd", "group DP (n records)", "--")]:
        right.plot(rho, [float(x[key]) for x in gauss], style, label=label)
    right.set_yscale("symlog", linthresh=0.01)
    right.set_xlabel("correlation rho of the queried and protected attributes")
    right.set_ylabel("noise standard deviation of the mean")
    right.set_title("Gaussian records, n = 100, d(U) = 1, eps = 0.5, delta = 1e-5")
    right.legend()
    fig.tight_layout()
    out = os.path.join(args.results, "attribute_comparison.png")
    fig.savefig(out, dpi=110)
    print(out)


if __name__ == "__main__":
    main()

"""Reproduces Figs. 2(a), 3 and 5 of "The Gaussian Bloom Filter" (Werner & Schoenfeld)
with build/tests/benchmarks/gaussian_fpr, adds the comparisons the paper leaves out (a
classic Bloom filter with the Gaussian filter's memory; an FBF with Gaussian
constituents against one with blocked Bloom constituents at equal memory, with
`oncecount filter-eval`), and writes data files, gnuplot scripts, PNG plots and a
results table under docs/gaussian-bloom-filter/. docs/gaussian-bloom-filter.md
explains them.

Run through scripts/reproduce-gaussian, which builds the binaries first."""

import argparse
import json
import math
import os
from concurrent.futures import ThreadPoolExecutor

from reproduction.common import Gnuplot, Runner, clean_generated, fill_template, gnuplot_terminal

OUT = "docs/gaussian-bloom-filter"
GENERATED = (".dat", ".gp", ".png", ".md", ".txt", ".jsonl")
BLUE, RED, GREEN, ORANGE = "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e"

# The FBF comparison: 10,000 ids a second, a refresh a second, 8 past filters.
RATE, REFRESH_MS, PAST, DURATION_MS = 10000, 1000, 8, 20000
PER_FILTER = 2 * RATE * REFRESH_MS // 1000  # ids a constituent holds: two slices
BUDGETS = (8, 12, 16, 24, 32)  # memory per constituent, in bits per id it holds


# ------------------------------------------------------------ small random sets
def fpr_configurations():
    """(hashes k, cell bits B, exp kernel) of the gaussian_fpr runs, in run order."""
    keys = [(k, 64, "fast") for k in (3, 5, 10)]
    keys += [(k, 4, "fast") for k in (3, 4, 5)]
    keys += [(5, b, "fast") for b in (4, 8, 64)]
    keys += [(5, 64, "exact"), (3, 8, "fast")]
    return list(dict.fromkeys(keys))  # the first of each, in order


def fpr_name(k, b, exp="fast"):
    return f"fpr_m256_k{k}_B{b}_{exp}.dat"


def parse_fpr_rows(text):
    """gaussian_fpr's table: one row of floats per n; '#' lines are comments.
    Columns: 1 n | 2-5 Gaussian median q1 q3 mean | 6-9 Bloom | 10-13 Bloom with B x m bits."""
    return [list(map(float, line.split())) for line in text.splitlines()
            if line and not line.startswith("#")]


def small_sets_table(fpr_runs):
    """The results table of the small random sets, from {(k, B, exp): rows}."""
    table = ["| configuration | n | Gaussian median | Bloom (m bits) median | Gaussian / Bloom (means) | Bloom (B·m bits) mean |",
             "|---|---|---|---|---|---|"]
    for key in [(3, 64, "fast"), (5, 64, "fast"), (10, 64, "fast"), (3, 4, "fast"), (5, 4, "fast"),
                (5, 8, "fast"), (5, 64, "exact")]:
        k, b, exp = key
        for n in (20, 40, 60, 100):
            r = fpr_runs[key][n - 1]
            ratio = r[4] / r[8] if r[8] > 0 else float("nan")
            cell = "double" if b == 64 else f"{b}-bit"
            table.append(f"| k={k}, {cell}{', std::exp' if exp == 'exact' else ''} | {n} | {r[1]:.4f} | "
                         f"{r[5]:.4f} | {ratio:.2f} | {r[12]:.2g} |")
    return table


# ------------------------------------------------------------ FBF at equal memory
def optimal_hashes(units, per_filter=PER_FILTER):
    """The k that minimises a Bloom filter's false-positive rate with `units` cells or
    bits holding `per_filter` ids: ln 2 x m / n, at least 1."""
    return max(1, round(math.log(2) * units / per_filter))


def fbf_specs(per_filter=PER_FILTER):
    """The filter-eval runs: per memory budget, blocked Bloom constituents at the
    optimal k and its neighbours, Gaussian ones (4- and 8-bit cells) at the same memory
    with those ks and 1 and 2; then the service's gaussian sizing (as many cells as the
    Bloom sizing has bits, so B times the memory)."""
    specs = []
    for bpi in BUDGETS:
        mem = bpi * per_filter
        for k in sorted({max(1, optimal_hashes(mem, per_filter) + d) for d in (-1, 0, 1)}):
            specs.append(dict(budget=bpi, kind="bloom", b=1, units=mem, k=k))
        for b in (4, 8):
            cells = mem // b
            near = {max(1, optimal_hashes(cells, per_filter) + d) for d in (-1, 0, 1)}
            for k in sorted(near | {1, 2}):
                specs.append(dict(budget=bpi, kind="gaussian", b=b, units=cells, k=k))
    for bpi in (8, 16):
        mem = bpi * per_filter
        for b in (4, 8):
            specs.append(dict(budget=bpi * b, kind="gaussian-same-cells", b=b, units=mem,
                              k=optimal_hashes(mem, per_filter)))
    return specs


def eval_args(binary, spec):
    args = [binary, "filter-eval", "--mode", "fbf", "--bits", spec["units"], "--hashes", spec["k"],
            "--past", PAST, "--refresh-ms", REFRESH_MS, "--rate", RATE, "--duration-ms", DURATION_MS,
            "--queries", 1000000, "--window-ms", (PAST + 1) * REFRESH_MS, "--seed", 3]
    if spec["kind"] != "bloom":
        args += ["--filter", "gaussian", "--cell-bits", spec["b"]]
    return args


def best(rows, kind, b, budget):
    """The run of that kind, cell width and budget with the lowest FPR (ties: lowest k)."""
    candidates = [r for r in rows if r["kind"] == kind and r["b"] == b and r["budget"] == budget]
    return min(candidates, key=lambda r: (r["fpr"], r["k"]))


def best_per_budget(rows):
    """(budget, blocked Bloom, Gaussian 4-bit, Gaussian 8-bit) bests, per budget."""
    return [(bpi, best(rows, "bloom", 1, bpi), best(rows, "gaussian", 4, bpi),
             best(rows, "gaussian", 8, bpi)) for bpi in BUDGETS]


def fbf_dat(rows):
    lines = ["# bits_per_id bloom_fpr bloom_k gauss4_fpr gauss4_k gauss8_fpr gauss8_k bloom_ns gauss4_ns gauss8_ns"]
    for bpi, bl, g4, g8 in best_per_budget(rows):
        lines.append(f"{bpi} {bl['fpr']:.3g} {bl['k']} {g4['fpr']:.3g} {g4['k']} {g8['fpr']:.3g} {g8['k']} "
                     f"{bl['ns']:.0f} {g4['ns']:.0f} {g8['ns']:.0f}")
    return "\n".join(lines) + "\n"


def fbf_table(rows):
    table = ["| memory per filter (bits/id) | blocked Bloom FPR (k) | Gaussian 4-bit FPR (k) | Gaussian 8-bit FPR (k) | ns/op Bloom | ns/op G4 | ns/op G8 |",
             "|---|---|---|---|---|---|---|"]
    for bpi, bl, g4, g8 in best_per_budget(rows):
        table.append(f"| {bpi} | {bl['fpr']:.3g} ({bl['k']}) | {g4['fpr']:.3g} ({g4['k']}) | {g8['fpr']:.3g} ({g8['k']}) | "
                     f"{bl['ns']:.0f} | {g4['ns']:.0f} | {g8['ns']:.0f} |")
    return table


def same_cells_table(rows):
    """The service's gaussian sizing against blocked Bloom filters: with the same k and
    1/B of the memory, and the best one with at most the same memory."""
    table = ["| cells = Bloom bits per id | cell bits | memory (bits/id) | Gaussian FPR | blocked Bloom FPR, same k, 1/B of the memory | blocked Bloom with at most that memory (best k, 10^6 queries) |",
             "|---|---|---|---|---|---|"]
    for r in [r for r in rows if r["kind"] == "gaussian-same-cells"]:
        bpi = r["budget"] // r["b"]
        same_k = [x for x in rows if x["kind"] == "bloom" and x["budget"] == bpi and x["k"] == r["k"]]
        same_mem = [x for x in rows if x["kind"] == "bloom" and x["budget"] <= r["budget"]]
        sm = f"{min(x['fpr'] for x in same_mem):.3g}"
        sk = f"{same_k[0]['fpr']:.3g}" if same_k else "(not run)"
        table.append(f"| {bpi} | {r['b']} | {r['budget']} | {r['fpr']:.3g} | {sk} | {sm} |")
    return table


# ------------------------------------------------------------------------- plots
def plot_head(gnuplot, name, w, h):
    return (f'set terminal {gnuplot.terminal} size {w},{h} {gnuplot.font()}\nset output "{name}.png"\n'
            'set grid lc rgb "#dddddd"\nset xlabel "n (elements inserted)"\n'
            'set ylabel "false-positive rate"\nset xrange [0:100]\nset yrange [0:*]\n'
            'set key left top box opaque\nset style fill transparent solid 0.25 noborder\n')


def band(fname, col, color, title):
    """A median line with its quartile band."""
    return [f'"{fname}" u 1:{col + 1}:{col + 2} w filledcurves lc rgb "{color}" notitle',
            f'"{fname}" u 1:{col} w l lw 2 lc rgb "{color}" t "{title}"']


def panel_plot(gnuplot, name, title, panels, w=1500, h=480):
    gp = plot_head(gnuplot, name, w, h) + f'set multiplot layout 1,{len(panels)} title "{title}"\n'
    for panel_title, parts in panels:
        gp += f'set title "{panel_title}"\nplot ' + ", \\\n  ".join(parts) + "\n"
    gp += "unset multiplot\n"
    gnuplot.render(name, gp)


def small_sets_plots(gnuplot):
    panel_plot(gnuplot, "fig3", "Fig. 3: Gaussian (double cells) vs Bloom filter, m = 256, median and quartiles",
               [(f"k = {k}", band(fpr_name(k, 64), 2, BLUE, "Gaussian, 256 doubles") +
                 band(fpr_name(k, 64), 6, RED, "Bloom, 256 bits")) for k in (3, 5, 10)])
    panel_plot(gnuplot, "fig5", "Fig. 5: 4-bit Gaussian Bloom filter vs Bloom filter, m = 256",
               [(f"k = {k}", band(fpr_name(k, 4), 2, BLUE, "Gaussian, 256 x 4-bit cells") +
                 band(fpr_name(k, 4), 6, RED, "Bloom, 256 bits")) for k in (3, 4, 5)])
    panel_plot(gnuplot, "fig2a", "Fig. 2(a): cell width, m = 256, k = 5 (medians)",
               [("double, 8-bit and 4-bit cells",
                 [f'"{fpr_name(5, 64)}" u 1:2 w l lw 3 lc rgb "black" t "Gaussian, double"',
                  f'"{fpr_name(5, 8)}" u 1:2 w l lw 2 lc rgb "{BLUE}" t "Gaussian, 8-bit"',
                  f'"{fpr_name(5, 4)}" u 1:2 w l lw 2 lc rgb "{GREEN}" t "Gaussian, 4-bit"',
                  f'"{fpr_name(5, 64, "exact")}" u 1:2 w l lw 1 dt 2 lc rgb "{ORANGE}" t "Gaussian, double, std::exp"',
                  f'"{fpr_name(5, 64)}" u 1:6 w l lw 2 lc rgb "{RED}" t "Bloom, 256 bits"'])], w=800, h=520)
    panel_plot(gnuplot, "equal_memory", "Same memory: Gaussian (m = 256 cells of B bits) vs Bloom over B x 256 bits (means)",
               [(f"B = {b}, k = {k}",
                 [f'"{fpr_name(k, b)}" u 1:5 w l lw 2 lc rgb "{BLUE}" t "Gaussian, 256 x {b} bits"',
                  f'"{fpr_name(k, b)}" u 1:9 w l lw 2 lc rgb "{RED}" t "Bloom, 256 bits"',
                  f'"{fpr_name(k, b)}" u 1:13 w l lw 2 lc rgb "{GREEN}" t "Bloom, {256 * b} bits (same k)"'])
                for k, b in ((3, 4), (5, 4), (3, 8), (5, 8))], w=1700, h=480)


def fbf_plot(gnuplot):
    gp = plot_head(gnuplot, "fbf_equal_memory", 800, 520).replace('set xrange [0:100]\n', '').replace(
        'set xlabel "n (elements inserted)"', 'set xlabel "memory per constituent filter (bits per id it holds)"')
    gp += ('set logscale y\nset yrange [5e-7:1]\nset format y "10^{%L}"\nset key below\n'
           'set title "N-FBF, N = 8, 10,000 ids/s, t = 1 s, 10^6 queries, best k per point\\n'
           '(no false positive in 10^6 queries is drawn at 10^{-6})"\n'
           f'plot "fbf_equal_memory.dat" u 1:($2>0?$2:1e-6) w lp lw 2 pt 7 lc rgb "{RED}" t "blocked Bloom constituents", \\\n'
           f'  "fbf_equal_memory.dat" u 1:($4>0?$4:1e-6) w lp lw 2 pt 5 lc rgb "{GREEN}" t "Gaussian, 4-bit cells", \\\n'
           f'  "fbf_equal_memory.dat" u 1:($6>0?$6:1e-6) w lp lw 2 pt 9 lc rgb "{BLUE}" t "Gaussian, 8-bit cells"\n')
    gnuplot.render("fbf_equal_memory", gp)


# -------------------------------------------------------------------------- main
def run_small_sets(runner, fpr_binary, jobs, trials):
    def job(key):
        k, b, exp = key
        out = runner.run([fpr_binary, "--cells", 256, "--hashes", k, "--cell-bits", b, "--max-n", 100,
                          "--trials", trials, "--queries", 1000, "--exp", exp, "--seed", 1])
        with open(os.path.join(OUT, fpr_name(k, b, exp)), "w") as f:
            f.write(out)
        return key, parse_fpr_rows(out)

    keys = fpr_configurations()
    runner.log(f"small random sets: {len(keys)} configurations x {trials} trials")
    with ThreadPoolExecutor(jobs) as pool:
        return dict(pool.map(job, keys))


def run_fbf(runner, eval_binary, jobs):
    def job(spec):
        r = json.loads(runner.run(eval_args(eval_binary, spec)))
        return dict(spec, fpr=r["false_positive_rate"], fn=r["false_negatives"], ns=r["ns_per_op"],
                    bits_total=r["bits_total"], queries=r["queries"])

    runner.log("FBF: blocked Bloom vs Gaussian constituents at equal memory (filter-eval)")
    with ThreadPoolExecutor(jobs) as pool:
        rows = list(pool.map(job, fbf_specs()))
    if any(r["fn"] != 0 for r in rows):
        raise SystemExit("reproduce-gaussian: false negatives inside the window")
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(prog="reproduce-gaussian")
    parser.add_argument("--fpr-binary", required=True)
    parser.add_argument("--eval-binary", required=True)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--trials", type=int, default=1000)
    args = parser.parse_args(argv)
    if args.jobs < 1 or args.trials < 1:
        parser.error("--jobs and --trials take positive integers")

    runner = Runner("reproduce-gaussian")
    clean_generated(OUT, GENERATED)
    gnuplot = Gnuplot("reproduce-gaussian", OUT, gnuplot_terminal())
    fpr_runs = run_small_sets(runner, args.fpr_binary, args.jobs, args.trials)
    runner.log("plots")
    small_sets_plots(gnuplot)
    rows = run_fbf(runner, args.eval_binary, args.jobs)
    with open(os.path.join(OUT, "fbf_equal_memory.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    with open(os.path.join(OUT, "fbf_equal_memory.dat"), "w") as f:
        f.write(fbf_dat(rows))
    fbf_plot(gnuplot)
    with open(os.path.join(OUT, "results.md"), "w") as f:
        f.write(fill_template("gaussian_results.md", trials=args.trials,
                              small_sets="\n".join(small_sets_table(fpr_runs)),
                              fbf="\n".join(fbf_table(rows)),
                              same_cells="\n".join(same_cells_table(rows))))
    runner.write_commands(os.path.join(OUT, "commands.txt"))
    runner.log(f"done: {OUT}/results.md")


if __name__ == "__main__":
    main()

"""Running `oncecount filter-eval` for scripts/reproduce-paper: the swept points
(several seeds each, queries sized by the model) and the traces, and the data files
they write."""

import json
import math
import os
from concurrent.futures import ThreadPoolExecutor

from reproduction.paper_format import cmd_str, fv, hits_of, nice, plan_queries, seed_loop

SEEDS = list(range(1, 9))
POINT_COLS = ["x", "inserted", "bits", "queries", "hits", "measured", "est", "eq1", "ub",
              "seed_min", "seed_max"]
TRACE_COLS = ["t_s", "rate", "inserted", "filters", "refresh_s", "est", "eq1", "measured",
              "queries", "hits", "bits"]


class EvalRunner:
    """Runs filter-eval (the private copy `run_bin`, shown as `shown_bin`) `jobs` at a
    time and records (figure, command, result) of every recorded run."""

    def __init__(self, runner, run_bin, shown_bin, jobs):
        self.runner = runner  # common.Runner: runs, stops on failure, logs
        self.run_bin = run_bin
        self.shown_bin = shown_bin
        self.jobs = jobs
        self.log = []

    def one(self, args):
        return json.loads(self.runner.run([self.run_bin, "filter-eval", *args]))

    def many(self, fig, arglists, record=True):
        with ThreadPoolExecutor(self.jobs) as ex:
            results = list(ex.map(self.one, arglists))
        if record:
            for a, r in zip(arglists, results):
                self.log.append((fig, self.cmd(a), r))
        return results

    def cmd(self, args):
        return cmd_str(self.shown_bin, args)

    def commands(self, fig):
        return [c for f, c, _ in self.log if f == fig]


def point_row(meta, runs, q, cmd):
    """One swept point from its runs (one per seed, q queries each): all false positives
    over all queries, the models' means, the lowest and highest seed."""
    n = len(runs)
    hits = [hits_of(r["false_positive_rate"], q) for r in runs]
    h, qt = sum(hits), q * n
    return dict(meta, bits=runs[0]["bits_total"] // runs[0]["filters"],
                inserted=sum(r["inserted"] for r in runs) / n, queries=qt, hits=h,
                measured=h / qt, est=sum(r["estimated_fpp"] for r in runs) / n,
                eq1=sum(r["estimated_fpp_eq1"] for r in runs) / n,
                filters=runs[0]["filters"], ub=3.0 / qt if h == 0 else 0.0,
                seed_min=min(hits) / q, seed_max=max(hits) / q, cmd=cmd)


def measure_points(ev, fig, specs, qmax, seeds=SEEDS):
    """specs: [(meta, args without --seed and --queries)]. Each point is run once per
    seed (independent filters and ids, i.e. independent realizations), the queries
    split evenly between the seeds; the FPP reported is all false positives over all
    queries. A first run with --queries 0 reads the model estimate that sizes Q."""
    pre = ev.many(fig, [a + ["--seed", seeds[0], "--queries", 0] for _, a in specs], record=False)
    qeach = [nice(plan_queries(p["estimated_fpp"], qmax) / len(seeds)) for p in pre]
    jobs = [a + ["--seed", sd, "--queries", q] for (_, a), q in zip(specs, qeach) for sd in seeds]
    res = ev.many(fig, jobs)
    n = len(seeds)
    return [point_row(meta, res[i * n:(i + 1) * n], q,
                      seed_loop(ev.cmd(args + ["--seed", seeds[0], "--queries", q]), seeds))
            for i, ((meta, args), q) in enumerate(zip(specs, qeach))]


def trace_rows(r, q):
    """The rows of a --trace run whose trace queried q ids a second."""
    return [dict(t_s=e["t_s"], rate=float(e["rate"]), inserted=e["inserted"],
                 filters=e["filters"], refresh_s=e["refresh_ms"] / 1000.0,
                 est=e["estimated_fpp"], eq1=e["estimated_fpp_eq1"],
                 measured=e["measured_fpp"], queries=q,
                 hits=hits_of(e["measured_fpp"], q), bits=e["bits_total"]) for e in r["trace"]]


def dat_text(header, cols, rows):
    return (f"# {header}\n# " + "\t".join(cols) + "\n"
            + "".join("\t".join(fv(r[c]) for c in cols) + "\n" for r in rows))


def write_dat(out, name, header, cols, rows):
    with open(os.path.join(out, name), "w") as f:
        f.write(dat_text(header, cols, rows))


def write_schedule(out, name, rows):
    """Writes the per-second rate schedule (second, ids/s) as CSV; returns its path."""
    path = os.path.join(out, name)
    with open(path, "w") as f:
        f.write("second,rate\n")
        for s, r in rows:
            f.write(f"{s},{r:.6f}\n")
    return path


def duration_for(rows, total):
    """Milliseconds until `total` ids have been offered by the per-second schedule."""
    cum = 0.0
    for s, r in rows:
        if cum + r >= total:
            return s * 1000 + int(math.ceil((total - cum) / r * 1000.0)) + 1
        cum += r
    return rows[-1][0] * 1000 + 1000


def commands_text(log):
    """commands.txt: every recorded run, grouped by figure."""
    out = ["# Every recorded filter-eval run of scripts/reproduce-paper, run from the repository root.\n",
           "# (Each swept point of Figs. 8-11 is first run once with --queries 0 to read the model\n",
           "# estimate that sizes --queries; those probe runs are not listed.)\n"]
    last = None
    for fig, c, _ in log:
        if fig != last:
            out.append(f"\n# {fig}\n")
            last = fig
        out.append(c + "\n")
    return "".join(out)

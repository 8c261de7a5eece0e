"""Reproduces the experiments of Sec. VI of the Forgetful Bloom Filter paper (Figs.
8-13) with `oncecount filter-eval`: runs every experiment on the simulated clock,
writes the data files, the gnuplot scripts and the PNG plots under
docs/paper-reproduction/, and regenerates docs/paper-reproduction.md (parameters,
exact commands, plots, claim tables). Every run uses a fixed --seed, so a rerun on the
same code gives the same numbers; only the wall-clock time in the report changes.

Run through scripts/reproduce-paper, which builds the binary and runs a private copy.
The experiments are in paper_experiments, their plots in paper_plots, the document in
paper_report (sentences in templates/paper_*.md)."""

import argparse
import os
import sys
import time
from types import SimpleNamespace

from reproduction.common import Gnuplot, Runner, clean_generated, gnuplot_terminal
from reproduction.paper_experiments import (Results, run_fig10, run_fig11, run_fig12, run_fig13,
                                            run_fig89, run_fingerprint)
from reproduction.paper_plots import render_all
from reproduction.paper_report import document, section_fields
from reproduction.paper_runs import EvalRunner, commands_text

NAME = "reproduce-paper"
OUT = "docs/paper-reproduction"
DOC = "docs/paper-reproduction.md"
GENERATED = (".dat", ".gp", ".png", ".csv", ".txt")


def positive_int(text):
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return int(text)


def parse_args(argv):
    parser = argparse.ArgumentParser(prog=NAME, description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=positive_int, default=len(os.sched_getaffinity(0)) or 2,
                        help="filter-eval runs at a time (default: one per CPU)")
    parser.add_argument("--binary", required=True, help="the oncecount binary, as the report shows it")
    parser.add_argument("--run-binary", help="the copy of it that runs (default: --binary)")
    parser.add_argument("--commit", default="unknown", help="the commit the binary was built from")
    parser.add_argument("--dirty", action="store_true", help="processor/ had uncommitted changes")
    parser.add_argument("--terminal", help="gnuplot terminal (default: pngcairo if available, else png)")
    parser.add_argument("--check-args", action="store_true",
                        help="only check the arguments (the driver does, before it builds)")
    return parser.parse_args(argv)


def run_all(ev, out):
    res = Results()
    for run in (run_fig89, run_fig10, run_fig11, run_fig12, run_fig13, run_fingerprint):
        run(ev, out, res)
    res.log = ev.log
    return res


def main(argv=None):
    args = parse_args(argv)
    if args.check_args:
        return
    runner = Runner(NAME)
    clean_generated(OUT, GENERATED)
    ev = EvalRunner(runner, args.run_binary or args.binary, args.binary, args.jobs)
    res = run_all(ev, OUT)
    render_all(Gnuplot(NAME, OUT, args.terminal or gnuplot_terminal()), res)
    with open(os.path.join(OUT, "commands.txt"), "w") as f:
        f.write(commands_text(ev.log))
    false_negatives = sum(r["false_negatives"] for _, _, r in ev.log)
    runner.log(f"all runs done: {len(ev.log)} recorded runs, {sum(r['rechecked'] for _, _, r in ev.log)} "
               f"re-checks, {false_negatives} false negatives")
    meta = SimpleNamespace(commit=args.commit, dirty=args.dirty, jobs=args.jobs,
                           elapsed=time.time() - runner.started)
    with open(DOC, "w") as f:
        f.write(document(section_fields(res, ev, meta)))
    runner.log(f"wrote {DOC} and {OUT}/ in {time.time() - runner.started:.0f} s")
    if false_negatives:
        sys.exit(f"{NAME}: {false_negatives} false negatives — see the report")


if __name__ == "__main__":
    main()

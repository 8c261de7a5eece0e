"""How scripts/reproduce-paper writes numbers, commands and table rows, and how it
sizes a measurement (the queries of a point)."""

import math
import shlex

QMIN = 200_000  # the paper's query count
HITS = 400  # aim: about this many false positives per measured point


def nice(q):
    """q rounded up to two significant digits."""
    e = 10 ** max(0, int(math.floor(math.log10(q))) - 1)
    return int(math.ceil(q / e) * e)


def plan_queries(est, qmax):
    """Enough never-inserted queries for about HITS false positives at the model FPP."""
    if est > 0 and HITS / est <= qmax:
        return max(QMIN, nice(HITS / est))
    if est * qmax >= 1:
        return qmax
    return min(qmax, 20_000_000)  # hopeless: only an upper bound is possible


def hits_of(r, q):
    """The false positives behind a measured rate r over q queries."""
    return int(round(r * q))


def fv(v):
    """A value of a data file: floats to 6 significant digits."""
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def sci(x, d=2):
    """x in scientific notation with d significant digits and a bare exponent: 1.2e-5."""
    if x == 0:
        return "0"
    s = f"{x:.{d - 1}e}"
    m, e = s.split("e")
    return f"{m}e{int(e)}"


def meas(row, d=2):
    """A measured FPP with its evidence."""
    if row["hits"] == 0:
        return f"0 of {sci(row['queries'], 2)} (< {sci(3.0 / row['queries'])})"
    return f"{sci(row['measured'], d)} ({row['hits']} of {sci(row['queries'], 2)})"


def ratio(a, b):
    return a / b if b > 0 else float("inf")


def fr(x):
    """A ratio or percentage: three significant digits at most, ∞ for infinity."""
    if x == float("inf"):
        return "∞"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def cmd_str(binary, args):
    """The shell command of a filter-eval run, as the report shows it."""
    return " ".join(shlex.quote(str(a)) for a in [binary, "filter-eval", *args])


def seed_loop(cmd, seeds):
    """The shell loop that runs `cmd` (written with the first seed) for every seed."""
    body = cmd.replace(f" --seed {seeds[0]} ", ' --seed "$seed" ')
    return f"for seed in {' '.join(map(str, seeds))}; do\n  {body}\ndone"


def cmd_block(cmds):
    return "```sh\n" + "\n".join(cmds) + "\n```\n"


def verdict_row(fig, claim, ours, verdict):
    return f"| {fig} | {claim} | {ours} | **{verdict}** |"


def table(header, rows):
    """A markdown table: the header cells, then one row of cells per entry of rows."""
    lines = ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(map(str, r)) + " |" for r in rows])

"""Fig. 13 of docs/paper-reproduction.md: what Algorithm 3 and the guarded policy did
in the adaptive runs, read from their traces (claims, the table, and the bullets that
describe each policy's behaviour)."""

import math

from reproduction.paper_experiments import DEFAULT13, F13_RUNS, PAPER13, T0_13, TARGET13, TQ13
from reproduction.paper_fits import first_growth_verdict, target_verdict
from reproduction.paper_format import fr, sci, table, verdict_row
from reproduction.paper_trace import at_t, events, ev_text, first_growth, spans, stats_text, trace_stats

# Measured FPP is a sample: a second counts as above the target only beyond 3 standard deviations.
ABOVE13 = TARGET13 + 3 * math.sqrt(TARGET13 / TQ13)
ALG3_13 = [k for k in F13_RUNS if k[2] == "paper"]
GUARD13 = [k for k in F13_RUNS if k[2] == "guarded"]
MODEL13 = {"classic": "Eq. 1", "blocked": "the blocked model"}


def non_past(k):
    """Filters that are not past filters: future, present (and the pairs check's partner)."""
    return 2 if k[0] == "paper" else 3


def chk(k):
    return f"the {k[0]} check"


def acts_on(k):
    """The trace column of the estimate the policy acts on."""
    return "eq1" if k[1] == "classic" else "est"


def policy_name(k):
    return "Algorithm 3" if k[2] == "paper" else "the guarded policy"


def alg3_of(k):
    """The Algorithm 3 run with the same check as k."""
    return (k[0], "classic", "paper")


class Fig13:
    """The traces (rows), final summaries (end) and statistics of the adaptive runs."""

    def __init__(self, rows, end, bits_per_filter):
        self.rows, self.end, self.bits_per_filter = rows, end, bits_per_filter
        self.stats = {k: dict(meas=trace_stats(v, TARGET13, ABOVE13, "measured"),
                              est=trace_stats(v, TARGET13, ABOVE13, "est"),
                              eq1=trace_stats(v, TARGET13, ABOVE13, "eq1"),
                              ev=events(v, (non_past(k) + 1, T0_13))) for k, v in rows.items()}

    def ev(self, k):
        return self.stats[k]["ev"]

    def meas(self, k):
        return self.stats[k]["meas"]

    def kbit(self, k):
        return self.end[k]["bits_total"] / 1000

    def row_at(self, k, t_s):
        return at_t(self.rows[k], t_s)

    def above(self, k):
        """The spans of seconds whose measured FPP is above the target beyond noise."""
        return spans(self.rows[k], lambda r: r["measured"] > ABOVE13)

    def verdict(self, k):
        return target_verdict(self.meas(k), TARGET13)

    def text(self, k):
        return stats_text(self.meas(k), TARGET13)


def claims(f):
    claim_target = verdict_row(
        "13", "Algorithm 3 keeps the FPP below the target as the workload rises, subsides and rises again",
        "Algorithm 3 as published (`--policy paper`), paper check, adaptation on Eq. 1 (the paper's setup): "
        + f.text(PAPER13), f.verdict(PAPER13))
    ev = f.ev(PAPER13)
    up = first_growth(ev)
    if up:
        t_up, (f0, r0), (f1, r1) = up
        text = f"Algorithm 3, paper check, Eq. 1: first filter increase at {t_up} s: {f0}→{f1} filters, refresh {r0:g}→{r1:g} s"
    else:
        text = "Algorithm 3, paper check, Eq. 1: no filter increase"
    pre = [e for e in ev if not up or e[0] < up[0]]
    if pre:
        text += f"; before it the refresh period already moved {pre[0][1][1]:g}→{pre[-1][2][1]:g} s while the FPP was below 0.1x target"
    claim_growth = verdict_row("13", "when the FPP comes within 10% of the target, the filters double (3→6) and the "
                               "refresh period drops by 1 s (11→10 s)", text, first_growth_verdict(up))
    claim_default = verdict_row("13", "(the first claim, for oncecount's default rather than the paper's setup) the FPP "
                                "stays below the target", "guarded policy (the default), pairs check, adaptation on the "
                                "blocked model: " + f.text(DEFAULT13), f.verdict(DEFAULT13))
    return dict(claim_target=claim_target, claim_growth=claim_growth, claim_default=claim_default)


def table_row(f, k):
    s, rows, last = f.stats[k], f.rows[k], f.rows[k][-1]
    m = s["meas"]
    return ["Algorithm 3 (`paper`)" if k[2] == "paper" else "guarded (default)", k[0],
            "Eq. 1 (classic)" if k[1] == "classic" else "blocked model",
            f"{m['above_sig']} / {s['est']['above']} / {s['eq1']['above']} of {m['n']}",
            f"{sci(m['max'])} at {m['max_t']} s ({fr(m['max'] / TARGET13)}x)", m["max_filters"],
            f"{max(r['refresh_s'] for r in rows):g} s / {min(r['refresh_s'] for r in rows):g} s",
            f"{last['filters']} filters ({f.kbit(k):.0f} kbit), t = {last['refresh_s']:g} s, FPP {sci(last['measured'])}",
            ev_text(s["ev"], 8)]


def fig13_table(f):
    return table(["policy", "check", "adaptation follows",
                  "seconds above target: measured (beyond noise) / blocked model / Eq. 1", "peak measured",
                  "peak filters", "refresh period: longest / shortest", "final state",
                  "changes of the ring (filters, t); consecutive seconds merged"],
                 [table_row(f, k) for k in F13_RUNS])


def both(vals):
    """vals: {run: text} for two runs of the same policy; "X in both runs" when equal."""
    ks = list(vals)
    if len(set(vals.values())) == 1:
        return f"{vals[ks[0]]} in both runs"
    return " and ".join(f"{vals[k]} with {chk(k)}" for k in ks)


def rise(f):
    """(second, rate) of the highest rate of the first rise (before 24 s)."""
    return max(((r["t_s"], r["rate"]) for r in f.rows[PAPER13] if r["t_s"] < 24), key=lambda x: x[1])


def first_growths(f):
    """When the paper-check runs first added filters, in words."""
    return " and ".join(
        f"at {next(e[0] for e in f.ev(k) if e[2][0] > e[1][0])} s under {policy_name(k)}"
        for k in F13_RUNS if k[0] == "paper" and any(e[2][0] > e[1][0] for e in f.ev(k)))


def others(f):
    """The runs that are neither the paper's setup nor oncecount's default, in words."""
    return "; ".join(f"{policy_name(k)} with the {k[0]} check, adapting on {MODEL13[k[1]]}: {f.text(k)} "
                     f"(**{f.verdict(k)}**)" for k in F13_RUNS if k not in (PAPER13, DEFAULT13))

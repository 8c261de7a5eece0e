"""The experiments of Figs. 8-13 of the FBF paper as `filter-eval` runs: their
parameters, their arguments, and running them into a Results (the rows each figure's
plot and report read), writing the data files on the way."""

import os
from types import SimpleNamespace

from reproduction.paper_runs import (POINT_COLS, TRACE_COLS, duration_for, measure_points, trace_rows,
                                     write_dat, write_schedule)

K = 5  # hash functions, every experiment
QMAX_POINT = 100_000_000  # cap per swept point (Figs. 8-10)
QMAX_FIG11 = 1_000_000_000  # cap for the 100 ops/s point runs of Fig. 11

# Figs. 8 and 9 (one sweep) and Fig. 10
L_GRID = [25, 50, 75, 100, 150, 200, 250, 300, 350, 400, 500, 600, 700, 800, 900, 1000]
SPREADS = {  # name: (duration ms, seconds the ids are spread over)
    "window": (9999, 9.998),
    "first": (4999, 4.998),
}
M_GRID = sorted(set(list(range(5000, 30001, 1000)) + [6250]))
# Fig. 11: refresh periods under an exponentially rising rate
G11 = 1.15
S100_11 = 33  # the second whose rate is exactly 100 ids/s
T100_11 = S100_11 + 1  # trace entry whose rate is the 100 ids/s second
T11 = [5, 3, 2, 1]
TQ11 = 10_000_000
SEED11 = 11
# Fig. 12: number of filters under a steadily rising rate
FILTERS12 = [24, 12, 6, 3]
TQ12 = 2_000_000
SEED12 = 12
T100_12 = 26  # trace entry whose rate is the 100 ids/s second
# Fig. 13: adaptive resizing
DUR13 = 90000
TARGET13 = 1e-3
TQ13 = 500_000
SEED13 = 13
T0_13 = 11.0  # the initial refresh period, s
WINDOW13 = 22  # the guaranteed window, (N + 1) * t, s
# (check, model the adaptation follows, resizing policy), in panel order: the top row is
# Algorithm 3 as published on Eq. 1, as in the paper; the bottom row is oncecount's
# default policy and model.
F13_RUNS = [("paper", "classic", "paper"), ("pairs", "classic", "paper"),
            ("paper", "blocked", "guarded"), ("pairs", "blocked", "guarded")]
PAPER13 = ("paper", "classic", "paper")  # the paper's setup
DEFAULT13 = ("pairs", "blocked", "guarded")  # oncecount's default
# The fingerprint filter (dedup.filter: fingerprint) under the rate schedules of Figs.
# 11-13: the target and its trace queries per second (64-bit buckets at 1e-3, 128-bit
# at 1e-5), and Fig. 13's guaranteed window for every schedule.
FP_TARGETS = {1e-3: 500_000, 1e-5: 20_000_000}
FP_WORKLOADS = ("fig11", "fig12", "fig13")
FP_WINDOW_S = WINDOW13
SEED_FP = 14


def fig89_args(m, check, L, spread):
    dur, span = SPREADS[spread]
    return ["--mode", "fbf", "--bits", m, "--hashes", K, "--past", 1, "--refresh-ms", 5000,
            "--check", check, "--rate", f"{L / span:.6f}", "--duration-ms", dur]


def fig89_specs():
    return [(dict(m=m, spread=spread, check=check, x=L), fig89_args(m, check, L, spread))
            for m, spreads in ((6250, ("window", "first")), (6144, ("window",)))
            for spread in spreads for check in ("any", "paper", "pairs") for L in L_GRID]


def fig10_specs():
    return [(dict(check=check, x=m), fig89_args(m, check, 300, "window"))
            for check in ("paper", "pairs") for m in M_GRID]


def schedule11():
    """(second, ids/s) rising by G11 a second, 100 ids/s in second S100_11, until 5000 ids."""
    rows, cum, s = [], 0.0, 0
    while cum < 5000:
        r = 100.0 * G11 ** (s - S100_11)
        rows.append((s, r))
        cum += r
        s += 1
    return rows


def schedule12():
    return [(s, 4.0 * s) for s in range(0, 60)]


def schedule13():
    """Rises 5→57.5 ids/s over 16 s, falls to 9.5 by 23 s, rises by 4.5 a second to 100."""
    rows = []
    for s in range(0, 91):
        if s < 16:
            r = 5 + 3.5 * s
        elif s < 24:
            r = 57.5 - (s - 15) * 6
        else:
            r = min(9.5 + (s - 24) * 4.5, 100.0)
        rows.append((s, r))
    return rows


def fig11_args(sched, t, check, duration):
    return ["--mode", "fbf", "--bits", 25000, "--hashes", K, "--past", 1,
            "--refresh-ms", t * 1000, "--check", check, "--rate-schedule", sched,
            "--duration-ms", duration]


def fig12_args(sched, nf, check, duration):
    return ["--mode", "fbf", "--bits", 6250, "--hashes", K, "--past", nf - 2, "--refresh-ms", 5000,
            "--check", check, "--rate-schedule", sched, "--duration-ms", duration]


def fig13_args(sched, check, model, policy):
    return ["--mode", "fbf", "--bits", 6250, "--hashes", K, "--past", 1, "--refresh-ms", 11000,
            "--check", check, "--adaptive", "--policy", policy, "--refresh-step-ms", 1000,
            "--target-fpp", TARGET13, "--model", model, "--rate-schedule", sched,
            "--duration-ms", DUR13, "--seed", SEED13, "--trace", "--trace-queries", TQ13, "--queries", 0]


def f13_file(k):
    c, m, p = k
    return f"fig13_policy-{p}_check-{c}_{m}.dat"


def trace_args(args, seed, queries):
    return args + ["--seed", seed, "--trace", "--trace-queries", queries, "--queries", 0]


def run_fig89(ev, out, res):
    ev.runner.log("Figs. 8 and 9: FPP against ids inserted, basic FBF")
    res.F89 = {}
    for r in measure_points(ev, "fig08-09", fig89_specs(), QMAX_POINT):
        res.F89.setdefault((r["m"], r["spread"], r["check"]), []).append(r)
    for (m, spread, check), rows in res.F89.items():
        write_dat(out, f"fig08-09_m{m}_{spread}_{check}.dat",
                  f"basic FBF, m={m} (requested), k={K}, t=5 s, check={check}, ids spread: {spread}",
                  POINT_COLS, rows)
    res.bits6250 = res.f89(6250, "window", "paper", 300)["bits"]
    res.bits6144 = res.f89(6144, "window", "paper", 300)["bits"]


def run_fig10(ev, out, res):
    ev.runner.log("Fig. 10: FPP against bits per filter")
    f10 = measure_points(ev, "fig10", fig10_specs(), QMAX_POINT)
    res.F10 = {c: [r for r in f10 if r["check"] == c] for c in ("paper", "pairs")}
    for c, rows in res.F10.items():
        write_dat(out, f"fig10_{c}.dat", f"basic FBF, 300 ids spread over 0-10 s, k={K}, t=5 s, check={c}; "
                  "x = bits requested, bits = bits used", POINT_COLS, rows)


def run_fig11(ev, out, res):
    ev.runner.log("Fig. 11: refresh periods 5/3/2/1 s under an exponentially rising rate")
    sched = schedule11()
    path = write_schedule(out, "fig11-rate.csv", sched)
    res.dur11 = duration_for(sched, 5000)
    keys = [(t, c) for c in ("paper", "pairs") for t in T11]
    runs = ev.many("fig11", [trace_args(fig11_args(path, t, c, res.dur11), SEED11, TQ11) for t, c in keys])
    res.F11 = {}
    for (t, c), r in zip(keys, runs):
        res.F11[(t, c)] = trace_rows(r, TQ11)
        write_dat(out, f"fig11_t{t}_{c}.dat", f"1-FBF, m=25000 requested, k={K}, t={t} s, check={c}, "
                  f"exponential rate x{G11}/s, trace queries {TQ11}/s", TRACE_COLS, res.F11[(t, c)])
    # The same state as the trace entry at 100 ids/s, queried many more times.
    specs = [(dict(t=t, check="paper", x=t), fig11_args(path, t, "paper", T100_11 * 1000)) for t in T11]
    res.f11_points = measure_points(ev, "fig11", specs, QMAX_FIG11)
    write_dat(out, "fig11_points_100ops.dat", "paper check at the trace entry of 100 ids/s "
              f"(t_s = {T100_11}), x = refresh period in s", POINT_COLS, res.f11_points)
    res.P11 = {r["t"]: r for r in res.f11_points}


def run_fig12(ev, out, res):
    ev.runner.log("Fig. 12: 24/12/6/3 filters under a steadily rising rate")
    sched = schedule12()
    path = write_schedule(out, "fig12-rate.csv", sched)
    res.dur12 = duration_for(sched, 3000)
    keys = [(nf, c) for c in ("paper", "pairs") for nf in FILTERS12]
    runs = ev.many("fig12", [trace_args(fig12_args(path, nf, c, res.dur12), SEED12, TQ12) for nf, c in keys])
    res.F12 = {}
    for (nf, c), r in zip(keys, runs):
        res.F12[(nf, c)] = trace_rows(r, TQ12)
        write_dat(out, f"fig12_f{nf}_{c}.dat", f"N={nf - 2} ({r['filters']} filters with the {c} check), "
                  f"m=6250 requested, k={K}, t=5 s, rate 4 ids/s per second, trace queries {TQ12}/s",
                  TRACE_COLS, res.F12[(nf, c)])
    specs = [(dict(nf=nf, check=c, x=nf), fig12_args(path, nf, c, T100_12 * 1000)) for nf, c in keys]
    points = measure_points(ev, "fig12", specs, QMAX_POINT)
    write_dat(out, "fig12_points_100ops.dat", f"state of the trace entry at 100 ids/s (t_s = {T100_12}), "
              "x = filters of the paper check (N = x - 2)", ["check"] + POINT_COLS, points)
    res.P12 = {(r["nf"], r["check"]): r for r in points}


def run_fig13(ev, out, res):
    ev.runner.log("Fig. 13: adaptive resizing, Algorithm 3 (--policy paper) against the guarded policy")
    path = write_schedule(out, "fig13-rate.csv", schedule13())
    runs = ev.many("fig13", [fig13_args(path, *k) for k in F13_RUNS])
    res.F13, res.F13_END = {}, {}  # the traces, the final summary of each run
    for k, r in zip(F13_RUNS, runs):
        c, m, p = k
        res.F13[k] = trace_rows(r, TQ13)
        res.F13_END[k] = r
        write_dat(out, f13_file(k), f"adaptive, policy={p}, start N=1, m=6250 requested, k={K}, t=11 s, "
                  f"step 1 s, target {TARGET13}, check={c}, model={m}, trace queries {TQ13}/s",
                  TRACE_COLS, res.F13[k])


def fp_args(sched, duration, target, tq, expected_rate=None):
    """The fingerprint filter sized as the service sizes it: adapting, for the schedule's
    first rate, traced; or (expected_rate) sized for that rate and not adapting."""
    args = ["--mode", "fbf", "--filter", "fingerprint", "--target-fpp", target,
            "--window-ms", FP_WINDOW_S * 1000, "--rate-schedule", sched, "--duration-ms", duration,
            "--seed", SEED_FP]
    if expected_rate is None:
        return args + ["--adaptive", "--trace", "--trace-queries", tq, "--queries", 0]
    return args + ["--expected-rate", f"{expected_rate:g}", "--queries", tq]


def peak_rate(sched, duration):
    """The highest rate of the per-second schedule within the first `duration` ms."""
    return max(r for s, r in sched if s * 1000 < duration)


def run_fingerprint(ev, out, res):
    ev.runner.log("Figs. 11-13's workloads with the fingerprint filter, adapting and sized for the peak")
    workloads = {"fig11": (schedule11(), res.dur11), "fig12": (schedule12(), res.dur12),
                 "fig13": (schedule13(), DUR13)}
    keys = [(w, target) for target in FP_TARGETS for w in FP_WORKLOADS]
    res.FP_PEAK = {w: peak_rate(*workloads[w]) for w in FP_WORKLOADS}
    sched = {w: os.path.join(out, f"{w}-rate.csv") for w in FP_WORKLOADS}
    adapting = ev.many("fingerprint", [fp_args(sched[w], workloads[w][1], target, FP_TARGETS[target])
                                       for w, target in keys])
    sized = ev.many("fingerprint", [fp_args(sched[w], workloads[w][1], target, FP_TARGETS[target],
                                            res.FP_PEAK[w]) for w, target in keys])
    res.FP, res.FP_END, res.FP_SIZED = {}, {}, {}
    for k, r, s in zip(keys, adapting, sized):
        w, target = k
        res.FP[k] = trace_rows(r, FP_TARGETS[target])
        res.FP_END[k], res.FP_SIZED[k] = r, s
        write_dat(out, fp_file(k), f"fingerprint filter, adaptive, sized for the first rate, window "
                  f"{FP_WINDOW_S} s, target {target:g}, rate schedule of {w}, trace queries "
                  f"{FP_TARGETS[target]}/s", TRACE_COLS, res.FP[k])


def fp_file(k):
    w, target = k
    return f"fingerprint_{w}_target-{target:g}.dat"


class Results(SimpleNamespace):
    """What the runs measured, by figure (F89, F10, F11, P11, F12, P12, F13, F13_END), and
    the fingerprint filter's runs (FP, FP_END, FP_SIZED, FP_PEAK)."""

    def f89(self, m, spread, check, L):
        return next(r for r in self.F89[(m, spread, check)] if r["x"] == L)

"""The gnuplot scripts of Figs. 8-13 (scripts/reproduce-paper), rendered from the
data files under docs/paper-reproduction/."""

from reproduction.paper_experiments import (DUR13, F13_RUNS, FILTERS12, FP_TARGETS, FP_WINDOW_S,
                                            FP_WORKLOADS, G11, PAPER13, DEFAULT13, T11, TARGET13, f13_file,
                                            fp_file)

BLUE, RED, GREEN, ORANGE, PURPLE, BROWN, GRAY = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                                 "#9467bd", "#8c564b", "#7f7f7f")
CHECK_COLOR = {"any": RED, "paper": BLUE, "pairs": GREEN}
CHECK_LABEL = {"any": "simple check (any filter, Sec. III-A)",
               "paper": "optimized check (paper, Alg. 2)",
               "pairs": "all-pairs check (oncecount)"}
TCOL = {5: RED, 3: ORANGE, 2: GREEN, 1: BLUE}
FCOL = {24: BLUE, 12: GREEN, 6: ORANGE, 3: RED}
MODEL13 = {"classic": "Eq. 1", "blocked": "the blocked model"}


def gp_common(terminal, w, h):
    return (f'set terminal {terminal} size {w},{h} enhanced font "DejaVu Sans,11"\n'
            'set grid lc rgb "#dddddd"\nset mytics 10\nset format y "10^{%L}"\n'
            'set style line 1 lc rgb "#d62728" lw 2\n')


def plot(head, panels):
    """A multiplot: `head`, then per (title lines, parts) a panel; parts joined into one plot."""
    gp = head
    for title, parts in panels:
        gp += title + "plot " + ", \\\n  ".join(parts) + "\n"
    return gp + "unset multiplot\n"


def point_plot_lines(fname, check):
    c = CHECK_COLOR[check]
    return [f'"{fname}" u 2:($6>0?$6:1/0) w lp lc rgb "{c}" pt 7 ps 0.9 lw 1.5 t "{CHECK_LABEL[check]}"',
            f'"{fname}" u 2:($5==0?$9:1/0) w p lc rgb "{c}" pt 10 ps 1.3 notitle',
            f'"{fname}" u 2:7 w l lc rgb "{c}" dt 2 lw 1.2 notitle']


def model_lines(fn, check, xcol):
    """Measured points with seed bars, bounds, and both models, of Figs. 9 and 10."""
    c = CHECK_COLOR[check]
    name = "paper check" if check == "paper" else "pairs check"
    return [f'"{fn}" u {xcol}:($6>0?$6:1/0) w p lc rgb "{c}" pt 7 ps 1.1 t "{name}: measured (8 seeds)"',
            f'"{fn}" u {xcol}:($10>0?$6:1/0):10:11 w yerrorbars lc rgb "{c}" pt 7 ps 1.1 notitle',
            f'"{fn}" u {xcol}:($5==0?$9:1/0) w p lc rgb "{c}" pt 10 ps 1.3 t "{name}: no hit, bound 3/Q"',
            f'"{fn}" u {xcol}:8 w l lc rgb "{c}" dt 3 lw 2 t "{name}: Eq. 1 in Eq. 3"',
            f'"{fn}" u {xcol}:7 w l lc rgb "{c}" lw 1.5 t "{name}: blocked model"']


def fig08(gnuplot, res):
    head = gp_common(gnuplot.terminal, 1500, 620) + f"""set output "fig08.png"
set multiplot layout 1,2 title "Fig. 8: basic FBF (N = 1), m = 6250 bits requested ({res.bits6250} used), k = 5, t = 5 s, no adaptation"
set logscale y
set xlabel "ids inserted"
set ylabel "false positive probability (measured)"
set yrange [1e-9:1]
set key left top box opaque font ",10"
"""
    panels = []
    for spread, title in (("window", "ids spread evenly over 0-10 s = (N+1)t, queried at 9.999 s"),
                          ("first", "all ids within the first refresh period (0-5 s), queried at 4.999 s")):
        parts = [p for check in ("any", "paper", "pairs")
                 for p in point_plot_lines(f"fig08-09_m6250_{spread}_{check}.dat", check)]
        parts.append('NaN w l lc rgb "black" dt 2 t "dashed: blocked-filter model"')
        parts.append('NaN w p lc rgb "black" pt 10 ps 1.3 t "no false positive in Q queries: bound 3/Q"')
        panels.append((f'set title "{title}"\n', parts))
    gnuplot.render("fig08", plot(head, panels))


def fig09(gnuplot, res):
    head = gp_common(gnuplot.terminal, 1500, 620) + """set output "fig09.png"
set multiplot layout 1,2 title "Fig. 9: model against measurement, basic FBF, k = 5, t = 5 s, ids spread over 0-10 s"
set logscale y
set xlabel "ids inserted"
set ylabel "false positive probability"
set yrange [1e-12:1]
set key right bottom box opaque font ",10"
"""
    panels = [(f'set title "m = {m} bits requested, {bits} used ({bits // 512} blocks of 512); '
               'bars: lowest and highest seed"\n',
               [p for check in ("paper", "pairs") for p in model_lines(f"fig08-09_m{m}_window_{check}.dat", check, 2)])
              for m, bits in ((6250, res.bits6250), (6144, res.bits6144))]
    gnuplot.render("fig09", plot(head, panels))


def fig10(gnuplot, res):
    gp = gp_common(gnuplot.terminal, 1100, 700) + """set output "fig10.png"
set title "Fig. 10: 300 ids (spread over 0-10 s), basic FBF, k = 5, t = 5 s; bars: lowest and highest of 8 seeds"
set logscale y
set xlabel "bits per constituent filter (used, whole 512-bit blocks)"
set ylabel "false positive probability"
set yrange [1e-16:1e-2]
set xrange [4500:31000]
set key right top box opaque font ",10"
"""
    parts = [p for check in ("paper", "pairs") for p in model_lines(f"fig10_{check}.dat", check, 3)]
    gnuplot.render("fig10", gp + "plot " + ", \\\n  ".join(parts) + "\n")


def trace_lines(fn, color, label):
    return [f'"{fn}" u 2:($8>0?$8:1/0) w p lc rgb "{color}" pt 7 ps 0.8 t "{label}: measured"',
            f'"{fn}" u 2:6 w l lc rgb "{color}" lw 1.5 t "{label}: blocked model"']


def fig11(gnuplot, res):
    head = gp_common(gnuplot.terminal, 1500, 640) + f"""set output "fig11.png"
set multiplot layout 1,2 title "Fig. 11: 1-FBF, m = 25000 bits requested ({res.f11_points[0]['bits']} used), k = 5, 5000 ids, rate x{G11} per second"
set logscale xy
set format x "%g"
set xlabel "ids per second (rate of the second before the sample)"
set ylabel "false positive probability"
set xrange [4:800]
set key left top box opaque font ",10"
set arrow 1 from 100, graph 0 to 100, graph 1 nohead lc rgb "#999999" dt 4
"""
    panels = []
    for c, yr in (("paper", "[1e-12:1]"), ("pairs", "[1e-20:1]")):
        parts = [p for t in T11 for p in trace_lines(f"fig11_t{t}_{c}.dat", TCOL[t], f"t = {t} s")]
        name = "paper check (Alg. 2), N = 1, 3 filters" if c == "paper" else "pairs check, N = 1, 4 filters"
        panels.append((f'set title "{name}"\nset yrange {yr}\n', parts))
    gnuplot.render("fig11", plot(head, panels))


def fig12(gnuplot, res):
    head = gp_common(gnuplot.terminal, 1500, 640) + f"""set output "fig12.png"
set multiplot layout 1,2 title "Fig. 12: m = 6250 bits requested ({res.bits6250} used), k = 5, t = 5 s, 3000 ids, rate rising by 4 ids/s every second"
set logscale y
set xlabel "ids per second (rate of the second before the sample)"
set ylabel "false positive probability"
set xrange [0:160]
set key left top box opaque font ",10"
set arrow 1 from 100, graph 0 to 100, graph 1 nohead lc rgb "#999999" dt 4
"""
    panels = []
    for c, yr in (("paper", "[1e-9:1]"), ("pairs", "[1e-12:1]")):
        parts = [p for nf in FILTERS12 for p in trace_lines(
            f"fig12_f{nf}_{c}.dat", FCOL[nf],
            f"{nf} filters (N = {nf - 2})" if c == "paper" else f"N = {nf - 2} ({nf + 1} filters)")]
        name = "paper check (Alg. 2): N = filters - 2" if c == "paper" else "pairs check: same N, one more filter"
        panels.append((f'set title "{name}"\nset yrange {yr}\n', parts))
    gnuplot.render("fig12", plot(head, panels))


def fig13_panel(k):
    c, m, p = k
    fn = f13_file(k)
    who = ("Algorithm 3 (--policy paper)" if p == "paper" else "guarded policy (--policy guarded)")
    tail = {PAPER13: " = the paper's setup", DEFAULT13: " = oncecount's default"}.get(k, "")
    parts = [f'"{fn}" u 1:($8>0?$8:1/0) w p lc rgb "black" pt 7 ps 0.6 t "measured FPP"',
             f'"{fn}" u 1:6 w l lc rgb "{BLUE}" lw 1.8 t "blocked model"',
             f'"{fn}" u 1:7 w l lc rgb "{ORANGE}" lw 1.8 dt 2 t "Eq. 1 model"',
             f'{TARGET13} w l lc rgb "{RED}" lw 2 dt 4 t "target FPP"',
             f'"{fn}" u 1:4 axes x1y2 w steps lc rgb "{PURPLE}" lw 2 t "filters (right axis)"',
             f'"{fn}" u 1:5 axes x1y2 w steps lc rgb "{BROWN}" lw 2 t "refresh period, s (right axis)"',
             f'"{fn}" u 1:2 axes x1y2 w l lc rgb "{GRAY}" lw 1 t "ids per second (right axis)"']
    return f'set title "{who}, {c} check, adapting on {MODEL13[m]} (--model {m}){tail}"\n', parts


def fig13(gnuplot, res):
    head = gp_common(gnuplot.terminal, 1800, 1250) + f"""set output "fig13.png"
set multiplot layout 2,2 title "Fig. 13: adaptive FBF, start N = 1, m = 6250 bits requested ({res.bits6250} used), k = 5, t = 11 s, refresh step 1 s, target FPP {TARGET13:g}\\ntop: Algorithm 3 as published (--policy paper) adapting on Eq. 1, as in the paper; bottom: oncecount's guarded policy (the default) adapting on the blocked model"
set logscale y
set yrange [1e-10:1]
set ytics nomirror
set y2tics (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 100)
set logscale y2
set y2range [0.8:128]
set xrange [0:{DUR13 // 1000}]
set xlabel "simulated time (s)"
set ylabel "false positive probability"
set y2label "filters / refresh period (s) / ids per second"
set key left top box opaque font ",9" maxrows 4 width -2
"""
    gnuplot.render("fig13", plot(head, [fig13_panel(k) for k in F13_RUNS]))


def fingerprint_panel(res, k):
    w, target = k
    fn = fp_file(k)
    sized = res.FP_SIZED[k]["bits_total"] / 1000
    parts = [f'"{fn}" u 1:($8>0?$8:1/0) w p lc rgb "black" pt 7 ps 0.6 t "measured FPP"',
             f'"{fn}" u 1:6 w l lc rgb "{BLUE}" lw 1.8 t "estimate"',
             f'{target} w l lc rgb "{RED}" lw 2 dt 4 t "target FPP"',
             f'"{fn}" u 1:($11/1000) axes x1y2 w steps lc rgb "{PURPLE}" lw 2 t "memory, kbit (right axis)"',
             f'{sized} axes x1y2 w l lc rgb "{PURPLE}" lw 1 dt 2 t "sized for the peak rate, kbit"',
             f'"{fn}" u 1:2 axes x1y2 w l lc rgb "{GRAY}" lw 1 t "ids per second (right axis)"']
    return (f'set title "rate schedule of {w.replace("fig", "Fig. ")}, target {target:g}"\n'
            f'set yrange [{target / 100:g}:{target * 10:g}]\n', parts)


def fingerprint(gnuplot, res):
    head = gp_common(gnuplot.terminal, 1800, 1100) + f"""set output "fingerprint.png"
set multiplot layout {len(FP_TARGETS)},{len(FP_WORKLOADS)} title "The fingerprint filter (dedup.filter: fingerprint), sized for the first rate and adapting, window {FP_WINDOW_S} s"
set logscale y
set ytics nomirror
set logscale y2
set y2tics
set y2range [0.1:3000]
set xlabel "simulated time (s)"
set ylabel "false positive probability"
set y2label "kbit / ids per second"
set key left top box opaque font ",8" maxrows 3 width -2
"""
    keys = [(w, t) for t in FP_TARGETS for w in FP_WORKLOADS]
    gnuplot.render("fingerprint", plot(head, [fingerprint_panel(res, k) for k in keys]))


def render_all(gnuplot, res):
    for fig in (fig08, fig09, fig10, fig11, fig12, fig13, fingerprint):
        fig(gnuplot, res)

"""Reading the per-second traces of `filter-eval --trace` (Figs. 11-13): the rows of a
second, the changes of the ring's shape, the spans and plateaus of a column."""

from reproduction.paper_format import fr, sci


def at_t(rows, t_s):
    """The trace row of second t_s."""
    return next(r for r in rows if r["t_s"] == t_s)


def slice_mean(rows, t_s, col, t=5):
    """The mean of `col` over the refresh period (of t s) that the sample at t_s ends or lies in."""
    start = (t_s // t) * t if t_s % t else t_s - t
    xs = [r[col] for r in rows if start <= r["t_s"] < start + t]
    return sum(xs) / len(xs)


def events(rows, first_state):
    """The changes of (filters, refresh period): [(t_s, before, after)]."""
    ev = []
    prev = first_state
    for r in rows:
        cur = (r["filters"], r["refresh_s"])
        if cur != prev:
            ev.append((r["t_s"], prev, cur))
        prev = cur
    return ev


def trace_stats(rows, target, above_noise, col="measured"):
    """How often and how far `col` went above the target; `above_noise` is the measured
    FPP beyond which a second counts as above the target despite sampling noise."""
    above = [r for r in rows if r[col] > target]
    above_sig = [r for r in rows if r["measured"] > above_noise]
    mx = max(rows, key=lambda r: r[col])
    return dict(n=len(rows), above=len(above), above_sig=len(above_sig), max=mx[col], max_t=mx["t_s"],
                max_filters=max(r["filters"] for r in rows),
                first_above=(above[0]["t_s"] if above else None))


def sgn(x):
    return (x > 0) - (x < 0)


def ev_groups(ev):
    """Merges changes in consecutive seconds that move the filters and t the same way."""
    out = []
    for t, a, b in ev:
        kind = (sgn(b[0] - a[0]), sgn(b[1] - a[1]))
        if out and out[-1][1] == t - 1 and out[-1][4] == kind:
            out[-1][1], out[-1][3] = t, b
        else:
            out.append([t, t, a, b, kind])
    return out


def ev_text(ev, limit=8):
    """The changes, merged, in words: "16 s: 3→6 filters, t 11→10 s; …"."""
    parts = []
    groups = ev_groups(ev)
    for t0, t, (f0, r0), (f1, r1), _ in groups[:limit]:
        t = f"{t0}–{t}" if t > t0 else t
        bits = []
        if f1 != f0:
            bits.append(f"{f0}→{f1} filters")
        if r1 != r0:
            bits.append(f"t {r0:g}→{r1:g} s")
        parts.append(f"{t} s: " + ", ".join(bits))
    more = f" … ({len(groups) - limit} more)" if len(groups) > limit else ""
    return "; ".join(parts) + more if parts else "no change"


def first_growth(ev):
    """The first change that added filters, or None."""
    return next(((t, a, b) for t, a, b in ev if b[0] > a[0]), None)


def pre_growth(rows, ev, initial_t):
    """Longest refresh period reached before the first increase of the filter count."""
    up = next((t for t, a, b in ev if b[0] > a[0]), None)
    rows = [r for r in rows if up is None or r["t_s"] < up]
    return max(r["refresh_s"] for r in rows) if rows else initial_t


def shortened(ev):
    """Changes that shortened the refresh period."""
    return [e for e in ev if e[2][1] < e[1][1]]


def lengthened(ev):
    return [e for e in ev if e[2][1] > e[1][1]]


def spans(rows, pred):
    """Maximal runs of consecutive trace seconds whose row satisfies pred: [(t0, t1)]."""
    out = []
    for r in rows:
        if pred(r):
            if out and out[-1][1] == r["t_s"] - 1:
                out[-1][1] = r["t_s"]
            else:
                out.append([r["t_s"], r["t_s"]])
    return [tuple(s) for s in out]


def spans_text(sp):
    return ", ".join(f"{a}–{b} s" if b > a else f"{a} s" for a, b in sp)


def growth_run(rows):
    """The longest run of consecutive seconds in which the ring grew: (t0, t1, counts),
    counts starting with the size before the first growth."""
    best, cur = None, None
    for a, b in zip(rows, rows[1:]):
        if b["filters"] > a["filters"]:
            if cur and cur[1] == a["t_s"]:
                cur = (cur[0], b["t_s"], cur[2] + [b["filters"]])
            else:
                cur = (b["t_s"], b["t_s"], [a["filters"], b["filters"]])
            if best is None or len(cur[2]) > len(best[2]):
                best = cur
    return best


def plateau(rows, t_s, col, tol=0.02):
    """The seconds around t_s whose `col` stays within tol of its value at t_s:
    (first second, last second, the value, ids inserted in between)."""
    i = next(j for j, r in enumerate(rows) if r["t_s"] == t_s)
    v = rows[i][col]
    lo = hi = i
    while lo > 0 and abs(rows[lo - 1][col] / v - 1) <= tol:
        lo -= 1
    while hi + 1 < len(rows) and abs(rows[hi + 1][col] / v - 1) <= tol:
        hi += 1
    return rows[lo]["t_s"], rows[hi]["t_s"], v, rows[hi]["inserted"] - rows[lo]["inserted"]


def shortening_run(rows, t0):
    """From the second before t0, the run of seconds in which t shortened each second:
    (t before, t after, first second, last second, [each step in s])."""
    rows = [r for r in rows if r["t_s"] >= t0 - 1]
    i = 0
    while i + 1 < len(rows) and rows[i + 1]["refresh_s"] < rows[i]["refresh_s"]:
        i += 1
    steps = [rows[j]["refresh_s"] - rows[j + 1]["refresh_s"] for j in range(i)]
    return rows[0]["refresh_s"], rows[i]["refresh_s"], rows[1]["t_s"], rows[i]["t_s"], steps


def stats_text(s, target):
    """One run's trace_stats in words."""
    return (f"measured FPP above the target (beyond sampling noise) in {s['above_sig']} of {s['n']} seconds, "
            f"peak {sci(s['max'])} = {fr(s['max'] / target)}x target at {s['max_t']} s; "
            f"up to {s['max_filters']} filters")

"""How well the models fit the measurements, and the verdict on each claim of the
paper (Sec. VI): pure functions of the measured rows."""

MIN_HITS = 50  # a point counts for a fit with at least this many false positives


def model_fit(rows, col, min_hits=MIN_HITS):
    """(lowest, highest measured / model ratio, points) over the points with enough
    false positives and a positive model value; (nan, nan, 0) if there are none."""
    rs = [r["measured"] / r[col] for r in rows if r["hits"] >= min_hits and r[col] > 0]
    return (min(rs), max(rs), len(rs)) if rs else (float("nan"), float("nan"), 0)


def worst_x(rows, col, min_hits=MIN_HITS):
    """The x of the point the model underestimates most."""
    return max((r for r in rows if r["hits"] >= min_hits and r[col] > 0),
               key=lambda r: r["measured"] / r[col])["x"]


def fit_verdict(lo, hi):
    """A model "reasonably matches" within 0.8-1.25 (reproduced), within 3x partly."""
    if lo >= 0.8 and hi <= 1.25:
        return "reproduced"
    if lo >= 1 / 3 and hi <= 3:
        return "partly"
    return "not reproduced"


def reduction_verdict(reduction, claimed=0.9):
    """Fig. 8: the optimized check's FPP `reduction` below the simple check's."""
    if abs(reduction - claimed) <= 0.05:
        return "reproduced"
    return "partly" if reduction >= 0.5 else "not reproduced"


def lower_everywhere(pairs, min_hits=MIN_HITS):
    """Whether the first of each (row, row) pair measures below the second wherever the
    second has enough false positives."""
    return all(p["measured"] < a["measured"] for p, a in pairs if a["hits"] >= min_hits)


def decreasing(values):
    """Whether each value is above the next."""
    return all(a > b for a, b in zip(values, values[1:]))


def refresh_verdict(factor, ordered):
    """Fig. 11: the paper's 1000x, within 300-3000x; partly if ordered and at least 10x."""
    if 300 <= factor <= 3000:
        return "reproduced"
    if ordered and factor >= 10:
        return "partly"
    return "not reproduced"


def filters_verdict(factor, claimed=5.5):
    """Fig. 12: the paper's 5.5x within a factor 2; partly if only the direction holds."""
    if claimed / 2 <= factor <= claimed * 2:
        return "reproduced"
    return "partly" if factor > 1 else "not reproduced"


def target_verdict(stats, target):
    """Fig. 13: FPP kept below the target (no second above it beyond noise); partly
    when at most 10% of the seconds are above it and the peak is at most twice it."""
    if stats["above_sig"] == 0:
        return "reproduced"
    if stats["above_sig"] <= 0.1 * stats["n"] and stats["max"] <= 2 * target:
        return "partly"
    return "not reproduced"


def first_growth_verdict(first_up, expected=(3, 6, 11.0, 10.0)):
    """Fig. 13: the first filter increase, (t_s, (filters, t), (filters, t)) or None,
    against the paper's 3→6 filters and 11→10 s."""
    if not first_up:
        return "not reproduced"
    _, (f0, r0), (f1, r1) = first_up
    return "reproduced" if (f0, f1, r0, r1) == expected else "partly"

"""scripts/reproduction/paper_trace.py: reading made-up per-second traces (Figs. 11-13):
shape changes, spans, plateaus, growth runs and their words."""

import unittest

from reproduction import paper_trace as tr


def trace(filters, refresh, measured=None, est=None, inserted=None, rate=None):
    n = len(filters)
    measured = measured or [1e-4] * n
    return [dict(t_s=i + 1, filters=filters[i], refresh_s=refresh[i], measured=measured[i],
                 est=(est or measured)[i], eq1=(est or measured)[i], inserted=(inserted or list(range(n)))[i],
                 rate=(rate or [10.0] * n)[i]) for i in range(n)]


class AtAndSlices(unittest.TestCase):
    def test_at_t_finds_the_row_of_a_second(self):
        rows = trace([3, 3, 6], [11, 11, 10])
        self.assertEqual(tr.at_t(rows, 3)["filters"], 6)

    def test_slice_mean_averages_the_refresh_period_of_the_sample(self):
        rows = [dict(t_s=t, m=float(t)) for t in range(0, 15)]
        self.assertEqual(tr.slice_mean(rows, 7, "m"), 7.0)  # 5..9
        self.assertEqual(tr.slice_mean(rows, 10, "m"), 7.0)  # on a refresh: the period it ends


class Events(unittest.TestCase):
    def test_lists_each_change_of_shape_from_the_initial_one(self):
        rows = trace([3, 3, 6, 6, 4], [11, 12, 11, 11, 13])
        self.assertEqual(tr.events(rows, (3, 11)),
                         [(2, (3, 11), (3, 12)), (3, (3, 12), (6, 11)), (5, (6, 11), (4, 13))])
        self.assertEqual(tr.events(trace([3], [11]), (3, 11)), [])

    def test_groups_merge_consecutive_changes_of_the_same_kind(self):
        ev = [(2, (3, 11), (3, 12)), (3, (3, 12), (3, 13)), (5, (3, 13), (6, 12)), (6, (6, 12), (12, 11))]
        groups = tr.ev_groups(ev)
        self.assertEqual([(g[0], g[1], g[2], g[3]) for g in groups],
                         [(2, 3, (3, 11), (3, 13)), (5, 6, (3, 13), (12, 11))])

    def test_text_names_the_changes_and_counts_the_rest(self):
        ev = [(2, (3, 11.0), (3, 12.0)), (3, (3, 12.0), (3, 13.0)), (9, (3, 13.0), (6, 12.0))]
        self.assertEqual(tr.ev_text(ev), "2–3 s: t 11→13 s; 9 s: 3→6 filters, t 13→12 s")
        self.assertEqual(tr.ev_text(ev, limit=1), "2–3 s: t 11→13 s … (1 more)")
        self.assertEqual(tr.ev_text([]), "no change")

    def test_first_growth_shortened_and_lengthened(self):
        ev = [(2, (3, 11), (3, 12)), (5, (3, 12), (6, 11)), (7, (6, 11), (4, 13))]
        self.assertEqual(tr.first_growth(ev), ev[1])
        self.assertIsNone(tr.first_growth(ev[:1]))
        self.assertEqual(tr.shortened(ev), [ev[1]])
        self.assertEqual(tr.lengthened(ev), [ev[0], ev[2]])

    def test_pre_growth_is_the_longest_period_before_the_first_growth(self):
        rows = trace([3, 3, 3, 6, 6], [11, 12, 13, 12, 20])
        self.assertEqual(tr.pre_growth(rows, tr.events(rows, (3, 11)), 11.0), 13)
        flat = trace([3, 3], [11, 11])
        self.assertEqual(tr.pre_growth(flat, [], 11.0), 11)


class Spans(unittest.TestCase):
    def test_spans_are_maximal_runs_of_consecutive_seconds(self):
        rows = trace([3] * 7, [11] * 7, measured=[2e-3, 2e-3, 0, 2e-3, 0, 2e-3, 2e-3])
        sp = tr.spans(rows, lambda r: r["measured"] > 1e-3)
        self.assertEqual(sp, [(1, 2), (4, 4), (6, 7)])
        self.assertEqual(tr.spans_text(sp), "1–2 s, 4 s, 6–7 s")
        self.assertEqual(tr.spans(rows, lambda r: False), [])

    def test_growth_run_is_the_longest_run_of_growing_seconds(self):
        rows = trace([3, 6, 6, 8, 16, 32, 32], [11] * 7)
        self.assertEqual(tr.growth_run(rows), (4, 6, [6, 8, 16, 32]))
        self.assertIsNone(tr.growth_run(trace([3, 3], [11, 11])))

    def test_plateau_spans_the_seconds_within_tolerance(self):
        rows = trace([3] * 6, [11] * 6, est=[1.0, 2.0, 2.01, 1.99, 2.1, 2.0], inserted=[0, 5, 9, 20, 30, 31])
        self.assertEqual(tr.plateau(rows, 3, "est"), (2, 4, 2.01, 15))

    def test_shortening_run_follows_t_down_one_second_at_a_time(self):
        rows = trace([3, 6, 12, 24, 24], [13, 12, 11, 10, 10])
        self.assertEqual(tr.shortening_run(rows, 2), (13, 10, 2, 4, [1, 1, 1]))


class Stats(unittest.TestCase):
    def test_counts_seconds_above_the_target_and_beyond_noise(self):
        rows = trace([3, 4, 8], [11, 11, 10], measured=[5e-4, 1.05e-3, 3e-3])
        s = tr.trace_stats(rows, 1e-3, 1.1e-3)
        self.assertEqual((s["n"], s["above"], s["above_sig"], s["max"], s["max_t"], s["max_filters"],
                          s["first_above"]), (3, 2, 1, 3e-3, 3, 8, 2))
        self.assertEqual(tr.stats_text(s, 1e-3),
                         "measured FPP above the target (beyond sampling noise) in 1 of 3 seconds, "
                         "peak 3.0e-3 = 3.00x target at 3 s; up to 8 filters")


if __name__ == "__main__":
    unittest.main()

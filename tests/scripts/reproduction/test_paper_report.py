"""scripts/reproduction/paper_report.py, paper_fig13.py and paper_fig13_text.py: the
tables, claims and sentences of the document from made-up measurements."""

import unittest

from reproduction import paper_fig13 as f13, paper_fig13_text as f13t, paper_report as rep
from reproduction.paper_experiments import DEFAULT13, F13_RUNS, PAPER13, Results


def pt(x, measured, hits, eq1=1e-4, est=2e-4, queries=1_000_000, **meta):
    return dict(meta, x=x, measured=measured, hits=hits, eq1=eq1, est=est, queries=queries)


class Tables(unittest.TestCase):
    def test_blocks_round_up_to_whole_512_bit_blocks(self):
        self.assertEqual(rep.blocks_table((6250, 512)), "| 6250 | 6656 | 13 |\n| 512 | 512 | 1 |")

    def test_point_table_has_three_columns_per_check(self):
        rows = {"paper": [pt(1, 2e-4, 200)], "pairs": [pt(1, 0.0, 0)]}
        text = rep.point_tbl(rows, ("paper", "pairs"), [1], "x")
        self.assertEqual(text.splitlines()[1], "|---" * 7 + "|")
        self.assertEqual(text.splitlines()[2],
                         "| 1 | 2.0e-4 (200 of 1.0e6) | 1.0e-4 | 2.0e-4 | 0 of 1.0e6 (< 3.0e-6) | 1.0e-4 | 2.0e-4 |")

    def test_no_hits_from_is_the_first_size_after_the_last_hit(self):
        rows = [pt(5000, 1e-3, 10), pt(6000, 0.0, 0), pt(7000, 1e-5, 1), pt(8000, 0.0, 0), pt(9000, 0.0, 0)]
        self.assertEqual(rep.no_hits_from(rows, [5000, 6000, 7000, 8000, 9000]), 8000)

    def test_sanity_names_runs_with_false_negatives(self):
        ok = ("fig11", "c1", dict(rechecked=5, false_negatives=0))
        bad = ("fig13", "c2", dict(rechecked=7, false_negatives=2))
        self.assertIn("**0 false negatives**", rep.sanity([ok]))
        text = rep.sanity([ok, bad])
        self.assertIn("All 2 recorded runs re-checked 12 inserted ids", text)
        self.assertTrue(text.endswith("Runs with false negatives: fig13: `c2`"))


class Fig8(unittest.TestCase):
    def test_reduction_compares_the_paper_check_with_the_simple_one(self):
        res = Results(F89={(6250, "window", "paper"): [pt(300, 1e-4, 100, est=2e-4)],
                           (6250, "window", "any"): [pt(300, 1e-3, 1000, est=1e-3)]})
        red, model = rep.reduction(res, 6250, "window")
        self.assertAlmostEqual(red, 0.9)
        self.assertAlmostEqual(model, 0.8)


def trace(filters, refresh, measured, rate=50.0):
    return [dict(t_s=i + 1, filters=f, refresh_s=t, measured=m, est=m, eq1=m, inserted=10 * i, rate=rate)
            for i, (f, t, m) in enumerate(zip(filters, refresh, measured))]


def fig13_runs():
    """Algorithm 3 doubles at 3 s and goes above the target; the guarded policy halves t and stays below."""
    alg3 = trace([3, 3, 6, 6, 6], [11, 11, 10, 10, 10], [1e-5, 9e-4, 2e-4, 5e-3, 4e-4])
    guarded = trace([4, 4, 6, 6, 6], [11, 11, 5.5, 5.5, 5.5], [1e-5, 9.5e-4, 1e-4, 1e-4, 1e-4])
    rows = {PAPER13: alg3, ("pairs", "classic", "paper"): alg3,
            ("paper", "blocked", "guarded"): guarded, DEFAULT13: guarded}
    end = {k: dict(bits_total=v[-1]["filters"] * 6656) for k, v in rows.items()}
    return f13.Fig13(rows, end, 6656)


class Fig13(unittest.TestCase):
    def test_claims_give_the_papers_setup_and_the_default_their_verdicts(self):
        claims = f13.claims(fig13_runs())
        self.assertTrue(claims["claim_target"].endswith("**not reproduced** |"))
        self.assertIn("1 of 5 seconds, peak 5.0e-3 = 5.00x target at 4 s", claims["claim_target"])
        self.assertIn("first filter increase at 3 s: 3→6 filters, refresh 11→10 s", claims["claim_growth"])
        self.assertTrue(claims["claim_growth"].endswith("**reproduced** |"))
        self.assertTrue(claims["claim_default"].endswith("**reproduced** |"))

    def test_table_has_a_row_per_run(self):
        lines = f13.fig13_table(fig13_runs()).splitlines()
        self.assertEqual(len(lines), 2 + len(F13_RUNS))
        self.assertIn("| 3 s: 3→6 filters, t 11→10 s |", lines[2])

    def test_both_merges_equal_texts(self):
        a, b = ("paper", "classic", "paper"), ("pairs", "classic", "paper")
        self.assertEqual(f13.both({a: "7", b: "7"}), "7 in both runs")
        self.assertEqual(f13.both({a: "7", b: "8"}), "7 with the paper check and 8 with the pairs check")

    def test_guarded_text_describes_the_halving_and_the_default(self):
        text = f13t.guarded_text(fig13_runs())
        self.assertIn("- **t never goes above the 11 s the filters were sized for.**", text)
        self.assertIn("3 s: 4→6 filters, t 11→5.5 s", text)
        self.assertIn("- **oncecount's default, the pairs check** (bottom right): measured FPP above the target "
                      "(beyond noise) in 0 of 5 seconds", text)
        self.assertNotIn("does not keep the FPP under the target", text)

    def test_alg3_text_ends_with_the_result(self):
        text = f13t.alg3_text(fig13_runs())
        self.assertTrue(text.splitlines()[-1].startswith("- **The result:** measured FPP above the target "
                                                         "(beyond noise) in 1 of 5 seconds with the paper check (4 s)"))

    def test_scaleup_lags_measure_from_the_last_scaleup_before_each_span(self):
        ups = [(3, None, None), (10, None, None)]
        self.assertEqual(f13t.scaleup_lags([(1, 2), (4, 6), (12, 15)], ups), [3, 5])

    def test_needed_filters_cover_the_window(self):
        self.assertEqual(f13t.needed_filters(DEFAULT13, 5.5), 3 + 4 - 1)
        self.assertEqual(f13t.needed_filters(PAPER13, 11.0), 2 + 2 - 1)


if __name__ == "__main__":
    unittest.main()

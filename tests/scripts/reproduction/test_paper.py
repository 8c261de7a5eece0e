"""scripts/reproduction/paper*.py: number formatting, query planning, the model fits and
the claim verdicts, the templates of the document and the arguments, on made-up inputs."""

import contextlib
import io
import math
import re
import unittest

from reproduction import paper, paper_fits, paper_format, paper_report
from reproduction.common import fill_template


def point(measured, hits, eq1=1e-3, est=1e-3, x=0, queries=1_000_000):
    return dict(measured=measured, hits=hits, eq1=eq1, est=est, x=x, queries=queries)


class Format(unittest.TestCase):
    def test_sci_has_d_significant_digits_and_a_bare_exponent(self):
        self.assertEqual(paper_format.sci(0.000123456), "1.2e-4")
        self.assertEqual(paper_format.sci(123456, 3), "1.23e5")
        self.assertEqual(paper_format.sci(5.0), "5.0e0")
        self.assertEqual(paper_format.sci(0), "0")

    def test_fv_writes_floats_to_six_digits_and_the_rest_as_is(self):
        self.assertEqual(paper_format.fv(1 / 3), "0.333333")
        self.assertEqual(paper_format.fv(2.0), "2")
        self.assertEqual(paper_format.fv(1e-12), "1e-12")
        self.assertEqual(paper_format.fv(42), "42")
        self.assertEqual(paper_format.fv("paper"), "paper")

    def test_meas_gives_the_evidence_or_the_upper_bound(self):
        self.assertEqual(paper_format.meas(point(1.5e-4, 150, queries=1_000_000)), "1.5e-4 (150 of 1.0e6)")
        self.assertEqual(paper_format.meas(point(0.0, 0, queries=2_000_000)), "0 of 2.0e6 (< 1.5e-6)")

    def test_fr_rounds_by_size_and_writes_infinity(self):
        self.assertEqual(paper_format.fr(1234.5), "1234")
        self.assertEqual(paper_format.fr(12.345), "12.3")
        self.assertEqual(paper_format.fr(1.2345), "1.23")
        self.assertEqual(paper_format.fr(float("inf")), "∞")

    def test_ratio_is_infinite_over_zero(self):
        self.assertEqual(paper_format.ratio(3, 2), 1.5)
        self.assertEqual(paper_format.ratio(3, 0), float("inf"))

    def test_hits_of_rounds_the_count(self):
        self.assertEqual(paper_format.hits_of(0.0012999, 10_000), 13)

    def test_table_has_a_separator_per_column(self):
        self.assertEqual(paper_format.table(["a", "b"], [[1, "x"]]), "| a | b |\n|---|---|\n| 1 | x |")

    def test_seed_loop_runs_the_command_for_every_seed(self):
        loop = paper_format.seed_loop("oc filter-eval --seed 1 --queries 5", [1, 2, 3])
        self.assertEqual(loop, 'for seed in 1 2 3; do\n  oc filter-eval --seed "$seed" --queries 5\ndone')

    def test_cmd_str_quotes_what_the_shell_would_split(self):
        self.assertEqual(paper_format.cmd_str("bin/oc", ["--rate", "1.5", "--x", "a b"]),
                         "bin/oc filter-eval --rate 1.5 --x 'a b'")


class PlanQueries(unittest.TestCase):
    def test_nice_rounds_up_to_two_significant_digits(self):
        self.assertEqual(paper_format.nice(123456), 130000)
        self.assertEqual(paper_format.nice(120000), 120000)
        self.assertEqual(paper_format.nice(7.2), 8)
        self.assertEqual(paper_format.nice(99.1), 100)

    def test_asks_for_about_hits_false_positives_at_least_the_papers_count(self):
        self.assertEqual(paper_format.plan_queries(1e-4, 10**8), paper_format.nice(paper_format.HITS / 1e-4))
        self.assertEqual(paper_format.plan_queries(0.1, 10**8), paper_format.QMIN)

    def test_caps_at_qmax_when_some_false_positive_is_still_expected(self):
        self.assertEqual(paper_format.plan_queries(1e-7, 10**8), 10**8)

    def test_settles_for_a_bound_when_no_false_positive_is_expected(self):
        self.assertEqual(paper_format.plan_queries(1e-12, 10**8), 20_000_000)
        self.assertEqual(paper_format.plan_queries(0.0, 10**6), 10**6)


class Fits(unittest.TestCase):
    def test_model_fit_ranges_over_points_with_enough_hits(self):
        rows = [point(2e-3, 100, eq1=1e-3), point(1e-3, 60, eq1=2e-3), point(9e-3, 10, eq1=1e-3),
                point(1e-3, 100, eq1=0.0)]
        self.assertEqual(paper_fits.model_fit(rows, "eq1"), (0.5, 2.0, 2))

    def test_model_fit_without_points_is_nan(self):
        lo, hi, n = paper_fits.model_fit([point(1e-3, 3)], "est")
        self.assertTrue(math.isnan(lo) and math.isnan(hi))
        self.assertEqual(n, 0)

    def test_worst_x_is_where_the_model_underestimates_most(self):
        rows = [point(2e-3, 100, est=1e-3, x=5000), point(6e-3, 100, est=1e-3, x=30000),
                point(9e-3, 1, est=1e-3, x=7000)]
        self.assertEqual(paper_fits.worst_x(rows, "est"), 30000)

    def test_fit_verdict_bands(self):
        self.assertEqual(paper_fits.fit_verdict(0.8, 1.25), "reproduced")
        self.assertEqual(paper_fits.fit_verdict(0.79, 1.0), "partly")
        self.assertEqual(paper_fits.fit_verdict(0.5, 3.0), "partly")
        self.assertEqual(paper_fits.fit_verdict(1.0, 3.5), "not reproduced")
        self.assertEqual(paper_fits.fit_verdict(0.3, 1.0), "not reproduced")


class Verdicts(unittest.TestCase):
    def test_reduction_is_reproduced_within_five_points_of_ninety_percent(self):
        self.assertEqual(paper_fits.reduction_verdict(0.86), "reproduced")
        self.assertEqual(paper_fits.reduction_verdict(0.7), "partly")
        self.assertEqual(paper_fits.reduction_verdict(0.96), "partly")
        self.assertEqual(paper_fits.reduction_verdict(0.4), "not reproduced")

    def test_lower_everywhere_ignores_points_with_few_hits(self):
        lower = (point(1e-4, 10), point(1e-3, 100))
        higher_but_noisy = (point(1e-3, 100), point(1e-4, 10))
        self.assertTrue(paper_fits.lower_everywhere([lower, higher_but_noisy]))
        self.assertFalse(paper_fits.lower_everywhere([(point(1e-3, 100), point(1e-3, 100))]))

    def test_decreasing_is_strict(self):
        self.assertTrue(paper_fits.decreasing([4, 3, 1]))
        self.assertFalse(paper_fits.decreasing([4, 4, 1]))

    def test_refresh_verdict(self):
        self.assertEqual(paper_fits.refresh_verdict(1000, False), "reproduced")
        self.assertEqual(paper_fits.refresh_verdict(50, True), "partly")
        self.assertEqual(paper_fits.refresh_verdict(50, False), "not reproduced")
        self.assertEqual(paper_fits.refresh_verdict(5, True), "not reproduced")

    def test_filters_verdict_within_a_factor_two_of_five_and_a_half(self):
        self.assertEqual(paper_fits.filters_verdict(2.75), "reproduced")
        self.assertEqual(paper_fits.filters_verdict(11), "reproduced")
        self.assertEqual(paper_fits.filters_verdict(40), "partly")
        self.assertEqual(paper_fits.filters_verdict(1.0), "not reproduced")

    def test_target_verdict(self):
        self.assertEqual(paper_fits.target_verdict(dict(above_sig=0, n=90, max=5e-3), 1e-3), "reproduced")
        self.assertEqual(paper_fits.target_verdict(dict(above_sig=9, n=90, max=2e-3), 1e-3), "partly")
        self.assertEqual(paper_fits.target_verdict(dict(above_sig=9, n=90, max=3e-3), 1e-3), "not reproduced")
        self.assertEqual(paper_fits.target_verdict(dict(above_sig=10, n=90, max=1e-3), 1e-3), "not reproduced")

    def test_first_growth_verdict_compares_with_the_papers_narrative(self):
        self.assertEqual(paper_fits.first_growth_verdict((16, (3, 11.0), (6, 10.0))), "reproduced")
        self.assertEqual(paper_fits.first_growth_verdict((16, (3, 14.0), (6, 13.0))), "partly")
        self.assertEqual(paper_fits.first_growth_verdict(None), "not reproduced")


class Templates(unittest.TestCase):
    def test_every_section_fills_with_no_leftover_dollar(self):
        for sec in paper_report.SECTIONS:
            with open(f"{paper_report.__file__[:-len('paper_report.py')]}templates/paper_{sec}.md") as f:
                names = set(re.findall(r"\$\{?(\w+)", f.read()))
            self.assertTrue(names, sec)
            text = fill_template(f"paper_{sec}.md", **{n: f"<{n}>" for n in names})
            self.assertNotIn("$", text, sec)
            for n in names:
                self.assertIn(f"<{n}>", text)

    def test_a_missing_field_is_an_error(self):
        with self.assertRaises(KeyError):
            fill_template("paper_intro.md", runs=1)

    def test_the_document_is_the_sections_in_order(self):
        fields = {}
        for sec in paper_report.SECTIONS:
            with open(f"{paper_report.__file__[:-len('paper_report.py')]}templates/paper_{sec}.md") as f:
                fields[sec] = {n: "x" for n in re.findall(r"\$\{?(\w+)", f.read())}
        doc = paper_report.document(fields)
        self.assertTrue(doc.startswith("# Reproducing the FBF paper's experiments"))
        heads = [line for line in doc.splitlines() if line.startswith("## ")]
        self.assertEqual(heads[0], "## How to read the results")
        self.assertTrue(heads[-1].startswith("## Where oncecount differs"))
        self.assertEqual([h.split(" —")[0] for h in heads[2:8]], [f"## Fig. {n}" for n in range(8, 14)])


class Arguments(unittest.TestCase):
    def test_jobs_defaults_to_the_cpus_and_takes_a_positive_integer(self):
        self.assertEqual(paper.parse_args(["--binary", "b", "--jobs", "3"]).jobs, 3)
        self.assertGreaterEqual(paper.parse_args(["--binary", "b"]).jobs, 1)
        for bad in ("0", "-1", "x", "1.5"):
            with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()) as err:
                paper.parse_args(["--binary", "b", "--jobs", bad])
            self.assertIn(f"--jobs: expected a positive integer, got {bad}", err.getvalue())

    def test_commit_and_dirty_reach_the_provenance(self):
        args = paper.parse_args(["--binary", "b", "--commit", "abc1234", "--dirty"])
        self.assertEqual((args.commit, args.dirty), ("abc1234", True))


if __name__ == "__main__":
    unittest.main()

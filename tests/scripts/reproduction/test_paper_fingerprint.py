"""scripts/reproduction/paper_fingerprint.py: the table, the claim and the cost of
adapting of the fingerprint filter's runs, from made-up traces."""

import unittest

from reproduction import paper_fingerprint as fp
from reproduction.paper_experiments import FP_TARGETS, Results


def trace(measured, bits, target):
    return [dict(t_s=i + 1, filters=8 + i, refresh_s=3.1, measured=m, est=0.9 * m, eq1=0.9 * m,
                 inserted=100 * i, rate=50.0, bits=b) for i, (m, b) in enumerate(zip(measured, bits))]


class FakeLog:
    """The commands of the runs, as EvalRunner.commands gives them."""

    def commands(self, fig):
        assert fig == "fingerprint"
        return ["oc filter-eval --adaptive --target-fpp 0.001", "oc filter-eval --expected-rate 100"]


def results(measured_at_1e3):
    """Two runs: one schedule at each target; the first one's trace as given."""
    t1, t2 = sorted(FP_TARGETS, reverse=True)
    rows = {("fig13", t1): trace(measured_at_1e3, [2000, 8000, 4000], t1),
            ("fig11", t2): trace([1e-6, 5e-6, 9e-6], [1000, 1000, 3000], t2)}
    end = {k: dict(bits_total=v[-1]["bits"], false_negatives=0) for k, v in rows.items()}
    sized = {k: dict(bits_total=2000, false_positive_rate=t / 2) for k, (_, t) in zip(rows, rows)}
    return Results(FP=rows, FP_END=end, FP_SIZED=sized, FP_PEAK={"fig13": 100.0, "fig11": 700.0})


class Fingerprint(unittest.TestCase):
    def test_a_second_is_above_the_target_only_beyond_three_standard_deviations(self):
        target = max(FP_TARGETS)
        self.assertGreater(fp.above_noise(target), target)
        self.assertAlmostEqual(fp.above_noise(target) - target, 3 * (target / FP_TARGETS[target]) ** 0.5)

    def test_the_cost_is_memory_over_the_filter_sized_for_the_peak_rate(self):
        res = results([1e-4, 5e-4, 9e-4])
        f = fp.FingerprintRuns(res.FP, res.FP_END, res.FP_SIZED, res.FP_PEAK)
        self.assertEqual(f.cost(("fig13", max(FP_TARGETS))), (4.0, 2.0))
        self.assertEqual(f.cost(("fig11", min(FP_TARGETS))), (1.5, 1.5))

    def test_the_claim_is_met_when_no_second_is_above_the_target_beyond_noise(self):
        fields = fp.fields(results([1e-4, 5e-4, 9e-4]), FakeLog())
        self.assertTrue(fields["claim"].endswith("| **met** |"), fields["claim"])
        self.assertIn("in 0 of 6 seconds", fields["claim"])
        self.assertEqual((fields["cost_peak_lo"], fields["cost_peak_hi"]), ("1.50", "4.00"))
        self.assertIn("--expected-rate", fields["commands"])
        self.assertEqual(fields["cost_worst"], "Fig. 13 (rise, fall, rise) at 0.001, 4.00x at its peak and "
                         "2.00x at its end")

    def test_the_claim_is_not_met_when_a_second_is_above_the_target_beyond_noise(self):
        fields = fp.fields(results([1e-4, 1.5e-3, 9e-4]), FakeLog())
        self.assertTrue(fields["claim"].endswith("| **not met** |"), fields["claim"])
        self.assertIn("in 1 of 6 seconds", fields["claim"])
        self.assertIn("peak measured 1.50x the target", fields["claim"])

    def test_the_table_has_a_row_per_run(self):
        fields = fp.fields(results([1e-4, 5e-4, 9e-4]), FakeLog())
        lines = fields["table"].splitlines()
        self.assertEqual(len(lines), 4)
        self.assertIn("| Fig. 13 (rise, fall, rise) | 0.001 | 0 of 3 |", lines[2])


if __name__ == "__main__":
    unittest.main()

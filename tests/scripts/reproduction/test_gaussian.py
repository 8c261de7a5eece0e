"""scripts/reproduction/gaussian.py: the runs it plans, the k it picks, the bests it
reports and the tables it writes, on made-up results."""

import math
import unittest

from reproduction import gaussian


def run(kind, b, budget, k, fpr, ns=100.0):
    return dict(kind=kind, b=b, budget=budget, k=k, fpr=fpr, ns=ns)


class OptimalHashes(unittest.TestCase):
    def test_is_ln2_times_cells_per_id_rounded(self):
        self.assertEqual(gaussian.optimal_hashes(16 * 20000, 20000), round(16 * math.log(2)))
        self.assertEqual(gaussian.optimal_hashes(8 * 20000, 20000), 6)

    def test_is_at_least_one(self):
        self.assertEqual(gaussian.optimal_hashes(10, 20000), 1)


class FprConfigurations(unittest.TestCase):
    def test_lists_each_configuration_once_in_run_order(self):
        keys = gaussian.fpr_configurations()
        self.assertEqual(len(keys), len(set(keys)))
        self.assertEqual(keys[:3], [(3, 64, "fast"), (5, 64, "fast"), (10, 64, "fast")])
        self.assertIn((5, 64, "exact"), keys)
        self.assertEqual(keys[-1], (3, 8, "fast"))

    def test_parses_the_table_and_skips_comments(self):
        rows = gaussian.parse_fpr_rows("# n med\n1 0.5 0.25\n\n2 0.75 1\n")
        self.assertEqual(rows, [[1.0, 0.5, 0.25], [2.0, 0.75, 1.0]])


class FbfSpecs(unittest.TestCase):
    def test_tries_every_budget_with_both_constituents_around_the_optimal_k(self):
        specs = gaussian.fbf_specs(20000)
        for bpi in gaussian.BUDGETS:
            blooms = [s for s in specs if s["kind"] == "bloom" and s["budget"] == bpi]
            best_k = gaussian.optimal_hashes(bpi * 20000, 20000)
            self.assertEqual([s["k"] for s in blooms], [best_k - 1, best_k, best_k + 1])
            for b in (4, 8):
                gauss = [s for s in specs if s["kind"] == "gaussian" and s["b"] == b and s["budget"] == bpi]
                self.assertTrue(gauss)
                self.assertTrue(all(s["units"] * b == bpi * 20000 for s in gauss), "equal memory")
                self.assertIn(1, [s["k"] for s in gauss])

    def test_sizes_the_services_gaussian_with_as_many_cells_as_bits(self):
        same = [s for s in gaussian.fbf_specs(20000) if s["kind"] == "gaussian-same-cells"]
        self.assertEqual(len(same), 4)
        for s in same:
            self.assertEqual(s["units"], s["budget"] // s["b"] * 20000)

    def test_gives_gaussian_runs_their_filter_and_cell_width(self):
        bloom = gaussian.eval_args("oc", dict(kind="bloom", b=1, units=100, k=3))
        gauss = gaussian.eval_args("oc", dict(kind="gaussian", b=4, units=25, k=2))
        self.assertNotIn("--filter", bloom)
        self.assertEqual(gauss[-4:], ["--filter", "gaussian", "--cell-bits", 4])


class Bests(unittest.TestCase):
    def test_picks_the_lowest_rate_then_the_lowest_k(self):
        rows = [run("bloom", 1, 8, 5, 0.01), run("bloom", 1, 8, 6, 0.001), run("bloom", 1, 8, 7, 0.001),
                run("bloom", 1, 12, 4, 0.0)]
        self.assertEqual(gaussian.best(rows, "bloom", 1, 8)["k"], 6)

    def test_tables_one_row_per_budget(self):
        rows = []
        for bpi in gaussian.BUDGETS:
            rows += [run("bloom", 1, bpi, 5, 1e-3), run("gaussian", 4, bpi, 2, 0.25), run("gaussian", 8, bpi, 3, 0.5)]
        table = gaussian.fbf_table(rows)
        self.assertEqual(len(table), 2 + len(gaussian.BUDGETS))
        self.assertEqual(table[2], "| 8 | 0.001 (5) | 0.25 (2) | 0.5 (3) | 100 | 100 | 100 |")
        dat = gaussian.fbf_dat(rows).splitlines()
        self.assertEqual(dat[1], "8 0.001 5 0.25 2 0.5 3 100 100 100")

    def test_compares_the_services_sizing_with_bloom_filters_of_as_much_memory(self):
        rows = [run("gaussian-same-cells", 4, 32, 6, 0.02), run("bloom", 1, 8, 6, 0.004),
                run("bloom", 1, 24, 16, 1e-5), run("bloom", 1, 32, 21, 0.0)]
        table = gaussian.same_cells_table(rows)
        self.assertEqual(table[2], "| 8 | 4 | 32 | 0.02 | 0.004 | 0 |")


class SmallSetsTable(unittest.TestCase):
    def test_reports_medians_and_the_ratio_of_means_at_four_sizes(self):
        row = [0.0, 0.5, 0, 0, 0.2, 0.25, 0, 0, 0.1, 0, 0, 0, 0.001]
        runs = {key: [row] * 100 for key in gaussian.fpr_configurations()}
        table = gaussian.small_sets_table(runs)
        self.assertEqual(len(table), 2 + 7 * 4)
        self.assertEqual(table[2], "| k=3, double | 20 | 0.5000 | 0.2500 | 2.00 | 0.001 |")
        self.assertTrue(any("std::exp" in line for line in table))


if __name__ == "__main__":
    unittest.main()

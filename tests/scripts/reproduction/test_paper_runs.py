"""scripts/reproduction/paper_runs.py and paper_experiments.py: the runs planned, the
points and traces read from made-up filter-eval results, and the files written."""

import os
import stat
import tempfile
import unittest

from reproduction import common, paper_experiments as px, paper_runs


def result(fpr, est=1e-3, eq1=5e-4, inserted=300, bits=6656, filters=3):
    return dict(false_positive_rate=fpr, estimated_fpp=est, estimated_fpp_eq1=eq1, inserted=inserted,
                bits_total=bits * filters, filters=filters)


class FakeEval:
    """Answers filter-eval runs with `answer(args)` and records them, as EvalRunner does."""

    def __init__(self, answer):
        self.answer = answer
        self.log = []

    def many(self, fig, arglists, record=True):
        results = [self.answer(a) for a in arglists]
        if record:
            self.log += [(fig, self.cmd(a), r) for a, r in zip(arglists, results)]
        return results

    def cmd(self, args):
        return "oc filter-eval " + " ".join(map(str, args))


class Points(unittest.TestCase):
    def test_point_row_pools_the_seeds(self):
        row = paper_runs.point_row(dict(x=300), [result(2e-4, est=1e-3), result(6e-4, est=3e-3)], 10_000, "cmd")
        self.assertEqual((row["x"], row["hits"], row["queries"], row["measured"]), (300, 8, 20_000, 4e-4))
        self.assertEqual((row["bits"], row["est"], row["seed_min"], row["seed_max"]), (6656, 2e-3, 2e-4, 6e-4))
        self.assertEqual((row["ub"], row["cmd"]), (0.0, "cmd"))

    def test_a_point_without_false_positives_gets_the_bound(self):
        row = paper_runs.point_row({}, [result(0.0)] * 2, 500_000, "cmd")
        self.assertEqual(row["ub"], 3.0 / 1_000_000)

    def test_measure_points_sizes_queries_from_the_probe_and_runs_every_seed(self):
        ev = FakeEval(lambda a: result(1e-3 if a[a.index("--queries") + 1] else 0.0, est=1e-3))
        rows = paper_runs.measure_points(ev, "figX", [(dict(x=1), ["--bits", 6250])], 10**8, seeds=[1, 2])
        self.assertEqual(len(ev.log), 2, "the probe is not recorded")
        self.assertEqual([a for _, a, _ in ev.log],
                         ["oc filter-eval --bits 6250 --seed 1 --queries 200000",
                          "oc filter-eval --bits 6250 --seed 2 --queries 200000"])
        self.assertEqual((rows[0]["queries"], rows[0]["hits"]), (400_000, 400))
        self.assertTrue(rows[0]["cmd"].startswith("for seed in 1 2; do\n  oc filter-eval --bits 6250 --seed \"$seed\""))


class Traces(unittest.TestCase):
    def test_trace_rows_convert_units_and_count_hits(self):
        r = dict(trace=[dict(t_s=4, rate=100, inserted=250, filters=3, refresh_ms=5000, estimated_fpp=1e-3,
                             estimated_fpp_eq1=5e-4, measured_fpp=2e-3, bits_total=20480)])
        (row,) = paper_runs.trace_rows(r, 1000)
        self.assertEqual((row["refresh_s"], row["rate"], row["hits"], row["queries"]), (5.0, 100.0, 2, 1000))
        self.assertEqual(row["bits"], 20480)
        self.assertIsInstance(row["rate"], float)


class Files(unittest.TestCase):
    def test_dat_text_has_the_header_and_tab_separated_columns(self):
        text = paper_runs.dat_text("hdr", ["x", "measured"], [dict(x=1, measured=0.5), dict(x=2, measured=1 / 3)])
        self.assertEqual(text, "# hdr\n# x\tmeasured\n1\t0.5\n2\t0.333333\n")

    def test_schedule_and_its_duration(self):
        with tempfile.TemporaryDirectory() as d:
            path = paper_runs.write_schedule(d, "r.csv", [(0, 10.0), (1, 20.0)])
            with open(path) as f:
                self.assertEqual(f.read(), "second,rate\n0,10.000000\n1,20.000000\n")
        self.assertEqual(paper_runs.duration_for([(0, 10.0), (1, 20.0)], 20), 1501)
        self.assertEqual(paper_runs.duration_for([(0, 10.0), (1, 20.0)], 10), 1001)
        self.assertEqual(paper_runs.duration_for([(0, 10.0)], 50), 1000)

    def test_commands_text_groups_the_runs_by_figure(self):
        text = paper_runs.commands_text([("a", "c1", {}), ("a", "c2", {}), ("b", "c3", {})])
        self.assertTrue(text.startswith("# Every recorded filter-eval run"))
        self.assertTrue(text.endswith("\n# a\nc1\nc2\n\n# b\nc3\n"))


class EvalRunnerTest(unittest.TestCase):
    def test_runs_the_private_copy_and_records_the_shown_binary(self):
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "oc")
            with open(fake, "w") as f:
                f.write('#!/bin/sh\necho \'{"args": "\'"$*"\'"}\'\n')
            os.chmod(fake, stat.S_IRWXU)
            ev = paper_runs.EvalRunner(common.Runner("test"), fake, "build/oc", 2)
            out = ev.many("fig", [["--bits", 1], ["--bits", 2]])
        self.assertEqual(out, [{"args": "filter-eval --bits 1"}, {"args": "filter-eval --bits 2"}])
        self.assertEqual(ev.commands("fig"), ["build/oc filter-eval --bits 1", "build/oc filter-eval --bits 2"])


class Experiments(unittest.TestCase):
    def test_figs_8_and_9_sweep_every_check_and_spread(self):
        specs = px.fig89_specs()
        self.assertEqual(len(specs), 3 * 3 * len(px.L_GRID))
        meta, args = next(s for s in specs if s[0] == dict(m=6250, spread="window", check="paper", x=300))
        self.assertEqual(args[args.index("--rate") + 1], f"{300 / 9.998:.6f}")
        self.assertEqual(args[args.index("--duration-ms") + 1], 9999)

    def test_fig_11_schedule_is_100_ids_a_second_in_its_second(self):
        sched = px.schedule11()
        self.assertAlmostEqual(sched[px.S100_11][1], 100.0)
        self.assertGreaterEqual(sum(r for _, r in sched), 5000)
        self.assertLess(sum(r for _, r in sched[:-1]), 5000)

    def test_fig_13_schedule_rises_subsides_and_rises_again(self):
        rates = dict(px.schedule13())
        self.assertEqual((rates[0], rates[15], rates[23], rates[44], rates[90]), (5, 57.5, 9.5, 99.5, 100.0))

    def test_fig_13_runs_name_their_files_and_trace(self):
        self.assertEqual(px.f13_file(px.DEFAULT13), "fig13_policy-guarded_check-pairs_blocked.dat")
        args = px.fig13_args("s.csv", *px.PAPER13)
        self.assertEqual(args[args.index("--policy") + 1], "paper")
        self.assertIn("--trace", args)


if __name__ == "__main__":
    unittest.main()

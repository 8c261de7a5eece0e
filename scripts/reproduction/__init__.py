"""The reproductions of the papers' experiments: scripts/reproduce-gaussian runs
gaussian.py, scripts/reproduce-paper runs paper.py and its paper_*.py modules. Each
runs the project's own binaries, writes data files, gnuplot scripts, PNG plots and a
results document under docs/, and every run has fixed seeds, so that a rerun on the
same code gives the same numbers except the timings."""

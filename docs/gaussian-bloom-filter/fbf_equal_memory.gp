# Regenerate: cd docs/gaussian-bloom-filter && gnuplot fbf_equal_memory.gp
set terminal pngcairo size 800,520 font "Sans,11"
set output "fbf_equal_memory.png"
set grid lc rgb "#dddddd"
set xlabel "memory per constituent filter (bits per id it holds)"
set ylabel "false-positive rate"
set yrange [0:*]
set key left top box opaque
set style fill transparent solid 0.25 noborder
set logscale y
set yrange [5e-7:1]
set format y "10^{%L}"
set key below
set title "N-FBF, N = 8, 10,000 ids/s, t = 1 s, 10^6 queries, best k per point\n(no false positive in 10^6 queries is drawn at 10^{-6})"
plot "fbf_equal_memory.dat" u 1:($2>0?$2:1e-6) w lp lw 2 pt 7 lc rgb "#d62728" t "blocked Bloom constituents", \
  "fbf_equal_memory.dat" u 1:($4>0?$4:1e-6) w lp lw 2 pt 5 lc rgb "#2ca02c" t "Gaussian, 4-bit cells", \
  "fbf_equal_memory.dat" u 1:($6>0?$6:1e-6) w lp lw 2 pt 9 lc rgb "#1f77b4" t "Gaussian, 8-bit cells"

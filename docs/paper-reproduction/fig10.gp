# Regenerate: cd docs/paper-reproduction && gnuplot fig10.gp
set terminal pngcairo size 1100,700 enhanced font "DejaVu Sans,11"
set grid lc rgb "#dddddd"
set mytics 10
set format y "10^{%L}"
set style line 1 lc rgb "#d62728" lw 2
set output "fig10.png"
set title "Fig. 10: 300 ids (spread over 0-10 s), basic FBF, k = 5, t = 5 s; bars: lowest and highest of 8 seeds"
set logscale y
set xlabel "bits per constituent filter (used, whole 512-bit blocks)"
set ylabel "false positive probability"
set yrange [1e-16:1e-2]
set xrange [4500:31000]
set key right top box opaque font ",10"
plot "fig10_paper.dat" u 3:($6>0?$6:1/0) w p lc rgb "#1f77b4" pt 7 ps 1.1 t "paper check: measured (8 seeds)", \
  "fig10_paper.dat" u 3:($10>0?$6:1/0):10:11 w yerrorbars lc rgb "#1f77b4" pt 7 ps 1.1 notitle, \
  "fig10_paper.dat" u 3:($5==0?$9:1/0) w p lc rgb "#1f77b4" pt 10 ps 1.3 t "paper check: no hit, bound 3/Q", \
  "fig10_paper.dat" u 3:8 w l lc rgb "#1f77b4" dt 3 lw 2 t "paper check: Eq. 1 in Eq. 3", \
  "fig10_paper.dat" u 3:7 w l lc rgb "#1f77b4" lw 1.5 t "paper check: blocked model", \
  "fig10_pairs.dat" u 3:($6>0?$6:1/0) w p lc rgb "#2ca02c" pt 7 ps 1.1 t "pairs check: measured (8 seeds)", \
  "fig10_pairs.dat" u 3:($10>0?$6:1/0):10:11 w yerrorbars lc rgb "#2ca02c" pt 7 ps 1.1 notitle, \
  "fig10_pairs.dat" u 3:($5==0?$9:1/0) w p lc rgb "#2ca02c" pt 10 ps 1.3 t "pairs check: no hit, bound 3/Q", \
  "fig10_pairs.dat" u 3:8 w l lc rgb "#2ca02c" dt 3 lw 2 t "pairs check: Eq. 1 in Eq. 3", \
  "fig10_pairs.dat" u 3:7 w l lc rgb "#2ca02c" lw 1.5 t "pairs check: blocked model"

# Regenerate: cd docs/paper-reproduction && gnuplot fig09.gp
set terminal pngcairo size 1500,620 enhanced font "DejaVu Sans,11"
set grid lc rgb "#dddddd"
set mytics 10
set format y "10^{%L}"
set style line 1 lc rgb "#d62728" lw 2
set output "fig09.png"
set multiplot layout 1,2 title "Fig. 9: model against measurement, basic FBF, k = 5, t = 5 s, ids spread over 0-10 s"
set logscale y
set xlabel "ids inserted"
set ylabel "false positive probability"
set yrange [1e-12:1]
set key right bottom box opaque font ",10"
set title "m = 6250 bits requested, 6656 used (13 blocks of 512); bars: lowest and highest seed"
plot "fig08-09_m6250_window_paper.dat" u 2:($6>0?$6:1/0) w p lc rgb "#1f77b4" pt 7 ps 1.1 t "paper check: measured (8 seeds)", \
  "fig08-09_m6250_window_paper.dat" u 2:($10>0?$6:1/0):10:11 w yerrorbars lc rgb "#1f77b4" pt 7 ps 1.1 notitle, \
  "fig08-09_m6250_window_paper.dat" u 2:($5==0?$9:1/0) w p lc rgb "#1f77b4" pt 10 ps 1.3 t "paper check: no hit, bound 3/Q", \
  "fig08-09_m6250_window_paper.dat" u 2:8 w l lc rgb "#1f77b4" dt 3 lw 2 t "paper check: Eq. 1 in Eq. 3", \
  "fig08-09_m6250_window_paper.dat" u 2:7 w l lc rgb "#1f77b4" lw 1.5 t "paper check: blocked model", \
  "fig08-09_m6250_window_pairs.dat" u 2:($6>0?$6:1/0) w p lc rgb "#2ca02c" pt 7 ps 1.1 t "pairs check: measured (8 seeds)", \
  "fig08-09_m6250_window_pairs.dat" u 2:($10>0?$6:1/0):10:11 w yerrorbars lc rgb "#2ca02c" pt 7 ps 1.1 notitle, \
  "fig08-09_m6250_window_pairs.dat" u 2:($5==0?$9:1/0) w p lc rgb "#2ca02c" pt 10 ps 1.3 t "pairs check: no hit, bound 3/Q", \
  "fig08-09_m6250_window_pairs.dat" u 2:8 w l lc rgb "#2ca02c" dt 3 lw 2 t "pairs check: Eq. 1 in Eq. 3", \
  "fig08-09_m6250_window_pairs.dat" u 2:7 w l lc rgb "#2ca02c" lw 1.5 t "pairs check: blocked model"
set title "m = 6144 bits requested, 6144 used (12 blocks of 512); bars: lowest and highest seed"
plot "fig08-09_m6144_window_paper.dat" u 2:($6>0?$6:1/0) w p lc rgb "#1f77b4" pt 7 ps 1.1 t "paper check: measured (8 seeds)", \
  "fig08-09_m6144_window_paper.dat" u 2:($10>0?$6:1/0):10:11 w yerrorbars lc rgb "#1f77b4" pt 7 ps 1.1 notitle, \
  "fig08-09_m6144_window_paper.dat" u 2:($5==0?$9:1/0) w p lc rgb "#1f77b4" pt 10 ps 1.3 t "paper check: no hit, bound 3/Q", \
  "fig08-09_m6144_window_paper.dat" u 2:8 w l lc rgb "#1f77b4" dt 3 lw 2 t "paper check: Eq. 1 in Eq. 3", \
  "fig08-09_m6144_window_paper.dat" u 2:7 w l lc rgb "#1f77b4" lw 1.5 t "paper check: blocked model", \
  "fig08-09_m6144_window_pairs.dat" u 2:($6>0?$6:1/0) w p lc rgb "#2ca02c" pt 7 ps 1.1 t "pairs check: measured (8 seeds)", \
  "fig08-09_m6144_window_pairs.dat" u 2:($10>0?$6:1/0):10:11 w yerrorbars lc rgb "#2ca02c" pt 7 ps 1.1 notitle, \
  "fig08-09_m6144_window_pairs.dat" u 2:($5==0?$9:1/0) w p lc rgb "#2ca02c" pt 10 ps 1.3 t "pairs check: no hit, bound 3/Q", \
  "fig08-09_m6144_window_pairs.dat" u 2:8 w l lc rgb "#2ca02c" dt 3 lw 2 t "pairs check: Eq. 1 in Eq. 3", \
  "fig08-09_m6144_window_pairs.dat" u 2:7 w l lc rgb "#2ca02c" lw 1.5 t "pairs check: blocked model"
unset multiplot

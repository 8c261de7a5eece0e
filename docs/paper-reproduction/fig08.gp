# Regenerate: cd docs/paper-reproduction && gnuplot fig08.gp
set terminal pngcairo size 1500,620 enhanced font "DejaVu Sans,11"
set grid lc rgb "#dddddd"
set mytics 10
set format y "10^{%L}"
set style line 1 lc rgb "#d62728" lw 2
set output "fig08.png"
set multiplot layout 1,2 title "Fig. 8: basic FBF (N = 1), m = 6250 bits requested (6656 used), k = 5, t = 5 s, no adaptation"
set logscale y
set xlabel "ids inserted"
set ylabel "false positive probability (measured)"
set yrange [1e-9:1]
set key left top box opaque font ",10"
set title "ids spread evenly over 0-10 s = (N+1)t, queried at 9.999 s"
plot "fig08-09_m6250_window_any.dat" u 2:($6>0?$6:1/0) w lp lc rgb "#d62728" pt 7 ps 0.9 lw 1.5 t "simple check (any filter, Sec. III-A)", \
  "fig08-09_m6250_window_any.dat" u 2:($5==0?$9:1/0) w p lc rgb "#d62728" pt 10 ps 1.3 notitle, \
  "fig08-09_m6250_window_any.dat" u 2:7 w l lc rgb "#d62728" dt 2 lw 1.2 notitle, \
  "fig08-09_m6250_window_paper.dat" u 2:($6>0?$6:1/0) w lp lc rgb "#1f77b4" pt 7 ps 0.9 lw 1.5 t "optimized check (paper, Alg. 2)", \
  "fig08-09_m6250_window_paper.dat" u 2:($5==0?$9:1/0) w p lc rgb "#1f77b4" pt 10 ps 1.3 notitle, \
  "fig08-09_m6250_window_paper.dat" u 2:7 w l lc rgb "#1f77b4" dt 2 lw 1.2 notitle, \
  "fig08-09_m6250_window_pairs.dat" u 2:($6>0?$6:1/0) w lp lc rgb "#2ca02c" pt 7 ps 0.9 lw 1.5 t "all-pairs check (oncecount)", \
  "fig08-09_m6250_window_pairs.dat" u 2:($5==0?$9:1/0) w p lc rgb "#2ca02c" pt 10 ps 1.3 notitle, \
  "fig08-09_m6250_window_pairs.dat" u 2:7 w l lc rgb "#2ca02c" dt 2 lw 1.2 notitle, \
  NaN w l lc rgb "black" dt 2 t "dashed: blocked-filter model", \
  NaN w p lc rgb "black" pt 10 ps 1.3 t "no false positive in Q queries: bound 3/Q"
set title "all ids within the first refresh period (0-5 s), queried at 4.999 s"
plot "fig08-09_m6250_first_any.dat" u 2:($6>0?$6:1/0) w lp lc rgb "#d62728" pt 7 ps 0.9 lw 1.5 t "simple check (any filter, Sec. III-A)", \
  "fig08-09_m6250_first_any.dat" u 2:($5==0?$9:1/0) w p lc rgb "#d62728" pt 10 ps 1.3 notitle, \
  "fig08-09_m6250_first_any.dat" u 2:7 w l lc rgb "#d62728" dt 2 lw 1.2 notitle, \
  "fig08-09_m6250_first_paper.dat" u 2:($6>0?$6:1/0) w lp lc rgb "#1f77b4" pt 7 ps 0.9 lw 1.5 t "optimized check (paper, Alg. 2)", \
  "fig08-09_m6250_first_paper.dat" u 2:($5==0?$9:1/0) w p lc rgb "#1f77b4" pt 10 ps 1.3 notitle, \
  "fig08-09_m6250_first_paper.dat" u 2:7 w l lc rgb "#1f77b4" dt 2 lw 1.2 notitle, \
  "fig08-09_m6250_first_pairs.dat" u 2:($6>0?$6:1/0) w lp lc rgb "#2ca02c" pt 7 ps 0.9 lw 1.5 t "all-pairs check (oncecount)", \
  "fig08-09_m6250_first_pairs.dat" u 2:($5==0?$9:1/0) w p lc rgb "#2ca02c" pt 10 ps 1.3 notitle, \
  "fig08-09_m6250_first_pairs.dat" u 2:7 w l lc rgb "#2ca02c" dt 2 lw 1.2 notitle, \
  NaN w l lc rgb "black" dt 2 t "dashed: blocked-filter model", \
  NaN w p lc rgb "black" pt 10 ps 1.3 t "no false positive in Q queries: bound 3/Q"
unset multiplot

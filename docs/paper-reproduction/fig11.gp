# Regenerate: cd docs/paper-reproduction && gnuplot fig11.gp
set terminal pngcairo size 1500,640 enhanced font "DejaVu Sans,11"
set grid lc rgb "#dddddd"
set mytics 10
set format y "10^{%L}"
set style line 1 lc rgb "#d62728" lw 2
set output "fig11.png"
set multiplot layout 1,2 title "Fig. 11: 1-FBF, m = 25000 bits requested (25088 used), k = 5, 5000 ids, rate x1.15 per second"
set logscale xy
set format x "%g"
set xlabel "ids per second (rate of the second before the sample)"
set ylabel "false positive probability"
set xrange [4:800]
set key left top box opaque font ",10"
set arrow 1 from 100, graph 0 to 100, graph 1 nohead lc rgb "#999999" dt 4
set title "paper check (Alg. 2), N = 1, 3 filters"
set yrange [1e-12:1]
plot "fig11_t5_paper.dat" u 2:($8>0?$8:1/0) w p lc rgb "#d62728" pt 7 ps 0.8 t "t = 5 s: measured", \
  "fig11_t5_paper.dat" u 2:6 w l lc rgb "#d62728" lw 1.5 t "t = 5 s: blocked model", \
  "fig11_t3_paper.dat" u 2:($8>0?$8:1/0) w p lc rgb "#ff7f0e" pt 7 ps 0.8 t "t = 3 s: measured", \
  "fig11_t3_paper.dat" u 2:6 w l lc rgb "#ff7f0e" lw 1.5 t "t = 3 s: blocked model", \
  "fig11_t2_paper.dat" u 2:($8>0?$8:1/0) w p lc rgb "#2ca02c" pt 7 ps 0.8 t "t = 2 s: measured", \
  "fig11_t2_paper.dat" u 2:6 w l lc rgb "#2ca02c" lw 1.5 t "t = 2 s: blocked model", \
  "fig11_t1_paper.dat" u 2:($8>0?$8:1/0) w p lc rgb "#1f77b4" pt 7 ps 0.8 t "t = 1 s: measured", \
  "fig11_t1_paper.dat" u 2:6 w l lc rgb "#1f77b4" lw 1.5 t "t = 1 s: blocked model"
set title "pairs check, N = 1, 4 filters"
set yrange [1e-20:1]
plot "fig11_t5_pairs.dat" u 2:($8>0?$8:1/0) w p lc rgb "#d62728" pt 7 ps 0.8 t "t = 5 s: measured", \
  "fig11_t5_pairs.dat" u 2:6 w l lc rgb "#d62728" lw 1.5 t "t = 5 s: blocked model", \
  "fig11_t3_pairs.dat" u 2:($8>0?$8:1/0) w p lc rgb "#ff7f0e" pt 7 ps 0.8 t "t = 3 s: measured", \
  "fig11_t3_pairs.dat" u 2:6 w l lc rgb "#ff7f0e" lw 1.5 t "t = 3 s: blocked model", \
  "fig11_t2_pairs.dat" u 2:($8>0?$8:1/0) w p lc rgb "#2ca02c" pt 7 ps 0.8 t "t = 2 s: measured", \
  "fig11_t2_pairs.dat" u 2:6 w l lc rgb "#2ca02c" lw 1.5 t "t = 2 s: blocked model", \
  "fig11_t1_pairs.dat" u 2:($8>0?$8:1/0) w p lc rgb "#1f77b4" pt 7 ps 0.8 t "t = 1 s: measured", \
  "fig11_t1_pairs.dat" u 2:6 w l lc rgb "#1f77b4" lw 1.5 t "t = 1 s: blocked model"
unset multiplot

# Regenerate: cd docs/paper-reproduction && gnuplot fig12.gp
set terminal pngcairo size 1500,640 enhanced font "DejaVu Sans,11"
set grid lc rgb "#dddddd"
set mytics 10
set format y "10^{%L}"
set style line 1 lc rgb "#d62728" lw 2
set output "fig12.png"
set multiplot layout 1,2 title "Fig. 12: m = 6250 bits requested (6656 used), k = 5, t = 5 s, 3000 ids, rate rising by 4 ids/s every second"
set logscale y
set xlabel "ids per second (rate of the second before the sample)"
set ylabel "false positive probability"
set xrange [0:160]
set key left top box opaque font ",10"
set arrow 1 from 100, graph 0 to 100, graph 1 nohead lc rgb "#999999" dt 4
set title "paper check (Alg. 2): N = filters - 2"
set yrange [1e-9:1]
plot "fig12_f24_paper.dat" u 2:($8>0?$8:1/0) w p lc rgb "#1f77b4" pt 7 ps 0.8 t "24 filters (N = 22): measured", \
  "fig12_f24_paper.dat" u 2:6 w l lc rgb "#1f77b4" lw 1.5 t "24 filters (N = 22): blocked model", \
  "fig12_f12_paper.dat" u 2:($8>0?$8:1/0) w p lc rgb "#2ca02c" pt 7 ps 0.8 t "12 filters (N = 10): measured", \
  "fig12_f12_paper.dat" u 2:6 w l lc rgb "#2ca02c" lw 1.5 t "12 filters (N = 10): blocked model", \
  "fig12_f6_paper.dat" u 2:($8>0?$8:1/0) w p lc rgb "#ff7f0e" pt 7 ps 0.8 t "6 filters (N = 4): measured", \
  "fig12_f6_paper.dat" u 2:6 w l lc rgb "#ff7f0e" lw 1.5 t "6 filters (N = 4): blocked model", \
  "fig12_f3_paper.dat" u 2:($8>0?$8:1/0) w p lc rgb "#d62728" pt 7 ps 0.8 t "3 filters (N = 1): measured", \
  "fig12_f3_paper.dat" u 2:6 w l lc rgb "#d62728" lw 1.5 t "3 filters (N = 1): blocked model"
set title "pairs check: same N, one more filter"
set yrange [1e-12:1]
plot "fig12_f24_pairs.dat" u 2:($8>0?$8:1/0) w p lc rgb "#1f77b4" pt 7 ps 0.8 t "N = 22 (25 filters): measured", \
  "fig12_f24_pairs.dat" u 2:6 w l lc rgb "#1f77b4" lw 1.5 t "N = 22 (25 filters): blocked model", \
  "fig12_f12_pairs.dat" u 2:($8>0?$8:1/0) w p lc rgb "#2ca02c" pt 7 ps 0.8 t "N = 10 (13 filters): measured", \
  "fig12_f12_pairs.dat" u 2:6 w l lc rgb "#2ca02c" lw 1.5 t "N = 10 (13 filters): blocked model", \
  "fig12_f6_pairs.dat" u 2:($8>0?$8:1/0) w p lc rgb "#ff7f0e" pt 7 ps 0.8 t "N = 4 (7 filters): measured", \
  "fig12_f6_pairs.dat" u 2:6 w l lc rgb "#ff7f0e" lw 1.5 t "N = 4 (7 filters): blocked model", \
  "fig12_f3_pairs.dat" u 2:($8>0?$8:1/0) w p lc rgb "#d62728" pt 7 ps 0.8 t "N = 1 (4 filters): measured", \
  "fig12_f3_pairs.dat" u 2:6 w l lc rgb "#d62728" lw 1.5 t "N = 1 (4 filters): blocked model"
unset multiplot

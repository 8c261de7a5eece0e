# Regenerate: cd docs/paper-reproduction && gnuplot fingerprint.gp
set terminal pngcairo size 1800,1100 enhanced font "DejaVu Sans,11"
set grid lc rgb "#dddddd"
set mytics 10
set format y "10^{%L}"
set style line 1 lc rgb "#d62728" lw 2
set output "fingerprint.png"
set multiplot layout 2,3 title "The fingerprint filter (dedup.filter: fingerprint), sized for the first rate and adapting, window 22 s"
set logscale y
set ytics nomirror
set logscale y2
set y2tics
set y2range [0.1:3000]
set xlabel "simulated time (s)"
set ylabel "false positive probability"
set y2label "kbit / ids per second"
set key left top box opaque font ",8" maxrows 3 width -2
set title "rate schedule of Fig. 11, target 0.001"
set yrange [1e-05:0.01]
plot "fingerprint_fig11_target-0.001.dat" u 1:($8>0?$8:1/0) w p lc rgb "black" pt 7 ps 0.6 t "measured FPP", \
  "fingerprint_fig11_target-0.001.dat" u 1:6 w l lc rgb "#1f77b4" lw 1.8 t "estimate", \
  0.001 w l lc rgb "#d62728" lw 2 dt 4 t "target FPP", \
  "fingerprint_fig11_target-0.001.dat" u 1:($11/1000) axes x1y2 w steps lc rgb "#9467bd" lw 2 t "memory, kbit (right axis)", \
  316.416 axes x1y2 w l lc rgb "#9467bd" lw 1 dt 2 t "sized for the peak rate, kbit", \
  "fingerprint_fig11_target-0.001.dat" u 1:2 axes x1y2 w l lc rgb "#7f7f7f" lw 1 t "ids per second (right axis)"
set title "rate schedule of Fig. 12, target 0.001"
set yrange [1e-05:0.01]
plot "fingerprint_fig12_target-0.001.dat" u 1:($8>0?$8:1/0) w p lc rgb "black" pt 7 ps 0.6 t "measured FPP", \
  "fingerprint_fig12_target-0.001.dat" u 1:6 w l lc rgb "#1f77b4" lw 1.8 t "estimate", \
  0.001 w l lc rgb "#d62728" lw 2 dt 4 t "target FPP", \
  "fingerprint_fig12_target-0.001.dat" u 1:($11/1000) axes x1y2 w steps lc rgb "#9467bd" lw 2 t "memory, kbit (right axis)", \
  70.144 axes x1y2 w l lc rgb "#9467bd" lw 1 dt 2 t "sized for the peak rate, kbit", \
  "fingerprint_fig12_target-0.001.dat" u 1:2 axes x1y2 w l lc rgb "#7f7f7f" lw 1 t "ids per second (right axis)"
set title "rate schedule of Fig. 13, target 0.001"
set yrange [1e-05:0.01]
plot "fingerprint_fig13_target-0.001.dat" u 1:($8>0?$8:1/0) w p lc rgb "black" pt 7 ps 0.6 t "measured FPP", \
  "fingerprint_fig13_target-0.001.dat" u 1:6 w l lc rgb "#1f77b4" lw 1.8 t "estimate", \
  0.001 w l lc rgb "#d62728" lw 2 dt 4 t "target FPP", \
  "fingerprint_fig13_target-0.001.dat" u 1:($11/1000) axes x1y2 w steps lc rgb "#9467bd" lw 2 t "memory, kbit (right axis)", \
  45.056 axes x1y2 w l lc rgb "#9467bd" lw 1 dt 2 t "sized for the peak rate, kbit", \
  "fingerprint_fig13_target-0.001.dat" u 1:2 axes x1y2 w l lc rgb "#7f7f7f" lw 1 t "ids per second (right axis)"
set title "rate schedule of Fig. 11, target 1e-05"
set yrange [1e-07:0.0001]
plot "fingerprint_fig11_target-1e-05.dat" u 1:($8>0?$8:1/0) w p lc rgb "black" pt 7 ps 0.6 t "measured FPP", \
  "fingerprint_fig11_target-1e-05.dat" u 1:6 w l lc rgb "#1f77b4" lw 1.8 t "estimate", \
  1e-05 w l lc rgb "#d62728" lw 2 dt 4 t "target FPP", \
  "fingerprint_fig11_target-1e-05.dat" u 1:($11/1000) axes x1y2 w steps lc rgb "#9467bd" lw 2 t "memory, kbit (right axis)", \
  581.12 axes x1y2 w l lc rgb "#9467bd" lw 1 dt 2 t "sized for the peak rate, kbit", \
  "fingerprint_fig11_target-1e-05.dat" u 1:2 axes x1y2 w l lc rgb "#7f7f7f" lw 1 t "ids per second (right axis)"
set title "rate schedule of Fig. 12, target 1e-05"
set yrange [1e-07:0.0001]
plot "fingerprint_fig12_target-1e-05.dat" u 1:($8>0?$8:1/0) w p lc rgb "black" pt 7 ps 0.6 t "measured FPP", \
  "fingerprint_fig12_target-1e-05.dat" u 1:6 w l lc rgb "#1f77b4" lw 1.8 t "estimate", \
  1e-05 w l lc rgb "#d62728" lw 2 dt 4 t "target FPP", \
  "fingerprint_fig12_target-1e-05.dat" u 1:($11/1000) axes x1y2 w steps lc rgb "#9467bd" lw 2 t "memory, kbit (right axis)", \
  128.512 axes x1y2 w l lc rgb "#9467bd" lw 1 dt 2 t "sized for the peak rate, kbit", \
  "fingerprint_fig12_target-1e-05.dat" u 1:2 axes x1y2 w l lc rgb "#7f7f7f" lw 1 t "ids per second (right axis)"
set title "rate schedule of Fig. 13, target 1e-05"
set yrange [1e-07:0.0001]
plot "fingerprint_fig13_target-1e-05.dat" u 1:($8>0?$8:1/0) w p lc rgb "black" pt 7 ps 0.6 t "measured FPP", \
  "fingerprint_fig13_target-1e-05.dat" u 1:6 w l lc rgb "#1f77b4" lw 1.8 t "estimate", \
  1e-05 w l lc rgb "#d62728" lw 2 dt 4 t "target FPP", \
  "fingerprint_fig13_target-1e-05.dat" u 1:($11/1000) axes x1y2 w steps lc rgb "#9467bd" lw 2 t "memory, kbit (right axis)", \
  82.432 axes x1y2 w l lc rgb "#9467bd" lw 1 dt 2 t "sized for the peak rate, kbit", \
  "fingerprint_fig13_target-1e-05.dat" u 1:2 axes x1y2 w l lc rgb "#7f7f7f" lw 1 t "ids per second (right axis)"
unset multiplot

# Regenerate: cd docs/paper-reproduction && gnuplot fig13.gp
set terminal pngcairo size 1800,1250 enhanced font "DejaVu Sans,11"
set grid lc rgb "#dddddd"
set mytics 10
set format y "10^{%L}"
set style line 1 lc rgb "#d62728" lw 2
set output "fig13.png"
set multiplot layout 2,2 title "Fig. 13: adaptive FBF, start N = 1, m = 6250 bits requested (6656 used), k = 5, t = 11 s, refresh step 1 s, target FPP 0.001\ntop: Algorithm 3 as published (--policy paper) adapting on Eq. 1, as in the paper; bottom: oncecount's guarded policy (the default) adapting on the blocked model"
set logscale y
set yrange [1e-10:1]
set ytics nomirror
set y2tics (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 100)
set logscale y2
set y2range [0.8:128]
set xrange [0:90]
set xlabel "simulated time (s)"
set ylabel "false positive probability"
set y2label "filters / refresh period (s) / ids per second"
set key left top box opaque font ",9" maxrows 4 width -2
set title "Algorithm 3 (--policy paper), paper check, adapting on Eq. 1 (--model classic) = the paper's setup"
plot "fig13_policy-paper_check-paper_classic.dat" u 1:($8>0?$8:1/0) w p lc rgb "black" pt 7 ps 0.6 t "measured FPP", \
  "fig13_policy-paper_check-paper_classic.dat" u 1:6 w l lc rgb "#1f77b4" lw 1.8 t "blocked model", \
  "fig13_policy-paper_check-paper_classic.dat" u 1:7 w l lc rgb "#ff7f0e" lw 1.8 dt 2 t "Eq. 1 model", \
  0.001 w l lc rgb "#d62728" lw 2 dt 4 t "target FPP", \
  "fig13_policy-paper_check-paper_classic.dat" u 1:4 axes x1y2 w steps lc rgb "#9467bd" lw 2 t "filters (right axis)", \
  "fig13_policy-paper_check-paper_classic.dat" u 1:5 axes x1y2 w steps lc rgb "#8c564b" lw 2 t "refresh period, s (right axis)", \
  "fig13_policy-paper_check-paper_classic.dat" u 1:2 axes x1y2 w l lc rgb "#7f7f7f" lw 1 t "ids per second (right axis)"
set title "Algorithm 3 (--policy paper), pairs check, adapting on Eq. 1 (--model classic)"
plot "fig13_policy-paper_check-pairs_classic.dat" u 1:($8>0?$8:1/0) w p lc rgb "black" pt 7 ps 0.6 t "measured FPP", \
  "fig13_policy-paper_check-pairs_classic.dat" u 1:6 w l lc rgb "#1f77b4" lw 1.8 t "blocked model", \
  "fig13_policy-paper_check-pairs_classic.dat" u 1:7 w l lc rgb "#ff7f0e" lw 1.8 dt 2 t "Eq. 1 model", \
  0.001 w l lc rgb "#d62728" lw 2 dt 4 t "target FPP", \
  "fig13_policy-paper_check-pairs_classic.dat" u 1:4 axes x1y2 w steps lc rgb "#9467bd" lw 2 t "filters (right axis)", \
  "fig13_policy-paper_check-pairs_classic.dat" u 1:5 axes x1y2 w steps lc rgb "#8c564b" lw 2 t "refresh period, s (right axis)", \
  "fig13_policy-paper_check-pairs_classic.dat" u 1:2 axes x1y2 w l lc rgb "#7f7f7f" lw 1 t "ids per second (right axis)"
set title "guarded policy (--policy guarded), paper check, adapting on the blocked model (--model blocked)"
plot "fig13_policy-guarded_check-paper_blocked.dat" u 1:($8>0?$8:1/0) w p lc rgb "black" pt 7 ps 0.6 t "measured FPP", \
  "fig13_policy-guarded_check-paper_blocked.dat" u 1:6 w l lc rgb "#1f77b4" lw 1.8 t "blocked model", \
  "fig13_policy-guarded_check-paper_blocked.dat" u 1:7 w l lc rgb "#ff7f0e" lw 1.8 dt 2 t "Eq. 1 model", \
  0.001 w l lc rgb "#d62728" lw 2 dt 4 t "target FPP", \
  "fig13_policy-guarded_check-paper_blocked.dat" u 1:4 axes x1y2 w steps lc rgb "#9467bd" lw 2 t "filters (right axis)", \
  "fig13_policy-guarded_check-paper_blocked.dat" u 1:5 axes x1y2 w steps lc rgb "#8c564b" lw 2 t "refresh period, s (right axis)", \
  "fig13_policy-guarded_check-paper_blocked.dat" u 1:2 axes x1y2 w l lc rgb "#7f7f7f" lw 1 t "ids per second (right axis)"
set title "guarded policy (--policy guarded), pairs check, adapting on the blocked model (--model blocked) = oncecount's default"
plot "fig13_policy-guarded_check-pairs_blocked.dat" u 1:($8>0?$8:1/0) w p lc rgb "black" pt 7 ps 0.6 t "measured FPP", \
  "fig13_policy-guarded_check-pairs_blocked.dat" u 1:6 w l lc rgb "#1f77b4" lw 1.8 t "blocked model", \
  "fig13_policy-guarded_check-pairs_blocked.dat" u 1:7 w l lc rgb "#ff7f0e" lw 1.8 dt 2 t "Eq. 1 model", \
  0.001 w l lc rgb "#d62728" lw 2 dt 4 t "target FPP", \
  "fig13_policy-guarded_check-pairs_blocked.dat" u 1:4 axes x1y2 w steps lc rgb "#9467bd" lw 2 t "filters (right axis)", \
  "fig13_policy-guarded_check-pairs_blocked.dat" u 1:5 axes x1y2 w steps lc rgb "#8c564b" lw 2 t "refresh period, s (right axis)", \
  "fig13_policy-guarded_check-pairs_blocked.dat" u 1:2 axes x1y2 w l lc rgb "#7f7f7f" lw 1 t "ids per second (right axis)"
unset multiplot

# Regenerate: cd docs/gaussian-bloom-filter && gnuplot fig3.gp
set terminal pngcairo size 1500,480 font "Sans,11"
set output "fig3.png"
set grid lc rgb "#dddddd"
set xlabel "n (elements inserted)"
set ylabel "false-positive rate"
set xrange [0:100]
set yrange [0:*]
set key left top box opaque
set style fill transparent solid 0.25 noborder
set multiplot layout 1,3 title "Fig. 3: Gaussian (double cells) vs Bloom filter, m = 256, median and quartiles"
set title "k = 3"
plot "fpr_m256_k3_B64_fast.dat" u 1:3:4 w filledcurves lc rgb "#1f77b4" notitle, \
  "fpr_m256_k3_B64_fast.dat" u 1:2 w l lw 2 lc rgb "#1f77b4" t "Gaussian, 256 doubles", \
  "fpr_m256_k3_B64_fast.dat" u 1:7:8 w filledcurves lc rgb "#d62728" notitle, \
  "fpr_m256_k3_B64_fast.dat" u 1:6 w l lw 2 lc rgb "#d62728" t "Bloom, 256 bits"
set title "k = 5"
plot "fpr_m256_k5_B64_fast.dat" u 1:3:4 w filledcurves lc rgb "#1f77b4" notitle, \
  "fpr_m256_k5_B64_fast.dat" u 1:2 w l lw 2 lc rgb "#1f77b4" t "Gaussian, 256 doubles", \
  "fpr_m256_k5_B64_fast.dat" u 1:7:8 w filledcurves lc rgb "#d62728" notitle, \
  "fpr_m256_k5_B64_fast.dat" u 1:6 w l lw 2 lc rgb "#d62728" t "Bloom, 256 bits"
set title "k = 10"
plot "fpr_m256_k10_B64_fast.dat" u 1:3:4 w filledcurves lc rgb "#1f77b4" notitle, \
  "fpr_m256_k10_B64_fast.dat" u 1:2 w l lw 2 lc rgb "#1f77b4" t "Gaussian, 256 doubles", \
  "fpr_m256_k10_B64_fast.dat" u 1:7:8 w filledcurves lc rgb "#d62728" notitle, \
  "fpr_m256_k10_B64_fast.dat" u 1:6 w l lw 2 lc rgb "#d62728" t "Bloom, 256 bits"
unset multiplot

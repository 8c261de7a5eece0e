# Regenerate: cd docs/gaussian-bloom-filter && gnuplot fig2a.gp
set terminal pngcairo size 800,520 font "Sans,11"
set output "fig2a.png"
set grid lc rgb "#dddddd"
set xlabel "n (elements inserted)"
set ylabel "false-positive rate"
set xrange [0:100]
set yrange [0:*]
set key left top box opaque
set style fill transparent solid 0.25 noborder
set multiplot layout 1,1 title "Fig. 2(a): cell width, m = 256, k = 5 (medians)"
set title "double, 8-bit and 4-bit cells"
plot "fpr_m256_k5_B64_fast.dat" u 1:2 w l lw 3 lc rgb "black" t "Gaussian, double", \
  "fpr_m256_k5_B8_fast.dat" u 1:2 w l lw 2 lc rgb "#1f77b4" t "Gaussian, 8-bit", \
  "fpr_m256_k5_B4_fast.dat" u 1:2 w l lw 2 lc rgb "#2ca02c" t "Gaussian, 4-bit", \
  "fpr_m256_k5_B64_exact.dat" u 1:2 w l lw 1 dt 2 lc rgb "#ff7f0e" t "Gaussian, double, std::exp", \
  "fpr_m256_k5_B64_fast.dat" u 1:6 w l lw 2 lc rgb "#d62728" t "Bloom, 256 bits"
unset multiplot

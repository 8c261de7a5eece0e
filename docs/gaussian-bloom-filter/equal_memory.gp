# Regenerate: cd docs/gaussian-bloom-filter && gnuplot equal_memory.gp
set terminal pngcairo size 1700,480 font "Sans,11"
set output "equal_memory.png"
set grid lc rgb "#dddddd"
set xlabel "n (elements inserted)"
set ylabel "false-positive rate"
set xrange [0:100]
set yrange [0:*]
set key left top box opaque
set style fill transparent solid 0.25 noborder
set multiplot layout 1,4 title "Same memory: Gaussian (m = 256 cells of B bits) vs Bloom over B x 256 bits (means)"
set title "B = 4, k = 3"
plot "fpr_m256_k3_B4_fast.dat" u 1:5 w l lw 2 lc rgb "#1f77b4" t "Gaussian, 256 x 4 bits", \
  "fpr_m256_k3_B4_fast.dat" u 1:9 w l lw 2 lc rgb "#d62728" t "Bloom, 256 bits", \
  "fpr_m256_k3_B4_fast.dat" u 1:13 w l lw 2 lc rgb "#2ca02c" t "Bloom, 1024 bits (same k)"
set title "B = 4, k = 5"
plot "fpr_m256_k5_B4_fast.dat" u 1:5 w l lw 2 lc rgb "#1f77b4" t "Gaussian, 256 x 4 bits", \
  "fpr_m256_k5_B4_fast.dat" u 1:9 w l lw 2 lc rgb "#d62728" t "Bloom, 256 bits", \
  "fpr_m256_k5_B4_fast.dat" u 1:13 w l lw 2 lc rgb "#2ca02c" t "Bloom, 1024 bits (same k)"
set title "B = 8, k = 3"
plot "fpr_m256_k3_B8_fast.dat" u 1:5 w l lw 2 lc rgb "#1f77b4" t "Gaussian, 256 x 8 bits", \
  "fpr_m256_k3_B8_fast.dat" u 1:9 w l lw 2 lc rgb "#d62728" t "Bloom, 256 bits", \
  "fpr_m256_k3_B8_fast.dat" u 1:13 w l lw 2 lc rgb "#2ca02c" t "Bloom, 2048 bits (same k)"
set title "B = 8, k = 5"
plot "fpr_m256_k5_B8_fast.dat" u 1:5 w l lw 2 lc rgb "#1f77b4" t "Gaussian, 256 x 8 bits", \
  "fpr_m256_k5_B8_fast.dat" u 1:9 w l lw 2 lc rgb "#d62728" t "Bloom, 256 bits", \
  "fpr_m256_k5_B8_fast.dat" u 1:13 w l lw 2 lc rgb "#2ca02c" t "Bloom, 2048 bits (same k)"
unset multiplot

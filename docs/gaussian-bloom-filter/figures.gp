set terminal pngcairo size 1500,480 font ",10"
set xlabel "elements inserted (n)"; set ylabel "false-positive rate"; set key top left; set grid
set yrange [0:*]
set output "docs/gaussian-bloom-filter/fig3.png"
set multiplot layout 1,3
set title "m = 256, k = 3, double cells"
plot "docs/gaussian-bloom-filter/fig3_k3.dat" using 1:2:4 with filledcurves fc rgb "#d62728" fs transparent solid 0.2 notitle, \
     "docs/gaussian-bloom-filter/fig3_k3.dat" using 1:3 with lines lw 2 lc rgb "#d62728" title "Bloom", \
     "docs/gaussian-bloom-filter/fig3_k3.dat" using 1:5:7 with filledcurves fc rgb "#1f77b4" fs transparent solid 0.2 notitle, \
     "docs/gaussian-bloom-filter/fig3_k3.dat" using 1:6 with lines lw 2 lc rgb "#1f77b4" title "Gaussian"
set title "m = 256, k = 5, double cells"
plot "docs/gaussian-bloom-filter/fig3_k5.dat" using 1:2:4 with filledcurves fc rgb "#d62728" fs transparent solid 0.2 notitle, \
     "docs/gaussian-bloom-filter/fig3_k5.dat" using 1:3 with lines lw 2 lc rgb "#d62728" title "Bloom", \
     "docs/gaussian-bloom-filter/fig3_k5.dat" using 1:5:7 with filledcurves fc rgb "#1f77b4" fs transparent solid 0.2 notitle, \
     "docs/gaussian-bloom-filter/fig3_k5.dat" using 1:6 with lines lw 2 lc rgb "#1f77b4" title "Gaussian"
set title "m = 256, k = 10, double cells"
plot "docs/gaussian-bloom-filter/fig3_k10.dat" using 1:2:4 with filledcurves fc rgb "#d62728" fs transparent solid 0.2 notitle, \
     "docs/gaussian-bloom-filter/fig3_k10.dat" using 1:3 with lines lw 2 lc rgb "#d62728" title "Bloom", \
     "docs/gaussian-bloom-filter/fig3_k10.dat" using 1:5:7 with filledcurves fc rgb "#1f77b4" fs transparent solid 0.2 notitle, \
     "docs/gaussian-bloom-filter/fig3_k10.dat" using 1:6 with lines lw 2 lc rgb "#1f77b4" title "Gaussian"
unset multiplot
set output "docs/gaussian-bloom-filter/fig5.png"
set multiplot layout 1,3
set title "m = 256, k = 3, 4-bit cells"
plot "docs/gaussian-bloom-filter/fig5_k3.dat" using 1:2:4 with filledcurves fc rgb "#d62728" fs transparent solid 0.2 notitle, \
     "docs/gaussian-bloom-filter/fig5_k3.dat" using 1:3 with lines lw 2 lc rgb "#d62728" title "Bloom", \
     "docs/gaussian-bloom-filter/fig5_k3.dat" using 1:5:7 with filledcurves fc rgb "#1f77b4" fs transparent solid 0.2 notitle, \
     "docs/gaussian-bloom-filter/fig5_k3.dat" using 1:6 with lines lw 2 lc rgb "#1f77b4" title "Gaussian (4-bit)"
set title "m = 256, k = 4, 4-bit cells"
plot "docs/gaussian-bloom-filter/fig5_k4.dat" using 1:2:4 with filledcurves fc rgb "#d62728" fs transparent solid 0.2 notitle, \
     "docs/gaussian-bloom-filter/fig5_k4.dat" using 1:3 with lines lw 2 lc rgb "#d62728" title "Bloom", \
     "docs/gaussian-bloom-filter/fig5_k4.dat" using 1:5:7 with filledcurves fc rgb "#1f77b4" fs transparent solid 0.2 notitle, \
     "docs/gaussian-bloom-filter/fig5_k4.dat" using 1:6 with lines lw 2 lc rgb "#1f77b4" title "Gaussian (4-bit)"
set title "m = 256, k = 5, 4-bit cells"
plot "docs/gaussian-bloom-filter/fig5_k5.dat" using 1:2:4 with filledcurves fc rgb "#d62728" fs transparent solid 0.2 notitle, \
     "docs/gaussian-bloom-filter/fig5_k5.dat" using 1:3 with lines lw 2 lc rgb "#d62728" title "Bloom", \
     "docs/gaussian-bloom-filter/fig5_k5.dat" using 1:5:7 with filledcurves fc rgb "#1f77b4" fs transparent solid 0.2 notitle, \
     "docs/gaussian-bloom-filter/fig5_k5.dat" using 1:6 with lines lw 2 lc rgb "#1f77b4" title "Gaussian (4-bit)"
unset multiplot
set terminal pngcairo size 1100,480 font ",10"
set output "docs/gaussian-bloom-filter/fig2a.png"
set multiplot layout 1,2
set title "m = 256, k = 3: double cells against 8- and 4-bit cells (medians)"
plot "docs/gaussian-bloom-filter/fig2a_k3.dat" using 1:3 with lines lw 3 title "double", "" using 1:6 with lines lw 2 title "8 bits", "" using 1:9 with lines lw 2 title "4 bits"
set title "m = 256, k = 10: double cells against 8- and 4-bit cells (medians)"
plot "docs/gaussian-bloom-filter/fig2a_k10.dat" using 1:3 with lines lw 3 title "double", "" using 1:6 with lines lw 2 title "8 bits", "" using 1:9 with lines lw 2 title "4 bits"
unset multiplot
set terminal pngcairo size 1500,900 font ",10"
set output "docs/gaussian-bloom-filter/memory.png"
set multiplot layout 2,2
set title "256 cells of 4 bits against classic filters, k = 3 (medians)"
plot "docs/gaussian-bloom-filter/memory_b4_k3.dat" using 1:3 with lines lw 2 lc rgb "#1f77b4" title "Gaussian, 1024 bits", "" using 1:6 with lines lw 2 lc rgb "#d62728" title "Bloom, 256 bits (same cells)", "" using 1:9 with lines lw 2 lc rgb "#2ca02c" title "Bloom, 1024 bits (same memory)"
set title "256 cells of 4 bits against classic filters, k = 5 (medians)"
plot "docs/gaussian-bloom-filter/memory_b4_k5.dat" using 1:3 with lines lw 2 lc rgb "#1f77b4" title "Gaussian, 1024 bits", "" using 1:6 with lines lw 2 lc rgb "#d62728" title "Bloom, 256 bits (same cells)", "" using 1:9 with lines lw 2 lc rgb "#2ca02c" title "Bloom, 1024 bits (same memory)"
set title "256 cells of 8 bits against classic filters, k = 3 (medians)"
plot "docs/gaussian-bloom-filter/memory_b8_k3.dat" using 1:3 with lines lw 2 lc rgb "#1f77b4" title "Gaussian, 2048 bits", "" using 1:6 with lines lw 2 lc rgb "#d62728" title "Bloom, 256 bits (same cells)", "" using 1:9 with lines lw 2 lc rgb "#2ca02c" title "Bloom, 2048 bits (same memory)"
set title "256 cells of 8 bits against classic filters, k = 5 (medians)"
plot "docs/gaussian-bloom-filter/memory_b8_k5.dat" using 1:3 with lines lw 2 lc rgb "#1f77b4" title "Gaussian, 2048 bits", "" using 1:6 with lines lw 2 lc rgb "#d62728" title "Bloom, 256 bits (same cells)", "" using 1:9 with lines lw 2 lc rgb "#2ca02c" title "Bloom, 2048 bits (same memory)"
unset multiplot
set terminal pngcairo size 800,480 font ",10"
set output "docs/gaussian-bloom-filter/window.png"
set xlabel "ids per constituent / capacity of the classic constituent at 1% FPP"
set title "A window of 4 constituents of 8192 bits each (medians)"
set logscale y; set yrange [1e-4:1]
plot "docs/gaussian-bloom-filter/window_b4.dat" using 2:($6 > 0 ? $6 : 1e-4) with linespoints lw 2 lc rgb "#d62728" title "Bloom, 8192 bits, k = 7", "" using 2:4 with linespoints lw 2 lc rgb "#1f77b4" title "Gaussian, 2048 4-bit cells, k = 7", "" using 2:10 with linespoints lw 2 lc rgb "#9467bd" title "Gaussian, 2048 4-bit cells, its best k"

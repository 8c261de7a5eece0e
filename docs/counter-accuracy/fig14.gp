set terminal pngcairo size 900,520 font ",11"
set output "docs/counter-accuracy/fig14.png"
set datafile separator ","
set key top left
set xlabel "time (s)"
set ylabel "counter-0"
set grid
set title "One counter fed increments with retries: with the FBF, without, expected"
plot "docs/counter-accuracy/timeline.csv" using 1:3 skip 1 with lines lw 2 lc rgb "#d62728" title "without FBF (dedup.mode none)", \
     "docs/counter-accuracy/expected.csv" using 1:2 skip 1 with lines lw 5 lc rgb "#bbbbbb" title "expected", \
     "docs/counter-accuracy/timeline.csv" using 1:2 skip 1 with lines lw 2 lc rgb "#1f77b4" title "with FBF (dedup.mode fbf)"

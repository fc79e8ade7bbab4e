# Draws the hedging study's CSVs (written by hedging_study) as one SVG:
# the steady state's latency percentiles per variant (log scale), and the
# extra load per second through the 5x slowdown, with adaptive hedging's
# budget (5 % + 1/s) and the shift shaded.
#
#   gnuplot -e "dir='benchmarks/results'" benchmarks/hedging_chart.gp
if (!exists("dir")) dir = 'benchmarks/results'
if (!exists("svg")) svg = 'hedging.svg'
# The shift, in seconds from the shift phases' start (hedging_study's
# defaults).
if (!exists("t0")) t0 = 5
if (!exists("t1")) t1 = 15
steady = dir.'/hedging_steady.csv'
csv = dir.'/hedging.csv'
set terminal svg size 900,900 dynamic font 'sans,11' background rgb 'white'
set output dir.'/'.svg
set datafile separator ','

set multiplot layout 2,1 title "Hedging against a heavy-tailed server (98 % about 2 ms, 2 % 100-200 ms)" font ",13"

set title 'Steady state: call latency percentiles (extra load in the labels)' font ',11'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set yrange [1:500]
set ylabel 'ms'
set grid ytics
set key top right
set boxwidth 0.9
plot steady skip 1 using 2:xtic(sprintf("%s (+%.1f %%)", stringcolumn(1), 100*$5)) title 'p50' lc rgb '#9ecae1', \
     '' skip 1 using 3 title 'p99' lc rgb '#3182bd', \
     '' skip 1 using 4 title 'p99.9' lc rgb '#08306b'

unset logscale y
unset style
set style data lines
set title 'Every request 5x slower from '.t0.' s to '.t1.' s: extra load per second (attempts per call - 1)' font ',11'
set xlabel 'seconds'
set ylabel 'extra load'
set format y '%.0f %%'
set yrange [0:110]
set xrange [0:*]
set object 1 rect from t0, graph 0 to t1, graph 1 behind fc rgb '#f6d5d5' fs solid 0.6 noborder
set key top right
plot '< grep "^none,"'." ".csv using ($3+0.5):(100*$5) with histeps lw 1.5 lc rgb '#888888' title 'no hedging', \
     '< grep "^fixed,"'." ".csv using ($3+0.5):(100*$5) with histeps lw 1.8 lc rgb '#c03030' title 'fixed delay (tuned to the steady state)', \
     '< grep "^adaptive,"'." ".csv using ($3+0.5):(100*$5) with histeps lw 1.8 lc rgb '#1f4e9c' title 'adaptive, 5 % budget', \
     '< grep "^adaptive,"'." ".csv using ($3+0.5):(100*(0.05 + 1.0/$4)) with histeps lw 1 dt 2 lc rgb '#1f4e9c' title "adaptive's budget"
unset multiplot

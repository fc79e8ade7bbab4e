# Draws benchmarks/results/three_tier.csv (written by three_tier_study) as
# one SVG: the attempts the backend saw per simulated second, with the
# client calls offered and those that ended OK or failed, one panel per
# variant on the same scales, the outage shaded. The attempts axis is
# logarithmic: the variants differ by more than an order of magnitude.
#
#   gnuplot -e "dir='benchmarks/results'" benchmarks/three_tier_chart.gp
if (!exists("dir")) dir = 'benchmarks/results'
if (!exists("svg")) svg = 'three_tier.svg'
# The outage, as three_tier_study's defaults.
if (!exists("t0")) t0 = 5
if (!exists("t1")) t1 = 25
csv = dir.'/three_tier.csv'
set terminal svg size 900,1100 dynamic font 'sans,11' background rgb 'white'
set output dir.'/'.svg
set datafile separator ','

variants = "naive grpc_retries propagated propagated_throttle"
titles = "'naive: stubkit retries at every hop, nothing propagated' 'gRPC retries (service config) at every hop' 'stubkit with IncomingCall at each tier (NestedRetry::kNever, Reply)' 'the same with a RetryThrottle on every client'"

stats csv using 4 nooutput
ymax = STATS_max * 1.5
stats csv using 2 nooutput
xmax = STATS_max

set multiplot layout 4,1 title "Three tiers: backend attempts per second (4 attempts per hop; backend down ".t0."-".t1." s)" font ",13"
set xrange [0:xmax]
set yrange [0.8:ymax]
set logscale y
set grid ytics
set key top right font ',9'
set ylabel 'per second'
set object 1 rect from t0, graph 0 to t1, graph 1 behind fc rgb '#f6d5d5' fs solid 0.6 noborder
set lmargin 9
do for [i=1:4] {
  v = word(variants, i)
  set title word(titles, i) font ',10'
  if (i == 4) { set xlabel 'simulated seconds' } else { unset xlabel }
  if (i == 1) { set key } else { unset key }
  plot '< grep "^'.v.',"'." ".csv \
         using 2:4 with steps lw 1.5 lc rgb '#1f4e9c' title 'backend attempts', \
       '' using 2:3 with steps lw 1 lc rgb '#d07000' dt 3 title 'client calls offered', \
       '' using 2:5 with steps lw 1.2 lc rgb '#2a9d3a' title 'client calls OK', \
       '' using 2:6 with steps lw 1 lc rgb '#c03030' title 'client calls failed'
}
unset multiplot

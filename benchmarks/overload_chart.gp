# Draws benchmarks/results/overload.csv (written by overload_study) as one
# SVG: goodput (calls that ended OK) and the attempts the server saw, per
# simulated second, one panel per variant (rows) and trigger (columns), on
# the same scales, the trigger shaded; for one queue-full code.
#
#   gnuplot -e "dir='benchmarks/results'" benchmarks/overload_chart.gp
#   gnuplot -e "dir='benchmarks/results'; code='RESOURCE_EXHAUSTED'; \
#     svg='overload_resource_exhausted.svg'" benchmarks/overload_chart.gp
if (!exists("dir")) dir = 'benchmarks/results'
if (!exists("code")) code = 'UNAVAILABLE'
if (!exists("svg")) svg = 'overload.svg'
# The trigger and the capacity, as overload_study's defaults.
if (!exists("t0")) t0 = 10
if (!exists("t1")) t1 = 20
if (!exists("capacity")) capacity = 100
csv = dir.'/overload.csv'
set terminal svg size 1100,1500 dynamic font 'sans,11' background rgb 'white'
set output dir.'/'.svg
set datafile separator ','

variants = "naive grpc_retries token_bucket retry_budget retry_budget_fleet waiting_proportional waiting_adaptive"
titles = "'naive: stubkit retries, no control' 'gRPC retries (service config)' 'token bucket (RetryThrottle)' 'retry budget (RetryBudget), 10/s per client' 'retry budget sized for the fleet, 0.5/s per client' 'waiting throttle, proportional release' 'waiting throttle, adaptive release'"
triggers = "outage capacity_drop"
trigger_titles = "'outage (UNAVAILABLE)' 'capacity drop to 30%'"

# The scale every panel shares.
stats '< grep ",'.code.',"'." ".csv using 6 nooutput
ymax = STATS_max * 1.05
stats '< grep ",'.code.',"'." ".csv using 4 nooutput
xmax = STATS_max

set multiplot layout 7,2 title "Overload: goodput and attempts per second (capacity ".capacity."/s, offered 70/s; queue full answers ".code.")" font ',13'
set xrange [0:xmax]
set yrange [0:ymax]
set grid ytics
set key top right font ',9'
set ylabel 'per second'
set object 1 rect from t0, graph 0 to t1, graph 1 behind fc rgb '#f6d5d5' fs solid 0.6 noborder
set arrow 1 from graph 0, first capacity to graph 1, first capacity nohead lc rgb '#888888' dt 2
set lmargin 8
do for [i=1:7] {
  v = word(variants, i)
  do for [j=1:2] {
    t = word(triggers, j)
    set title word(titles, i).', '.word(trigger_titles, j) font ',10'
    if (i == 7) { set xlabel 'simulated seconds' } else { unset xlabel }
    if (i == 1 && j == 2) { set key } else { unset key }
    plot '< grep "^'.v.','.t.','.code.',"'." ".csv \
           using 4:6 with steps lw 1 lc rgb '#1f4e9c' title 'attempts', \
         '' using 4:7 with steps lw 1.5 lc rgb '#2a9d3a' title 'goodput (OK calls)', \
         '' using 4:9 with steps lw 1 lc rgb '#c03030' title 'wasted', \
         '' using 4:5 with steps lw 1 lc rgb '#d07000' dt 3 title 'offered'
  }
}
unset multiplot

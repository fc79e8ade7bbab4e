# Draws benchmarks/results/storm.csv (written by retry_storm) as one SVG:
# the attempts per second the server saw under each strategy, one panel per
# strategy on the same scales, the outage shaded.
#
#   gnuplot -e "dir='benchmarks/results'" benchmarks/storm_chart.gp
if (!exists("dir")) dir = 'benchmarks/results'
csv = dir.'/storm.csv'
set terminal svg size 900,1180 dynamic font 'sans,11' background rgb 'white'
set output dir.'/storm.svg'
set datafile separator ','

strategies = "no_jitter default_jitter full_jitter proportional_jitter default_throttled throttle_waiting"
titles = "'no jitter' 'default jitter (+U[0, initial])' 'full jitter (U[0, delay])' 'proportional jitter (±20%)' 'default jitter + retry throttle' 'throttle, waiting (WaitForRecovery)'"

# The scale every panel shares.
stats csv using 4 every ::1 nooutput
ymax = STATS_max * 1.05
stats csv using 2 every ::1 nooutput
xmax = (STATS_max < 155 ? STATS_max : 155)  # a few stray late retries are cut off

set multiplot layout 6,1 title "Retry storm: attempts per second seen by the server (outage 10–50 s, hung 10–13 s)" font ',13'
set xrange [0:xmax]
set yrange [0:ymax]
set grid ytics
set key top right
set ylabel 'attempts/s'
set object 1 rect from 10, graph 0 to 50, graph 1 behind fc rgb '#f6d5d5' fs solid 0.6 noborder
set object 2 rect from 10, graph 0 to 13, graph 1 behind fc rgb '#e8a8a8' fs solid 0.6 noborder
do for [i=1:6] {
  s = word(strategies, i)
  if (i == 6) { set xlabel 'simulated seconds' } else { unset xlabel }
  plot '< grep "^'.s.',"'." ".csv using 2:3 with steps lw 1 lc rgb '#d07000' title 'offered calls/s', \
       '' using 2:4 with steps lw 1.5 lc rgb '#1f4e9c' title word(titles, i)
}
unset multiplot

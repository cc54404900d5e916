# parabench / OSU per operation and size (scripts/compare-osu.sh): parabench's
# median over interleaved rounds / OSU's, against the 0.95-1.05 band.
dir = ARG1; load system('dirname "'.ARG0.'"').'/common.gp'
f = data('compare-osu.csv')
if (!have(f)) { eval skip('compare_osu: no compare-osu.csv') }
ops = uniq(f, 'op')
set title 'parabench / OSU Micro-Benchmarks, same operation, sizes and iterations'
set xlabel 'message size (bytes; parabench buffer size)'
set ylabel 'ratio parabench / OSU (median of rounds)'
set logscale x 2
eval 'set xtics '.SIZETICS
set yrange [0.5:2]
set object 1 rect from graph 0, first 0.95 to graph 1, first 1.05 fc rgb '#e8f4e8' fs solid 1.0 noborder behind
eval footnote('ratio of the metric each tool reports: time for latency and collectives, bandwidth for bw and bibw; median of each tool over the rounds; band: 0.95-1.05')
set key outside right top
do for [fmt in "png svg"] {
  eval set_term(fmt, 'compare_osu')
  plot for [i = 1:words(ops)] f using (strcol('op') eq word(ops, i) ? column('bytes') : NaN):(column('ratio_median')) \
       with linespoints lt i title word(ops, i)
}

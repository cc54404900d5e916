# The planner's predictions against the measurements (plan --fit over this run).
dir = ARG1; load system('dirname "'.ARG0.'"').'/common.gp'
f = data('plan_fit.csv')
if (!have(f)) { eval skip('plan_fit: no plan_fit.csv') }
benches = uniq(f, 'benchmark')
set title "Predicted vs measured step time (plan --fit, alpha-beta fitted on this run's sweeps)"
set xlabel 'measured (µs)'
set ylabel 'predicted (µs)'
set logscale xy 10
set format x '%g'; set format y '%g'
stats f using (column('measured_us')) name 'M' nooutput
stats f using (column('predicted_us')) name 'P' nooutput
lo = (M_min < P_min ? M_min : P_min) / 1.5; hi = (M_max > P_max ? M_max : P_max) * 1.5
set xrange [lo:hi]; set yrange [lo:hi]
set key top left
set size ratio -1
eval footnote('diagonal: perfect prediction; dashed: ±25%. a and B per link class from coll_sweep / p2p_sweep, compute as measured')
do for [fmt in "png svg"] {
  eval set_term(fmt, 'plan_fit')
  plot x with lines lc rgb '#444444' lw 1.5 notitle, 1.25 * x with lines lc rgb '#999999' dt 2 notitle, 0.75 * x with lines lc rgb '#999999' dt 2 notitle, \
       for [i = 1:words(benches)] f using (strcol('benchmark') eq word(benches, i) ? column('measured_us') : NaN):(column('predicted_us')) \
         with points lt i ps 1.5 title word(benches, i)
}

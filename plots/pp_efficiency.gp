# Pipeline efficiency vs micro-batches, per schedule, against theory m/(m+p-1).
dir = ARG1; load system('dirname "'.ARG0.'"').'/common.gp'
f = data('pp_pipeline.csv')
if (!have(f)) { eval skip('pp_efficiency: no pp_pipeline.csv') }
scheds = uniq(f, 'schedule')
p = first(uniq(f, 'stages')) + 0
set title sprintf("Pipeline efficiency vs micro-batches (p = %d stages, %s)", p, uniq(f, 'link_class'))
set xlabel 'micro-batches per step m'
set ylabel 'efficiency = ideal compute / step'
set logscale x 2
set xrange [0.8:*]
set yrange [0:1.05]
set format y '%.1f'
set key bottom right
set samples 200
theory(m) = m >= 1 ? m / (m + p - 1.0) : NaN
eval footnote('ideal = (t_fwd + t_bwd) · m of one stage; bubble = (p-1)/(m+p-1) of the step (GPipe, 1F1B alike)')
do for [fmt in "png svg"] {
  eval set_term(fmt, 'pp_efficiency')
  plot theory(x) with lines lc rgb '#777777' dt 2 lw 2.5 title sprintf('theory m/(m+%d)', p - 1), \
       for [i = 1:words(scheds)] f using (strcol('schedule') eq word(scheds, i) ? column('micro_batches') : NaN):(column('efficiency')) \
         with linespoints lt i title sprintf('measured, %s', word(scheds, i))
}

# Data parallelism: exposed communication / compute vs gradient size, per overlap
# mode, against the no-overlap prediction comm/compute.
dir = ARG1; load system('dirname "'.ARG0.'"').'/common.gp'
f = data('dp_allreduce.csv')
if (!have(f)) { eval skip('dp_overhead: no dp_allreduce.csv') }
modes = uniq(f, 'overlap')
set title sprintf("Data-parallel overhead vs gradient size (%s ranks, %s)", first(uniq(f, 'nranks')), uniq(f, 'link_class'))
set xlabel 'gradients all-reduced per step (bytes)'
set ylabel 'overhead = exposed comm / compute'
set logscale x 2
set offsets graph 0.03, graph 0.03, 0, 0  # keep the end sizes' tics inside the range
eval 'set xtics '.SIZETICS
set format y '%.0f%%'
set key top left
set arrow 1 from graph 0, first 20 to graph 1, first 20 nohead dt 3 lc rgb '#888888'
set label 1 'rule of thumb: DP scales while overhead < 20%' at graph 0.99, first 20 right offset 0, 0.6 font 'Sans,10' tc rgb '#666666'
eval footnote('exposed = step - compute (max over ranks); prediction without overlap = comm / compute; bucket: DDP buckets overlapped with backward')
do for [fmt in "png svg"] {
  eval set_term(fmt, 'dp_overhead')
  plot for [i = 1:words(modes)] f using (strcol('overlap') eq word(modes, i) ? column('grad_bytes') : NaN):(100 * column('overhead')) \
         with linespoints lt i title sprintf('measured, overlap %s', word(modes, i)), \
       f using (strcol('overlap') eq word(modes, 1) ? column('grad_bytes') : NaN):(100 * column('predicted_overhead')) \
         with linespoints lt 7 dt 2 pt 6 title 'predicted comm / compute (no overlap)'
}

# Point-to-point bandwidth vs size: unidirectional (window of sends) and bidirectional.
dir = ARG1; load system('dirname "'.ARG0.'"').'/common.gp'
f = data('p2p_sweep.csv')
if (!have(f)) { eval skip('p2p_bw: no p2p_sweep.csv') }
set title sprintf("Point-to-point bandwidth (ranks %s and %s, %s)", first(uniq(f, 'rank_a')), first(uniq(f, 'rank_b')), uniq(f, 'link_class'))
set xlabel 'message size (bytes)'
set ylabel 'bandwidth (GB/s)'
set logscale x 2
eval 'set xtics '.SIZETICS
set yrange [0:*]
eval footnote('OSU method: bw = window × S / (time of the window + ack); bibw: both directions at once')
modes = 'bw bibw'
do for [fmt in "png svg"] {
  eval set_term(fmt, 'p2p_bw')
  plot for [i = 1:2] f using (strcol('mode') eq word(modes, i) ? column('bytes') : NaN):(column('bw_GBps')) \
       with linespoints lt i title (i == 1 ? 'unidirectional (bw)' : 'bidirectional (bibw)')
}

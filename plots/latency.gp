# Latency vs size for small messages (<= 64 KiB): every collective, and p2p ping-pong.
dir = ARG1; load system('dirname "'.ARG0.'"').'/common.gp'
f = data('coll_sweep.csv'); p = data('p2p_sweep.csv')
if (!have(f) && !have(p)) { eval skip('latency: no coll_sweep.csv or p2p_sweep.csv') }
colls = have(f) ? uniq(f, 'collective') : ''
n = have(f) ? first(uniq(f, 'nranks')) : '2'
set title sprintf("Small-message latency (%s ranks)", n)
set xlabel 'message size (bytes)'
set ylabel 'time per operation (µs)'
set logscale xy 2
set xrange [*:65536]
eval 'set xtics '.SIZETICS
set format y '%g'
eval footnote('collectives: mean over ranks of each rank mean (OSU/IMB); p2p: half the ping-pong round trip')
do for [fmt in "png svg"] {
  eval set_term(fmt, 'latency')
  plot for [i = 1:words(colls)] f using (strcol('collective') eq word(colls, i) && column('bytes') <= 65536 ? column('bytes') : NaN):(column('time_us')) \
         with linespoints lt i title word(colls, i), \
       (have(p) ? p : '/dev/null') using (strcol('mode') eq 'latency' && column('bytes') <= 65536 ? column('bytes') : NaN):(column('time_us')) \
         with linespoints lc rgb '#444444' dt 2 lw 2.5 pt 13 ps 1.4 title 'p2p ping-pong'
}

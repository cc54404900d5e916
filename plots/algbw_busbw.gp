# algbw vs busbw on one collective (allreduce): the same measurement, two normalisations.
dir = ARG1; load system('dirname "'.ARG0.'"').'/common.gp'
f = data('coll_sweep.csv')
if (!have(f)) { eval skip('algbw_busbw: no coll_sweep.csv') }
# allreduce shows the gap best, except at n = 2 where its factor is 1: then allgather (1/2).
n = first(uniq(f, 'nranks')) + 0
cs = uniq(f, 'collective')
coll = (n > 2 && strstrt(cs, 'allreduce')) ? 'allreduce' : strstrt(cs, 'allgather') ? 'allgather' : first(cs)
factor = coll eq 'allreduce' ? 2.0 * (n - 1) / n : (coll eq 'broadcast' || coll eq 'reduce' || coll eq 'sendrecv') ? 1.0 : (n - 1.0) / n
set title sprintf("algbw vs busbw: %s on %d ranks (busbw = algbw × %.3g)", coll, n, factor)
set xlabel 'message size S (bytes)'
set ylabel 'bandwidth (GB/s)'
set logscale x 2
eval 'set xtics '.SIZETICS
set yrange [0:*]
eval footnote(sprintf('algbw = S / t: how fast this operation finishes.   busbw = algbw × %s = %.3g: what the busiest link carries, comparable with link speed', coll eq 'allreduce' ? '2(n-1)/n' : '(n-1)/n', factor))
do for [fmt in "png svg"] {
  eval set_term(fmt, 'algbw_busbw')
  plot f using (strcol('collective') eq coll ? column('bytes') : NaN):(column('algbw_GBps')) with linespoints lt 1 title 'algbw = S / t', \
       f using (strcol('collective') eq coll ? column('bytes') : NaN):(column('busbw_GBps')) with linespoints lt 2 title 'busbw = algbw × factor'
}

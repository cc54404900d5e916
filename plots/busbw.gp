# Bus bandwidth vs message size, one line per collective (coll_sweep.csv).
dir = ARG1; load system('dirname "'.ARG0.'"').'/common.gp'
f = data('coll_sweep.csv')
if (!have(f)) { eval skip('busbw: no coll_sweep.csv') }
colls = uniq(f, 'collective')
n = first(uniq(f, 'nranks')); links = uniq(f, 'link_class')
set title sprintf("Bus bandwidth vs message size (coll_sweep, %s ranks, %s)", n, links)
set xlabel 'message size (bytes, full buffer S)'
set ylabel 'bus bandwidth (GB/s = 10⁹ B/s)'
set logscale x 2
eval 'set xtics '.SIZETICS
set yrange [0:*]
set key top left
eval footnote('busbw = S/t × factor: 2(n-1)/n allreduce; (n-1)/n allgather, reducescatter, alltoall; 1 broadcast, reduce, sendrecv (nccl-tests)')
do for [fmt in "png svg"] {
  eval set_term(fmt, 'busbw')
  plot for [i = 1:words(colls)] f using (strcol('collective') eq word(colls, i) ? column('bytes') : NaN):(column('busbw_GBps')) \
       with linespoints lt i title word(colls, i)
}

# The same collective (allreduce) inside one node and across nodes: one line per
# link class found in coll_sweep.csv and coll_sweep_intra.csv (a multi-node run's intra-node sweep of
# every node at once, coll_sweep --groups node: drawn for its first group, node0).
dir = ARG1; load system('dirname "'.ARG0.'"').'/common.gp'
# A list of file names (words), each turned into a path only where it is read:
# the results path may hold spaces.
files = ''
do for [name in "coll_sweep.csv coll_sweep_intra.csv"] { if (have(data(name))) { files = files.' '.name } }
if (words(files) == 0) { eval skip('intra_inter: no coll_sweep.csv') }
set title "allreduce bus bandwidth: intra-node vs inter-node"
set xlabel 'message size (bytes)'
set ylabel 'bus bandwidth (GB/s)'
set logscale x 2
eval 'set xtics '.SIZETICS
set yrange [0:*]
links = ''
do for [fi in files] { do for [l in uniq(data(fi), 'link_class')] { if (!strstrt(links, l)) { links = links.' '.l } } }
if (words(links) < 2) {
  set title sprintf("allreduce bus bandwidth: intra-node vs inter-node\n(this run measured%s only: run on two or more nodes, --hostfile or Slurm, for the other link class)", links)
}
eval footnote('intra: all ranks share a node (shared memory / NVLink); inter: every rank on its own node; mixed: both')
do for [fmt in "png svg"] {
  eval set_term(fmt, 'intra_inter')
  plot for [fi in files] for [l in uniq(data(fi), 'link_class')] data(fi) \
       using (strcol('collective') eq 'allreduce' && strcol('link_class') eq l && strcol('group') eq first(uniq(data(fi), 'group')) ? column('bytes') : NaN):(column('busbw_GBps')) \
       with linespoints lt (l eq 'intra' ? 1 : l eq 'inter' ? 2 : 3) title sprintf('%s (%s ranks)', l, first(uniq(data(fi), 'nranks')))
}

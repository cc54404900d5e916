# The all-pairs matrix (p2p_sweep --matrix) as two heat maps: latency and bandwidth.
# Above 32 ranks the cells are nodes (p2p_matrix-*-nodes.csv, scripts/figure_data.py:
# the median of each node pair's rank pairs; the diagonal, the pairs inside a node).
dir = ARG1; load system('dirname "'.ARG0.'"').'/common.gp'
lat = data('p2p_matrix-latency.csv'); bw = data('p2p_matrix-bw.csv')
if (!have(lat) || !have(bw)) { eval skip('p2p_matrix: no p2p_matrix-latency.csv / -bw.csv') }
cell = 'rank'
if (have(data('p2p_matrix-latency-nodes.csv')) && have(data('p2p_matrix-bw-nodes.csv'))) {
  lat = data('p2p_matrix-latency-nodes.csv'); bw = data('p2p_matrix-bw-nodes.csv'); cell = 'node'
}
self = cell eq 'rank' ? 'self' : ''
# cells per side (the header's columns less one); above 32, no value in each cell
side = int(system(sprintf("awk -F, '!/^#/ && NF { print NF - 1; exit }' '%s'", bw)))
lab(v) = side > 32 ? '' : v == v ? sprintf('%.3g', v) : self
if (cell eq 'node') { set xtics rotate by 45 right }
set datafile columnheaders
unset grid
set size ratio -1
set tics in
set xlabel cell.' B'
set ylabel cell.' A'
set yrange [*:*] reverse
set key off
set border 15
set cbtics
set cbrange [0:*]
do for [fmt in "png svg"] {
  eval set_term(fmt, 'p2p_matrix')
  set multiplot layout 1,2 title (cell eq 'rank' ? "Every pair of ranks" : "Every pair of nodes (median of its rank pairs)").": point-to-point latency and bandwidth (p2p_sweep --matrix)" font 'Sans,15'
  set title 'latency (µs, small message)' font 'Sans,13'
  set palette defined (0 '#fff5eb', 0.5 '#fd8d3c', 1 '#7f2704')
  plot lat matrix rowheaders columnheaders using 1:2:3 with image pixels notitle, \
       lat matrix rowheaders columnheaders using 1:2:(lab($3)) with labels font 'Sans,10' notitle
  set title 'bandwidth (GB/s, large message)'
  set palette defined (0 '#f7fbff', 0.5 '#6baed6', 1 '#08306b')
  plot bw matrix rowheaders columnheaders using 1:2:3 with image pixels notitle, \
       bw matrix rowheaders columnheaders using 1:2:(lab($3)) with labels font 'Sans,10' tc rgb '#cc0000' notitle
  unset multiplot
}

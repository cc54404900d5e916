# Tensor parallelism: communication share of the layer step vs the bytes a rank moves per layer
# (the sweep varies s or h; run_all runs the model's layer at s/2, s and 2s), per mode.
dir = ARG1; load system('dirname "'.ARG0.'"').'/common.gp'
f = data('tp_layer.csv')
if (!have(f)) { eval skip('tp_fraction: no tp_layer.csv') }
modes = uniq(f, 'mode')
set title sprintf("Tensor-parallel communication fraction vs bytes moved (t = %s, %s)", first(uniq(f, 'tp')), uniq(f, 'link_class'))
set xlabel 'bytes a rank sends per layer (8·b·s·h·(t-1)/t elements)'
set ylabel 'communication / layer step'
set logscale x 2
set format y '%.0f%%'
set yrange [0:100]
set key bottom left
eval footnote('Megatron: 4 all-reduces of b·s·h per layer (fwd + bwd), or all-gather + reduce-scatter (sp); 8·b·s·h·(t-1)/t elements per rank')
do for [fmt in "png svg"] {
  eval set_term(fmt, 'tp_fraction')
  plot for [i = 1:words(modes)] f using (strcol('mode') eq word(modes, i) ? column('comm_bytes_per_rank') : NaN):(100 * column('comm_fraction')) \
         with linespoints lt i title (word(modes, i) eq 'sp' ? 'sequence parallel (AG + RS)' : word(modes, i) eq 'allreduce' ? 'all-reduce (Megatron f/g)' : word(modes, i))
}

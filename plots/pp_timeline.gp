# The timeline of one pipeline step (pp_pipeline --trace): one row per stage,
# forward and backward boxes labelled by micro-batch; white gaps are the bubble.
dir = ARG1; load system('dirname "'.ARG0.'"').'/common.gp'
f = data('pp_trace.csv')
if (!have(f)) { eval skip('pp_timeline: no pp_trace.csv') }
scheds = uniq(f, 'schedule')
S = strstrt(scheds, '1f1b') ? '1f1b' : first(scheds)
# the largest m traced for that schedule
M = system(sprintf("awk -F, '/^#/ || !NF { next } !h { for (i = 1; i <= NF; i++) c[$i] = i; h = 1; next } $c[\"schedule\"] == \"%s\" && $c[\"micro_batches\"] + 0 > m { m = $c[\"micro_batches\"] + 0 } END { print m }' '%s'", S, f)) + 0
P = system(sprintf("awk -F, '/^#/ || !NF { next } !h { for (i = 1; i <= NF; i++) c[$i] = i; h = 1; next } $c[\"schedule\"] == \"%s\" { print $c[\"stages\"]; exit }' '%s'", S, f)) + 0
T = system(sprintf("awk -F, '/^#/ || !NF { next } !h { for (i = 1; i <= NF; i++) c[$i] = i; h = 1; next } $c[\"schedule\"] == \"%s\" && $c[\"micro_batches\"] + 0 == %d && $c[\"end_us\"] + 0 > t { t = $c[\"end_us\"] + 0 } END { print t + 0 }' '%s'", S, M, f)) + 0
sel(e) = strcol('schedule') eq S && column('micro_batches') == M && column('replica') == 0 && strcol('event') eq e
x0(e) = sel(e) ? (column('start_us') + column('end_us')) / 2000.0 : NaN
dx(d) = (column('end_us') - column('start_us')) / 2000.0
set title sprintf("One pipeline step: %s, p = %d stages, m = %d micro-batches (replica 0)", S, P, M)
set xlabel 'time from the start of the step (ms)'
set ylabel 'stage (rank)'
set yrange [P - 0.5:-0.5]
set ytics 1
set xrange [0:*]
set grid noytics
set key outside right top vertical
set style fill solid 0.9 border lc rgb '#ffffff'
eval footnote('boxes: compute (number = micro-batch); grey: waiting for an input (recv); white: idle. The bubble is (p-1)/(m+p-1) of the step')
do for [fmt in "png svg"] {
  eval set_term(fmt, 'pp_timeline')
  plot f using (x0('recv_act')):(column('stage')):(dx(0)):(0.12) with boxxyerror lc rgb '#bbbbbb' title 'waiting (recv)', \
       f using (x0('recv_grad')):(column('stage')):(dx(0)):(0.12) with boxxyerror lc rgb '#bbbbbb' notitle, \
       f using (x0('fwd')):(column('stage')):(dx(0)):(0.38) with boxxyerror lc rgb C[1] title 'forward', \
       f using (x0('bwd')):(column('stage')):(dx(0)):(0.38) with boxxyerror lc rgb C[2] title 'backward', \
       f using (column('end_us') - column('start_us') > 0.02 * T ? x0('fwd') : NaN):(column('stage')):(sprintf('%d', column('mb'))) with labels tc rgb 'white' font 'Sans,10' notitle, \
       f using (column('end_us') - column('start_us') > 0.02 * T ? x0('bwd') : NaN):(column('stage')):(sprintf('%d', column('mb'))) with labels tc rgb 'white' font 'Sans,10' notitle
}

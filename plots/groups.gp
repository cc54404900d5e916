# Concurrent groups (coll_sweep --groups node|rail, e.g. run_all.sh's coll_sweep_intra):
# per collective and size, the median over the groups' bus bandwidth (solid) and the
# slowest group's (dashed). A slow node or rail shows as a dashed line below its solid one.
# The legend names each collective's slowest group at its largest size, with its host
# (groups-hosts.csv beside the figure, written by scripts/figure_data.py; without it, the group alone).
dir = ARG1; load system('dirname "'.ARG0.'"').'/common.gp'
src = ''
do for [name in "coll_sweep_intra.csv coll_sweep.csv"] {
  if (src eq '' && have(data(name)) && words(uniq(data(name), 'group')) > 1) { src = name }
}
if (src eq '') { eval skip('groups: no coll_sweep CSV with two or more groups (coll_sweep --groups node|rail on several nodes)') }
# collective,bytes,median_busbw,slowest_busbw,slowest_group: one line per collective and size
sum = dir.'/plots/groups.csv'
system(sprintf("awk -F, '/^#/ || !NF { next } !h { for (i = 1; i <= NF; i++) c[$i] = i; h = 1; next } \
  { k = $c[\"collective\"] \",\" $c[\"bytes\"]; if (!(k in n)) order[++m] = k; v = $c[\"busbw_GBps\"] + 0; \
    n[k]++; val[k, n[k]] = v; if (n[k] == 1 || v < lo[k]) { lo[k] = v; who[k] = $c[\"group\"] } } \
  END { print \"collective,bytes,median_busbw_GBps,slowest_busbw_GBps,slowest_group\"; \
        for (j = 1; j <= m; j++) { k = order[j]; t = n[k]; \
          for (a = 2; a <= t; a++) { x = val[k, a]; for (b = a - 1; b >= 1 && val[k, b] > x; b--) val[k, b + 1] = val[k, b]; val[k, b + 1] = x } \
          med = t %% 2 ? val[k, (t + 1) / 2] : (val[k, t / 2] + val[k, t / 2 + 1]) / 2; \
          printf \"%%s,%%.6g,%%.6g,%%s\\n\", k, med, lo[k], who[k] } }' '%s' > '%s'", data(src), sum))
# slowest(coll): "node2 (host)", the slowest group of coll at its largest size and its host
hostmap = dir.'/plots/groups-hosts.csv'
slowest(coll) = system(sprintf("awk -F, -v map='%s' -v coll='%s' \
  'BEGIN { while ((getline l < map) > 0) { split(l, p, \",\"); h[p[1]] = p[2] } } \
   FNR > 1 && $1 == coll && (g == \"\" || $2 + 0 >= b) { b = $2 + 0; g = $5 } \
   END { printf \"%%s%%s\", g, (g in h) ? \" (\" h[g] \")\" : \"\" }' '%s'", hostmap, coll, sum))
set title sprintf("Concurrent groups (%s, %d groups): median group vs slowest group", src, words(uniq(data(src), 'group')))
set xlabel 'message size (bytes)'
set ylabel 'bus bandwidth (GB/s)'
set logscale x 2
eval 'set xtics '.SIZETICS
set yrange [0:*]
eval footnote('solid: median over the groups; dashed: the slowest group at that size; legend: the slowest group at the largest size')
set key samplen 6
colls = uniq(sum, 'collective')
do for [fmt in "png svg"] {
  eval set_term(fmt, 'groups')
  plot for [i = 1:words(colls)] sum using (strcol('collective') eq word(colls, i) ? column('bytes') : NaN):(column('median_busbw_GBps')) \
         with linespoints lt i dt 1 title word(colls, i).' median', \
       for [i = 1:words(colls)] sum using (strcol('collective') eq word(colls, i) ? column('bytes') : NaN):(column('slowest_busbw_GBps')) \
         with linespoints lt i dt (10,5) title word(colls, i).' slowest: '.slowest(word(colls, i))
}

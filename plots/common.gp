# Shared setup for the figure scripts. Each script is run as
#   gnuplot -c plots/NAME.gp RESULTS_DIR
# reads CSV files of that run by column name, and writes RESULTS_DIR/plots/NAME.png and .svg.
# A figure whose data is absent prints "skip: ..." and exits 0.
if (!exists("dir")) dir = ARG1
set datafile separator ','
set datafile commentschars '#'
set datafile columnheaders
set datafile missing NaN
set encoding utf8
data(name) = dir.'/'.name
# File exists and has at least one data row (a header plus a row).
have(file) = system(sprintf("awk '!/^#/ && NF { n++ } END { print (n > 1) }' '%s' 2>/dev/null", file)) eq "1"
# Distinct values of a column (found by header name), in order of appearance.
uniq(file, col) = system(sprintf("awk -F, '/^#/ || !NF { next } !h { for (i = 1; i <= NF; i++) if ($i == \"%s\") c = i; h = 1; next } c && !seen[$c]++ { printf \"%%s%%s\", (k++ ? \" \" : \"\"), $c }' '%s' 2>/dev/null", col, file))
first(list) = word(list, 1)
skip(msg) = sprintf("print 'skip: %s'; exit", msg)
# Terminals: a PNG for the report and an SVG for slides; same size and fonts.
set_term(fmt, name) = fmt eq "png" ? \
    sprintf("set terminal pngcairo size 1100,680 noenhanced font 'Sans,13' linewidth 1.5 background rgb 'white'; set output '%s/plots/%s.png'", dir, name) : \
    sprintf("set terminal svg size 1100,680 dynamic noenhanced font 'Sans,13' linewidth 1.5 background rgb 'white'; set output '%s/plots/%s.svg'", dir, name)
system(sprintf("mkdir -p '%s/plots'", dir))
# Byte sizes on a log axis, labelled in K/M/G (1024^n).
SIZETICS = "(\"1\" 1, \"4\" 4, \"16\" 16, \"64\" 64, \"256\" 256, \"1K\" 1024, \"4K\" 4096, \"16K\" 16384, \"64K\" 65536, \"256K\" 262144, \"1M\" 1048576, \"4M\" 4194304, \"16M\" 16777216, \"64M\" 67108864, \"256M\" 268435456, \"1G\" 1073741824, \"4G\" 4294967296.)"
set grid xtics ytics mxtics mytics lc rgb '#dddddd' lw 0.6, lc rgb '#eeeeee' lw 0.4
set border 3 lw 1.2
set tics nomirror out
set key top left box opaque samplen 2.5 spacing 1.15
set title font 'Sans,15'
# A qualitative palette (Okabe-Ito), distinguishable by colour-blind readers.
array C[8] = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9', '#000000', '#F0E442']
do for [i = 1:8] { set linetype i lc rgb C[i] lw 2 pt (i == 7 ? 9 : i + 4) ps 1.1 }
# A one-line footnote under the plot (definitions, sources).
footnote(text) = sprintf("set label 99 \"%s\" at screen 0.5, screen 0.03 center font 'Sans,10' tc rgb '#555555'; set bmargin 6", text)

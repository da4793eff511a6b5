# ns per link against links per walk, log-log; chains left, nestings right.
# gnuplot -e "data='wide.dat'; out='resolver.png'" plot.gp
set terminal pngcairo size 1200,500 font ",10"
set output out
set logscale xy
set grid
set key top left
set xlabel "links per walk"
set ylabel "ns per link (median)"
set multiplot layout 1,2
set title "serial chains"
plot data using (strcol(1) eq "chain" ? $2 : NaN):3 with linespoints title "rs\\_resolve (memtree)", \
     ''   using (strcol(1) eq "chain" ? $2 : NaN):4 with linespoints title "recursive reference (memtree)", \
     ''   using (strcol(1) eq "chain" ? $2 : NaN):5 with linespoints title "kernel stat() on tmpfs", \
     ''   using (strcol(1) eq "chain" ? $2 : NaN):6 with linespoints title "rs\\_resolve (synthetic tree)"
set title "nestings"
plot data using (strcol(1) eq "nest" ? $2 : NaN):3 with linespoints title "rs\\_resolve (memtree)", \
     ''   using (strcol(1) eq "nest" ? $2 : NaN):4 with linespoints title "recursive reference (memtree)", \
     ''   using (strcol(1) eq "nest" ? $2 : NaN):5 with linespoints title "kernel stat() on tmpfs", \
     ''   using (strcol(1) eq "nest" ? $2 : NaN):6 with linespoints title "rs\\_resolve (synthetic tree)"
unset multiplot

# bench/poll plot: gnuplot -e "data='wide.dat'; out='poll.png'" plot.gp
# data columns: N, ns per iteration (pollcore, libev-poll, libev-epoll, naive), then
# instructions per iteration in the same order.
set terminal pngcairo size 1200,520 font ",10"
set output out
set multiplot layout 1,2 title "one ready pipe among N: pollcore vs libev vs naive (2 vCPU)"
set logscale x 2
set logscale y 10
set xrange [0.8:6000]
set xlabel "N (watched pipes)"
set grid
set key top left
set format y "%g"
set xtics (1, 2, 4, 8, 16, 32, 64, 256, 1024, 4096)

set title "time per iteration (median, thread CPU time)"
set ylabel "ns"
plot data using 1:2 with linespoints lw 2 title "pollcore", \
     data using 1:3 with linespoints title "libev poll", \
     data using 1:4 with linespoints title "libev epoll", \
     data using 1:5 with linespoints dt 2 title "naive (malloc + fill)"

set title "user-space instructions per iteration (callgrind)"
set ylabel "instructions"
plot data using 1:6 with linespoints lw 2 title "pollcore", \
     data using 1:7 with linespoints title "libev poll", \
     data using 1:8 with linespoints title "libev epoll", \
     data using 1:9 with linespoints dt 2 title "naive (malloc + fill)"
unset multiplot

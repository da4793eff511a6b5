/*
 * bench_timeit: run one shell command and say what it cost, for the mount-level benchmarks.
 *
 *   bench_timeit [-p PID]... [-t SECONDS] -- COMMAND
 *
 * COMMAND runs under /bin/sh -c (pipelines and `&` work; stdout and stderr are the caller's).
 * One line goes to stdout, space-separated:
 *
 *   wall_ns  child_user_ns  child_sys_ns  daemon_user_ns  daemon_sys_ns  busy_ns  status
 *
 * child_*: rusage of COMMAND and everything it waited for (the workload's own CPU).
 * daemon_*: utime/stime growth of the processes given with -p (every thread, dead ones too:
 *   /proc/PID/stat), summed; clock-tick resolution (usually 10 ms).
 * busy_ns: CPU time the whole machine was not idle during the run (/proc/stat, all CPUs;
 *   tick resolution): what neither the workload nor the daemon accounts for shows up here
 *   (kernel threads, interrupts, other tenants).
 * status: COMMAND's exit status, 128+N when killed by signal N, 124 when -t expired (the
 *   command's process group is then killed).
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { MAX_PIDS = 8 };

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t tv_ns(struct timeval tv)
{
	return (uint64_t)tv.tv_sec * 1000000000u + (uint64_t)tv.tv_usec * 1000u;
}

/* utime and stime of PID in ns (fields 14 and 15 of /proc/PID/stat); 0 when gone. */
static void proc_cpu(pid_t pid, uint64_t *user, uint64_t *sys)
{
	char path[64], buf[2048];
	long tck = sysconf(_SC_CLK_TCK);
	unsigned long long ut = 0, st = 0;
	FILE *f;
	size_t n;
	char *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the command name may hold spaces */
	if (!p ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return;
	*user += ut * (1000000000ull / (unsigned long long)tck);
	*sys += st * (1000000000ull / (unsigned long long)tck);
}

/* Non-idle CPU time of the machine in ns, all CPUs (/proc/stat "cpu" line). */
static uint64_t busy_ns(void)
{
	unsigned long long v[10] = {0};
	long tck = sysconf(_SC_CLK_TCK);
	FILE *f = fopen("/proc/stat", "re");
	uint64_t busy = 0;

	if (!f)
		return 0;
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
		   &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]) >= 8)
		/* user nice system [idle iowait] irq softirq steal; guest is inside user */
		busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
	fclose(f);
	return busy * (1000000000ull / (unsigned long long)tck);
}

static volatile sig_atomic_t alarmed, stopped;

static void on_alarm(int sig)
{
	if (sig == SIGALRM)
		alarmed = 1;
	else
		stopped = sig;
}

static void usage(void)
{
	fprintf(stderr, "usage: bench_timeit [-p PID]... [-t SECONDS] -- COMMAND\n");
	exit(2);
}

int main(int argc, char **argv)
{
	pid_t pids[MAX_PIDS];
	int npids = 0, opt, status;
	double timeout = 0;
	uint64_t du0 = 0, ds0 = 0, du1 = 0, ds1 = 0, b0, b1, t0, t1;
	struct rusage ru;
	pid_t child;
	int timed_out = 0;

	while ((opt = getopt(argc, argv, "+p:t:")) != -1) {
		switch (opt) {
		case 'p':
			if (npids == MAX_PIDS)
				usage();
			pids[npids++] = (pid_t)atoi(optarg);
			break;
		case 't':
			timeout = atof(optarg);
			break;
		default:
			usage();
		}
	}
	if (optind != argc - 1)
		usage();

	for (int i = 0; i < npids; i++)
		proc_cpu(pids[i], &du0, &ds0);
	b0 = busy_ns();
	t0 = now_ns();
	child = fork();
	if (child < 0) {
		perror("bench_timeit: fork");
		return 1;
	}
	if (child == 0) {
		setpgid(0, 0); /* so a timeout can kill the whole pipeline */
		execl("/bin/sh", "sh", "-c", argv[optind], (char *)NULL);
		_exit(127);
	}
	setpgid(child, child);
	if (timeout > 0) {
		/* a hung workload never hangs the benchmark: SIGALRM interrupts the wait */
		struct sigaction sa;
		struct itimerval it = {
		    {0, 0},
		    {(time_t)timeout, (suseconds_t)((timeout - (double)(time_t)timeout) * 1e6)}};
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_alarm;
		sigaction(SIGALRM, &sa, NULL);
		setitimer(ITIMER_REAL, &it, NULL);
	}
	{
		/* interrupted: take the workload down with us */
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_alarm;
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}
	while (wait4(child, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			perror("bench_timeit: wait4");
			return 1;
		}
		if ((alarmed || stopped) && !timed_out) {
			kill(-child, SIGKILL);
			timed_out = 1;
		}
	}
	t1 = now_ns();
	if (stopped)
		return 128 + stopped;
	b1 = busy_ns();
	for (int i = 0; i < npids; i++)
		proc_cpu(pids[i], &du1, &ds1);

	int st = timed_out	       ? 124
		 : WIFEXITED(status)   ? WEXITSTATUS(status)
		 : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
				       : 1;
	printf("%llu %llu %llu %llu %llu %llu %d\n", (unsigned long long)(t1 - t0),
	       (unsigned long long)tv_ns(ru.ru_utime), (unsigned long long)tv_ns(ru.ru_stime),
	       (unsigned long long)(du1 - du0), (unsigned long long)(ds1 - ds0),
	       (unsigned long long)(b1 > b0 ? b1 - b0 : 0), st);
	return 0;
}

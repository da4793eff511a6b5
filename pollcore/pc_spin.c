/*
 * The spin policy (pc_loop_set_spin(), pc.h): zero-timeout polls before a wait, started only
 * while a CPU is to spare (the runnable tasks fit in the affinity mask, capped by the cgroup
 * CPU quota of pc_cgroup.c). pollcore.c's pass calls pc_spin().
 */
#include "pc.h"
#include "pc_int.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

enum { PC_SPARE_SAMPLE_NS = 1000000 };

/* Runnable tasks, this one included, from /proc/loadavg ("0.52 0.58 0.59 2/345 12345");
 * -1 if it cannot be read. */
static long pc_runnable(struct pc_loop *loop)
{
	char buf[128];
	long running;
	ssize_t n;

	if (loop->loadfd < 0)
		loop->loadfd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
	n = loop->loadfd < 0 ? -1 : pread(loop->loadfd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return sscanf(buf, "%*s %*s %*s %ld/", &running) == 1 ? running : -1;
}

/* CPUs this thread may run on: read at every sample, since taskset can change it at any
 * time; a pinned daemon must count one CPU, not the machine's. */
static long pc_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		return CPU_COUNT(&set);
	return sysconf(_SC_NPROCESSORS_ONLN);
}

/* ---- the cgroup CPU quota (pc_cgroup.c): a container held to 1 CPU has 1 to spare ---- */

enum { PC_QUOTA_SAMPLE_NS = 1000000000 };

/* Re-read the quota: this thread's cgroups (v1 may place threads apart), else the process's. */
static void pc_read_quota(struct pc_loop *loop, uint64_t now_ns)
{
	loop->quota_cpus = pc_self_cgroup_cpus();
	loop->quota_at_ns = now_ns;
}

/* The CPUs a spin may count as its own; the quota is re-read at most once a second, since a
 * read opens a file per cgroup level and quotas rarely change. */
static long pc_spin_cpus(struct pc_loop *loop, uint64_t now_ns)
{
	long cpus;

	if (now_ns - loop->quota_at_ns >= PC_QUOTA_SAMPLE_NS)
		pc_read_quota(loop, now_ns);
	cpus = pc_cpus();
	cpus = pc_min_cpus(cpus > 0 ? cpus : 0, loop->quota_cpus);
	loop->stats.spin_cpus = cpus > 0 ? (uint32_t)cpus : 0;
	return cpus;
}

/* Whether a spin would only use a CPU nobody else is waiting for: the runnable tasks (this
 * one included) fit in the CPUs we may use. Reading the file costs a few spin polls, so the
 * answer is kept for a millisecond. Unreadable: yes, the window bounds the cost. */
static bool pc_cpu_spare(struct pc_loop *loop, uint64_t now_ns)
{
	if (loop->spare_at_ns && now_ns - loop->spare_at_ns < PC_SPARE_SAMPLE_NS)
		return loop->spare;
	long running = pc_runnable(loop), cpus = pc_spin_cpus(loop, now_ns);

	loop->spare = running < 0 || cpus <= 0 || running <= cpus;
	loop->spare_at_ns = now_ns;
	return loop->spare;
}

int pc_loop_set_spin(struct pc_loop *loop, uint32_t spin_us, unsigned flags)
{
	if (spin_us > PC_MAX_SPIN_US || (flags & ~(unsigned)PC_SPIN_ALWAYS))
		return -EINVAL;
	loop->spin_us = spin_us;
	loop->spin_always = flags & PC_SPIN_ALWAYS;
	if (spin_us) {
		uint64_t now_ns = pc_now_ns();

		pc_read_quota(loop, now_ns);
		pc_spin_cpus(loop, now_ns);
	}
	return 0;
}

/* Zero-timeout polls for up to spin_us: what is ready, 0 if nothing came, or -errno. */
int pc_spin(struct pc_loop *loop)
{
	uint64_t now_ns = pc_now_ns(), end_ns = now_ns + (uint64_t)loop->spin_us * 1000;

	if (!loop->spin_always && !pc_cpu_spare(loop, now_ns)) {
		loop->stats.spin_skips++;
		return 0;
	}
	loop->stats.spins++;
	do {
		int ready = poll(loop->pfds, loop->count, 0);

		loop->stats.spin_polls++;
		if (ready > 0)
			loop->stats.spin_hits++;
		if (ready > 0 || (ready < 0 && errno != EINTR))
			return ready < 0 ? -errno : ready;
	} while (pc_now_ns() < end_ns);
	return 0;
}

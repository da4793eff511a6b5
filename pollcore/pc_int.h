/*
 * pollcore internals shared by its own files (pc_spin.c, pc_cgroup.c) and driven directly by
 * tests/test_pollcore.c. Not for users: the daemon and every other user include pc.h, and
 * nothing here is a promise.
 */
#ifndef PC_INT_H
#define PC_INT_H

#include <stdint.h>
#include <time.h>

struct pc_loop;

/* The monotonic clock in nanoseconds: timers and the spin's window. */
static inline uint64_t pc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Zero-timeout polls for up to the loop's spin_us, when a CPU is to spare (pc_spin.c): what
 * is ready, 0 if nothing came or the spin was skipped, or -errno. */
int pc_spin(struct pc_loop *loop);

/* The smaller of two CPU counts where 0 means unlimited. */
static inline long pc_min_cpus(long a, long b)
{
	return !a ? b : !b ? a : a < b ? a : b;
}

/*
 * CPUs the cgroup CPU quota leaves a process: quota / period rounded up, the tightest of its
 * cgroup and every ancestor a mount shows. PROC is a /proc directory ("/proc/self") holding
 * the process's "cgroup" ("0::/PATH" for v2, "N:CONTROLLERS:/PATH" for v1) and "mountinfo":
 * each cgroup2 mount, and each cgroup (v1) mount with the cpu option, that shows PATH (its
 * root is PATH or above it) is read: v2 cpu.max, v1 cpu.cfs_quota_us over cpu.cfs_period_us.
 * 0 when there is no quota or none can be read; -errno when PROC/cgroup or PROC/mountinfo
 * cannot be read.
 */
long pc_cgroup_cpus_at(const char *proc);
/* The same for the calling thread (/proc/thread-self, else /proc/self), 0 when neither can be
 * read (pc_spin.c). */
long pc_self_cgroup_cpus(void);

#endif

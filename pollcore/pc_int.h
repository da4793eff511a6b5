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
 * CPUs the cgroup CPU quota leaves this process: quota / period rounded up, the tightest of
 * its cgroup and every ancestor. CGROUP is the text of /proc/self/cgroup; ROOT is where the
 * cgroups are mounted ("/sys/fs/cgroup"): v2 reads ROOT/PATH/cpu.max, v1 reads
 * cpu.cfs_quota_us and cpu.cfs_period_us under ROOT/CONTROLLERS/PATH (or ROOT/cpu/PATH).
 * 0 when there is no quota or nothing can be read.
 */
long pc_cgroup_cpus(const char *cgroup, const char *root);
/* The same for the calling thread, from /proc and /sys/fs/cgroup (pc_spin.c). */
long pc_self_cgroup_cpus(void);

#endif

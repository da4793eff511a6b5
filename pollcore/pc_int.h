/*
 * pollcore internals that tests/test_pollcore.c drives directly. For tests only: the daemon
 * and every other user include pc.h, and nothing here is a promise.
 */
#ifndef PC_INT_H
#define PC_INT_H

/*
 * CPUs the cgroup CPU quota leaves this process: quota / period rounded up, the tightest of
 * its cgroup and every ancestor. CGROUP is the text of /proc/self/cgroup; ROOT is where the
 * cgroups are mounted ("/sys/fs/cgroup"): v2 reads ROOT/PATH/cpu.max, v1 reads
 * cpu.cfs_quota_us and cpu.cfs_period_us under ROOT/CONTROLLERS/PATH (or ROOT/cpu/PATH).
 * 0 when there is no quota or nothing can be read.
 */
long pc_cgroup_cpus(const char *cgroup, const char *root);

#endif

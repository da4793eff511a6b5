/*
 * pollcore: a poll(2) event loop whose fd table lives inline for small counts.
 *
 * The struct pollfd array handed to poll() is kept inside struct pc_loop for up to
 * PC_INLINE_FDS entries (256 bytes), so a loop watching a handful of fds never allocates and
 * can live on the stack. Past that it moves to one heap table, grown by doubling, and comes
 * back inline (the heap freed) as soon as the count fits again. The table is dense and kept in
 * sync on add/modify/remove (swap-remove, fd -> index map); a wait is one poll() and a scan of
 * revents that stops after the last ready entry.
 *
 * Level-triggered: an fd that stays ready is reported on every pass. POLLERR, POLLHUP and
 * POLLNVAL are always reported, asked for or not. Timers use CLOCK_MONOTONIC in milliseconds.
 * Signals are read from a signalfd that sits in the fd table like any other fd.
 *
 * Callbacks may add, modify or remove any watcher (themselves included) and may call
 * pc_stop(). A watcher removed during a pass is never called again, even later in that pass;
 * a watcher added during a pass is first polled by the next one.
 *
 * Functions return 0 (or a count where said) or a negative errno. Nothing is printed, nothing
 * exits. A loop belongs to one thread; nothing here is thread-safe, pc_stop() included.
 */
#ifndef CHAINFS_PC_H
#define CHAINFS_PC_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
	/* Entries of the inline table: 32 * sizeof(struct pollfd) = 256 bytes, enough for the
	 * daemon's /dev/fuse, control socket, signalfd and a few dozen clients. */
	PC_INLINE_FDS = 32,
	/* First heap table: twice the inline one, so growing past 32 does not allocate again
	 * at 33, 34, ... */
	PC_HEAP_MIN_FDS = 64,
	/* The table doubles; this bound keeps every size computation far from overflow.
	 * The kernel's own bound (fs.nr_open) is 1 << 20 by default. */
	PC_MAX_FDS = 1 << 28,
	/* Signals read from the signalfd in one pass at most: a callback that raises its own
	 * signal must not keep the pass going forever; the rest waits for the next pass. */
	PC_SIGNALS_PER_PASS = 64,
};

struct pc_loop;
struct pc_timer;
struct pc_signal;

/* REVENTS holds what poll() reported, limited to the watched events plus POLLERR, POLLHUP
 * and POLLNVAL. */
typedef void pc_io_cb(struct pc_loop *loop, int fd, int revents, void *data);
typedef void pc_timer_cb(struct pc_loop *loop, struct pc_timer *timer, void *data);
typedef void pc_signal_cb(struct pc_loop *loop, struct pc_signal *sig, int signo, void *data);

/*
 * Optional allocator. realloc_fn follows realloc(3) (called with ptr NULL to allocate) and
 * must leave ptr untouched when it returns NULL; free_fn follows free(3). CTX is passed back.
 * Both set, or pass NULL to pc_loop_init() for libc.
 */
struct pc_alloc {
	void *(*realloc_fn)(void *ctx, void *ptr, size_t size);
	void (*free_fn)(void *ctx, void *ptr);
	void *ctx;
};

struct pc_stats {
	uint64_t waits;		/* poll() calls, EINTR restarts included */
	uint64_t waits_inline;	/* ... made on the inline table */
	uint64_t waits_heap;	/* ... made on the heap table */
	uint64_t heap_allocs;	/* successful allocations through the allocator */
	uint32_t largest_table; /* most entries the pollfd table ever held */
	uint64_t spins;		/* busy-polling phases before a wait (pc_loop_set_spin) */
	uint64_t spin_hits;	/* ... that found an fd ready, so the wait was skipped */
	uint64_t spin_polls;	/* zero-timeout poll() calls they made (not in waits) */
	uint64_t spin_skips;	/* spins not started: no CPU to spare */
	uint32_t spin_cpus;	/* CPUs a spin counts on: the affinity mask's, capped by a
				 * cgroup CPU quota; 0 before pc_loop_set_spin() */
};

/* Intrusive list link; private. */
struct pc_link {
	struct pc_link *prev, *next;
};

/* A timer is owned by the caller; the loop only links it. Initialise with pc_timer_init()
 * before anything else. Fields are private. */
struct pc_timer {
	struct pc_link link; /* next == NULL while inactive */
	uint64_t when_ns;
	uint64_t repeat_ns;
	pc_timer_cb *cb;
	void *data;
};

/* A signal watcher is owned by the caller. Initialise with pc_signal_init(). Private. */
struct pc_signal {
	struct pc_signal *next;
	struct pc_loop *loop; /* NULL while inactive */
	pc_signal_cb *cb;
	void *data;
	int signo;
};

/* Per-fd part of the table, parallel to the pollfd array; private. */
struct pc_io_slot {
	pc_io_cb *cb;
	void *data;
};

/*
 * The loop. Public so that it can be embedded or put on the stack; the fields are private.
 * It points into itself: never copy or move an initialised loop.
 */
struct pc_loop {
	struct pollfd *pfds;	  /* inline_pfds, or the heap table */
	struct pc_io_slot *slots; /* parallel to pfds */
	uint32_t count;		  /* entries in use; holes left by a pass included */
	uint32_t cap;		  /* entries pfds and slots can hold */
	int32_t *fdmap;		  /* heap table only: fd -> index, -1 if absent */
	uint32_t fdmap_len;
	uint32_t holes;	  /* entries removed during the current pass, not yet compacted */
	uint32_t hole_lo; /* lowest index among them */
	bool in_pass;	  /* dispatching fd callbacks: removal leaves a hole */
	bool running;	  /* inside pc_run_once() */
	bool stopped;
	bool worked;	  /* the last pass called an fd callback: worth spinning after */
	bool spin_always; /* pc_loop_set_spin() */
	uint32_t spin_us;
	int loadfd;	      /* /proc/loadavg, opened by the first spin; -1 */
	bool spare;	      /* last sample: a CPU to spare */
	uint64_t spare_at_ns; /* when it was taken */
	long quota_cpus;      /* cgroup CPU quota in CPUs, 0: none */
	uint64_t quota_at_ns; /* when it was read */
	int sigfd;	      /* -1 until a signal is watched */
	uint64_t sigwatched;  /* bit signo-1: watched by this loop */
	uint64_t sigblocked;  /* bit signo-1: blocked by us, to unblock when unwatched */
	struct pc_signal *signals;
	struct pc_link timers; /* sorted by deadline, ties in start order */
	struct pc_link due;    /* expired in this pass, not yet called */
	struct pc_alloc alloc;
	struct pc_stats stats;
	struct pollfd inline_pfds[PC_INLINE_FDS];
	struct pc_io_slot inline_slots[PC_INLINE_FDS];
};

/* Loop. ALLOC may be NULL (libc); it is copied. -EINVAL if only one hook is set. */
int pc_loop_init(struct pc_loop *loop, const struct pc_alloc *alloc);
/* Stops every watcher (signal masks restored), frees the heap table. Timers are left
 * inactive. -EBUSY (and nothing done) from inside a callback. The loop may be re-initialised. */
int pc_loop_destroy(struct pc_loop *loop);

/*
 * One pass: wait up to TIMEOUT_MS (negative: no limit; shortened to the first timer) with one
 * poll(), then call the callbacks of ready fds, then of expired timers. Signals arrive as
 * their fd becomes ready. EINTR restarts the wait with the time left. With nothing watched and
 * no limit it returns at once instead of sleeping forever.
 * 0, -EBUSY when called from a callback, or poll()'s negative errno.
 */
int pc_run_once(struct pc_loop *loop, int timeout_ms);
/* Runs passes until pc_stop() is called from a callback (the current pass is finished first)
 * or until nothing is watched. pc_run() clears any earlier stop when it starts: pc_stop() ends
 * the run in progress, never a later one. 0 or a negative errno from pc_run_once(). */
int pc_run(struct pc_loop *loop);
void pc_stop(struct pc_loop *loop);
void pc_loop_stats(const struct pc_loop *loop, struct pc_stats *out);

/*
 * Busy-poll for up to SPIN_US microseconds before a wait that would sleep, after a pass that
 * called an fd callback: zero-timeout poll()s, each a syscall, until an fd is ready. A peer
 * that answers within the window (a caller's next request on a synchronous walk) then finds the
 * loop awake instead of paying for its wake-up, which on a virtual machine whose idle vCPUs halt
 * costs tens of microseconds. An idle loop never spins: one pass without fd work ends it.
 * Nor does a loop on a busy machine: a spin starts only while the kernel's count of runnable
 * tasks (/proc/loadavg, sampled at most once a millisecond) leaves a CPU for it, so spinning
 * does not take time from tasks that have work. The CPUs counted are the thread's affinity
 * mask, capped by a cgroup CPU quota (v2 cpu.max or v1 cpu.cfs_quota_us, rounded up, in the
 * hierarchies /proc/self/mountinfo shows wherever they are mounted; read here and again at
 * most once a second). PC_SPIN_ALWAYS drops that check (a loop with a CPU of its
 * own). A spin delays timers and the pass's timeout by at most SPIN_US.
 * SPIN_US 0 (the default) never spins. -EINVAL above PC_MAX_SPIN_US or for unknown FLAGS.
 */
enum { PC_MAX_SPIN_US = 1000000, PC_SPIN_ALWAYS = 1 };
int pc_loop_set_spin(struct pc_loop *loop, uint32_t spin_us, unsigned flags);

/*
 * Fds. One watcher per fd, keyed by the fd; the loop stores cb and data and never closes fd.
 * EVENTS are poll() events (POLLIN, POLLOUT, POLLPRI, POLLRDHUP, ...); 0 still reports
 * POLLERR/POLLHUP/POLLNVAL.
 * add: -EBADF (fd < 0), -EINVAL (no cb, events outside a short), -EEXIST (fd watched),
 *      -ENOMEM (table growth failed; the loop is unchanged).
 * mod, del: -ENOENT if fd is not watched; mod: -EINVAL for events outside a short.
 * Close an fd only after removing it: a closed fd reports POLLNVAL on every pass.
 */
int pc_io_add(struct pc_loop *loop, int fd, int events, pc_io_cb *cb, void *data);
int pc_io_mod(struct pc_loop *loop, int fd, int events);
int pc_io_del(struct pc_loop *loop, int fd);
/* Watched fds (the internal signalfd included). */
uint32_t pc_io_count(const struct pc_loop *loop);

/*
 * Timers. Fire AFTER_MS from now, then every REPEAT_MS if REPEAT_MS > 0 (a repeating timer
 * that falls behind skips the missed periods rather than firing in a burst). Starting an
 * active timer restarts it. A timer started from a timer callback fires in a later pass, never
 * the current one. Timers with equal deadlines fire in the order they were started.
 * The timer must stay valid while active; pc_timer_stop() on an inactive timer does nothing.
 * start: 0, or -EINVAL if the timer was initialised without a callback.
 */
void pc_timer_init(struct pc_timer *timer, pc_timer_cb *cb, void *data);
int pc_timer_start(struct pc_loop *loop, struct pc_timer *timer, uint64_t after_ms,
		   uint64_t repeat_ms);
void pc_timer_stop(struct pc_loop *loop, struct pc_timer *timer);
bool pc_timer_active(const struct pc_timer *timer);

/*
 * Signals. While a watcher is active its signal is blocked in the calling thread
 * (pthread_sigmask) and read from a signalfd; pc_signal_stop() or pc_loop_destroy() unblocks
 * it again unless it was blocked before. A signal still pending when its watcher stops is
 * consumed, not delivered to the default action later. One watcher per signal and per
 * process: the mask is per thread but signals are per process, so block watched signals before
 * starting other threads, or in every thread. SIGCHLD is not delivered at all while its
 * disposition is SIG_IGN. Costs one fd in the table.
 * start: -EINVAL (SIGKILL, SIGSTOP, glibc's internal 32 and 33, out of range, no callback),
 *        -EBUSY (watcher active), -EEXIST (signal already watched by this loop), -ENOMEM, or
 *        signalfd()'s errno.
 * stop: 0, or -EINVAL if the watcher is active on another loop.
 */
void pc_signal_init(struct pc_signal *sig, int signo, pc_signal_cb *cb, void *data);
int pc_signal_start(struct pc_loop *loop, struct pc_signal *sig);
int pc_signal_stop(struct pc_loop *loop, struct pc_signal *sig);

#endif

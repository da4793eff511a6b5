/*
 * pollcore: the fd table, timers, signals, and the loop that drives them.
 *
 * The table is two parallel dense arrays, pfds[] (handed to poll() as is) and slots[] (cb and
 * data), inline in the loop up to PC_INLINE_FDS entries and in one heap block beyond. Outside
 * a pass the table is inline exactly when its entries fit there.
 *
 * fd -> index: at <= 32 entries the pfds array is its own map, searched linearly; 32 fds are
 * 256 contiguous bytes, four cache lines, cheaper to scan than any hash and needing no memory.
 * The heap table adds a direct array indexed by fd (fds are small dense integers, bounded by
 * RLIMIT_NOFILE), as libev's pollidxs: O(1) at any count.
 *
 * Removal outside a pass swaps the last entry into the hole. During a pass it would move an
 * undispatched entry behind the scan (or a dispatched one ahead of it), so the entry is only
 * marked (fd -1, never matched, never called) and the holes are swap-removed after the pass.
 */
#include "pc.h"
#include "pc_int.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

/* The heap block is pfds[cap] followed by slots[cap]: slots must start aligned. */
_Static_assert(sizeof(struct pollfd) == 8, "pollfd is 8 bytes: 32 of them are 256");
_Static_assert(_Alignof(struct pc_io_slot) <= sizeof(struct pollfd) * PC_HEAP_MIN_FDS,
	       "slots follow pfds in the heap block");

enum { PC_ENTRY_BYTES = sizeof(struct pollfd) + sizeof(struct pc_io_slot) };

/* ---- allocation: every heap byte goes through these ---- */

static void *pc_realloc(struct pc_loop *loop, void *ptr, size_t size)
{
	void *p;

	if (loop->alloc.realloc_fn)
		p = loop->alloc.realloc_fn(loop->alloc.ctx, ptr, size);
	else
		p = realloc(ptr, size);
	if (p)
		loop->stats.heap_allocs++;
	return p;
}

static void pc_free(struct pc_loop *loop, void *ptr)
{
	if (!ptr)
		return;
	if (loop->alloc.free_fn)
		loop->alloc.free_fn(loop->alloc.ctx, ptr);
	else
		free(ptr);
}

/* ---- the table ---- */

static bool pc_is_inline(const struct pc_loop *loop)
{
	return loop->pfds == loop->inline_pfds;
}

/* Index of fd's entry, or -1. */
static int32_t pc_find(const struct pc_loop *loop, int fd)
{
	if (!pc_is_inline(loop))
		return (uint32_t)fd < loop->fdmap_len ? loop->fdmap[fd] : -1;
	for (uint32_t i = 0; i < loop->count; i++)
		if (loop->pfds[i].fd == fd)
			return (int32_t)i;
	return -1;
}

static void pc_map_set(struct pc_loop *loop, int fd, int32_t index)
{
	if (fd >= 0 && !pc_is_inline(loop))
		loop->fdmap[fd] = index;
}

/* Map length the heap table needs once FD is added: the inline table has no map yet, so the
 * fds already held count too. */
static uint32_t pc_map_need(const struct pc_loop *loop, int fd)
{
	int top = fd;

	if (pc_is_inline(loop))
		for (uint32_t i = 0; i < loop->count; i++)
			if (loop->pfds[i].fd > top)
				top = loop->pfds[i].fd;
	return (uint32_t)top + 1;
}

static int pc_grow_map(struct pc_loop *loop, uint32_t need)
{
	size_t len = loop->fdmap_len ? (size_t)loop->fdmap_len * 2 : PC_HEAP_MIN_FDS;
	int32_t *map;

	if (len < need)
		len = need;
	if (len > (size_t)INT_MAX + 1) /* every fd fits; the length stays a uint32_t */
		len = (size_t)INT_MAX + 1;
	map = pc_realloc(loop, loop->fdmap, len * sizeof(*map));
	if (!map)
		return -ENOMEM;
	for (size_t i = loop->fdmap_len; i < len; i++)
		map[i] = -1;
	loop->fdmap = map;
	loop->fdmap_len = (uint32_t)len;
	return 0;
}

/* Move the entries into BLOCK (CAP entries, already allocated) and index them in the map. */
static void pc_move_table(struct pc_loop *loop, void *block, uint32_t cap)
{
	struct pollfd *pfds = block;
	struct pc_io_slot *slots = (struct pc_io_slot *)(pfds + cap);

	memcpy(pfds, loop->pfds, loop->count * sizeof(*pfds));
	memcpy(slots, loop->slots, loop->count * sizeof(*slots));
	if (!pc_is_inline(loop))
		pc_free(loop, loop->pfds);
	loop->pfds = pfds;
	loop->slots = slots;
	loop->cap = cap;
	for (uint32_t i = 0; i < loop->count; i++)
		pc_map_set(loop, pfds[i].fd, (int32_t)i);
}

/*
 * Make room for one more entry, for FD. Everything is allocated before anything is changed,
 * so that -ENOMEM leaves the loop as it was: a grown map is harmless on its own, a new table
 * is freed if the map cannot follow.
 */
static int pc_reserve(struct pc_loop *loop, int fd)
{
	bool full = loop->count == loop->cap;
	uint32_t need = (full || !pc_is_inline(loop)) ? pc_map_need(loop, fd) : 0;
	uint32_t cap = loop->cap;
	void *block = NULL;

	if (!full && need <= loop->fdmap_len)
		return 0;
	if (full) {
		if (cap >= PC_MAX_FDS)
			return -ENOMEM;
		cap = pc_is_inline(loop) ? PC_HEAP_MIN_FDS : cap * 2;
		block = pc_realloc(loop, NULL, (size_t)cap * PC_ENTRY_BYTES);
		if (!block)
			return -ENOMEM;
	}
	if (need > loop->fdmap_len && pc_grow_map(loop, need) < 0) {
		pc_free(loop, block);
		return -ENOMEM;
	}
	if (block)
		pc_move_table(loop, block, cap);
	return 0;
}

/* Back to the inline table once the entries fit: frees the heap block and the map. */
static void pc_shrink(struct pc_loop *loop)
{
	if (pc_is_inline(loop) || loop->count > PC_INLINE_FDS)
		return;
	memcpy(loop->inline_pfds, loop->pfds, loop->count * sizeof(*loop->pfds));
	memcpy(loop->inline_slots, loop->slots, loop->count * sizeof(*loop->slots));
	pc_free(loop, loop->pfds);
	pc_free(loop, loop->fdmap);
	loop->pfds = loop->inline_pfds;
	loop->slots = loop->inline_slots;
	loop->cap = PC_INLINE_FDS;
	loop->fdmap = NULL;
	loop->fdmap_len = 0;
}

static void pc_swap_remove(struct pc_loop *loop, uint32_t i)
{
	uint32_t last = --loop->count;

	pc_map_set(loop, loop->pfds[i].fd, -1);
	if (i == last)
		return;
	loop->pfds[i] = loop->pfds[last];
	loop->slots[i] = loop->slots[last];
	pc_map_set(loop, loop->pfds[i].fd, (int32_t)i);
}

/* Removal during a pass: the entry keeps its place (and its revents, which the scan counts)
 * but can no longer be found or called. */
static void pc_make_hole(struct pc_loop *loop, uint32_t i)
{
	pc_map_set(loop, loop->pfds[i].fd, -1);
	loop->pfds[i].fd = -1;
	loop->slots[i].cb = NULL;
	if (!loop->holes || i < loop->hole_lo)
		loop->hole_lo = i;
	loop->holes++;
}

/* Swap-remove the holes from the highest down: everything above the hole being filled is then
 * live, so the entry moved into it is never another hole. */
static void pc_compact(struct pc_loop *loop)
{
	for (uint32_t i = loop->count; i-- > loop->hole_lo;)
		if (loop->pfds[i].fd < 0)
			pc_swap_remove(loop, i);
	loop->holes = 0;
	pc_shrink(loop);
}

/* ---- fd watchers ---- */

int pc_io_add(struct pc_loop *loop, int fd, int events, pc_io_cb *cb, void *data)
{
	uint32_t i;
	int err;

	if (fd < 0)
		return -EBADF;
	if (!cb || events < 0 || events > SHRT_MAX)
		return -EINVAL;
	if (pc_find(loop, fd) >= 0)
		return -EEXIST;
	err = pc_reserve(loop, fd);
	if (err)
		return err;
	i = loop->count++;
	loop->pfds[i] = (struct pollfd){.fd = fd, .events = (short)events};
	loop->slots[i] = (struct pc_io_slot){.cb = cb, .data = data};
	pc_map_set(loop, fd, (int32_t)i);
	if (loop->count > loop->stats.largest_table)
		loop->stats.largest_table = loop->count;
	return 0;
}

int pc_io_mod(struct pc_loop *loop, int fd, int events)
{
	int32_t i = fd < 0 ? -1 : pc_find(loop, fd);

	if (i < 0)
		return -ENOENT;
	if (events < 0 || events > SHRT_MAX)
		return -EINVAL;
	loop->pfds[i].events = (short)events;
	return 0;
}

int pc_io_del(struct pc_loop *loop, int fd)
{
	int32_t i = fd < 0 ? -1 : pc_find(loop, fd);

	if (i < 0)
		return -ENOENT;
	if (loop->in_pass) {
		pc_make_hole(loop, (uint32_t)i);
		return 0;
	}
	pc_swap_remove(loop, (uint32_t)i);
	pc_shrink(loop);
	return 0;
}

uint32_t pc_io_count(const struct pc_loop *loop)
{
	return loop->count - loop->holes;
}

/* ---- time and timers ---- */

#define PC_CONTAINER_OF(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/* Milliseconds from NOW_NS to END_NS for poll(), rounded up: waking a little late is fine,
 * waking before the deadline would only spin. */
static int pc_ms_until(uint64_t end_ns, uint64_t now_ns)
{
	uint64_t ms;

	if (end_ns <= now_ns)
		return 0;
	ms = (end_ns - now_ns + 999999) / 1000000;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* Saturates far beyond any uptime, so that now + delay never wraps. */
static uint64_t pc_ms_to_ns(uint64_t ms)
{
	const uint64_t max_ns = UINT64_MAX / 4;

	return ms > max_ns / 1000000 ? max_ns : ms * 1000000;
}

static struct pc_timer *pc_timer_of(struct pc_link *link)
{
	return PC_CONTAINER_OF(link, struct pc_timer, link);
}

static bool pc_list_empty(const struct pc_link *head)
{
	return head->next == head;
}

static void pc_link_after(struct pc_link *at, struct pc_link *link)
{
	link->prev = at;
	link->next = at->next;
	at->next->prev = link;
	at->next = link;
}

/* Lists are circular with the head in the loop, so a timer unlinks itself without knowing
 * which list (pending or due) holds it. next == NULL marks it inactive. */
static void pc_unlink(struct pc_link *link)
{
	link->prev->next = link->next;
	link->next->prev = link->prev;
	link->prev = link->next = NULL;
}

/* Sorted insert, searched from the latest deadline: a new timer usually expires after those
 * already running (equal timeouts started in turn), which makes this O(1) in the common case.
 * Ties go after their equals, so they fire in start order. */
static void pc_timer_insert(struct pc_loop *loop, struct pc_timer *timer)
{
	struct pc_link *at = loop->timers.prev;

	while (at != &loop->timers && pc_timer_of(at)->when_ns > timer->when_ns)
		at = at->prev;
	pc_link_after(at, &timer->link);
}

void pc_timer_init(struct pc_timer *timer, pc_timer_cb *cb, void *data)
{
	*timer = (struct pc_timer){.cb = cb, .data = data};
}

int pc_timer_start(struct pc_loop *loop, struct pc_timer *timer, uint64_t after_ms,
		   uint64_t repeat_ms)
{
	if (!timer->cb)
		return -EINVAL;
	pc_timer_stop(loop, timer);
	timer->when_ns = pc_now_ns() + pc_ms_to_ns(after_ms);
	timer->repeat_ns = pc_ms_to_ns(repeat_ms);
	pc_timer_insert(loop, timer);
	return 0;
}

void pc_timer_stop(struct pc_loop *loop, struct pc_timer *timer)
{
	if (timer->link.next)
		pc_unlink(&timer->link);
}

bool pc_timer_active(const struct pc_timer *timer)
{
	return timer->link.next != NULL;
}

/* TIMEOUT_MS (negative: none) shortened to the first deadline; sets *NOW_NS if it read the
 * clock. */
static int pc_timers_timeout(struct pc_loop *loop, int timeout_ms, uint64_t *now_ns)
{
	int first_ms;

	if (pc_list_empty(&loop->timers))
		return timeout_ms;
	*now_ns = pc_now_ns();
	first_ms = pc_ms_until(pc_timer_of(loop->timers.next)->when_ns, *now_ns);
	return (timeout_ms < 0 || first_ms < timeout_ms) ? first_ms : timeout_ms;
}

/* Next period of a repeating timer; one that fell behind skips what it missed. */
static void pc_timer_rearm(struct pc_loop *loop, struct pc_timer *timer, uint64_t now_ns)
{
	timer->when_ns += timer->repeat_ns;
	if (timer->when_ns <= now_ns)
		timer->when_ns = now_ns + timer->repeat_ns;
	pc_timer_insert(loop, timer);
}

/*
 * Call the expired timers. They move to the due list first, so that a timer (re)started by a
 * callback waits for a later pass even if its deadline has come (no endless pass), and a due
 * timer stopped by an earlier callback has simply left the list.
 */
static void pc_timers_run(struct pc_loop *loop)
{
	uint64_t now_ns;

	if (pc_list_empty(&loop->timers))
		return;
	now_ns = pc_now_ns();
	while (!pc_list_empty(&loop->timers) && pc_timer_of(loop->timers.next)->when_ns <= now_ns) {
		struct pc_link *link = loop->timers.next;

		pc_unlink(link);
		pc_link_after(loop->due.prev, link);
	}
	while (!pc_list_empty(&loop->due)) {
		struct pc_timer *timer = pc_timer_of(loop->due.next);

		pc_unlink(&timer->link);
		if (timer->repeat_ns)
			pc_timer_rearm(loop, timer, now_ns);
		timer->cb(loop, timer, timer->data);
	}
}

/* ---- signals ---- */

enum { PC_SIGNO_MAX = 64 }; /* the bits of sigwatched; SIGRTMAX on Linux */

static uint64_t pc_sigbit(int signo)
{
	return 1ull << (signo - 1);
}

/* Not SIGKILL or SIGSTOP (cannot be blocked), nor the signals between 31 and SIGRTMIN that
 * glibc keeps for its threads (pthread_sigmask silently leaves them unblocked). */
static bool pc_signo_valid(int signo)
{
	if (signo < 1 || signo > PC_SIGNO_MAX || signo >= _NSIG)
		return false;
	if (signo == SIGKILL || signo == SIGSTOP)
		return false;
	return signo < 32 || signo >= SIGRTMIN;
}

static void pc_sigset_of(sigset_t *set, uint64_t bits)
{
	sigemptyset(set);
	for (int signo = 1; signo <= PC_SIGNO_MAX; signo++)
		if (bits & pc_sigbit(signo))
			sigaddset(set, signo);
}

static struct pc_signal *pc_signal_find(struct pc_loop *loop, int signo)
{
	struct pc_signal *sig = loop->signals;

	while (sig && sig->signo != signo)
		sig = sig->next;
	return sig;
}

/* One signal per read: a callback may stop watchers, even close this fd (then sigfd moves on
 * and the loop ends). */
static void pc_on_signalfd(struct pc_loop *loop, int fd, int revents, void *data)
{
	struct signalfd_siginfo si;

	for (int n = 0; n < PC_SIGNALS_PER_PASS && fd == loop->sigfd; n++) {
		struct pc_signal *sig;

		if (read(fd, &si, sizeof(si)) != (ssize_t)sizeof(si))
			return;
		sig = pc_signal_find(loop, (int)si.ssi_signo);
		if (sig)
			sig->cb(loop, sig, sig->signo, sig->data);
	}
}

/* Point the signalfd at BITS: created and put in the table for the first signal, removed and
 * closed with the last. */
static int pc_sigfd_set(struct pc_loop *loop, uint64_t bits)
{
	sigset_t set;
	int fd, err;

	if (!bits) {
		if (loop->sigfd >= 0) {
			pc_io_del(loop, loop->sigfd);
			close(loop->sigfd);
			loop->sigfd = -1;
		}
		return 0;
	}
	pc_sigset_of(&set, bits);
	if (loop->sigfd >= 0)
		return signalfd(loop->sigfd, &set, 0) < 0 ? -errno : 0;
	fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = pc_io_add(loop, fd, POLLIN, pc_on_signalfd, NULL);
	if (err) {
		close(fd);
		return err;
	}
	loop->sigfd = fd;
	return 0;
}

/* Block SIGNO in this thread, remembering whether it was ours to block. */
static int pc_sig_block(struct pc_loop *loop, int signo)
{
	sigset_t one, old;
	int err;

	sigemptyset(&one);
	sigaddset(&one, signo);
	err = pthread_sigmask(SIG_BLOCK, &one, &old);
	if (err)
		return -err;
	if (!sigismember(&old, signo))
		loop->sigblocked |= pc_sigbit(signo);
	return 0;
}

/* Undo pc_sig_block(). A signal that came while watched was meant for the watcher: consume it
 * rather than let unblocking hand it to the default action (for most signals: terminate). */
static void pc_sig_unblock(struct pc_loop *loop, int signo)
{
	const struct timespec zero = {0, 0};
	sigset_t one;

	if (!(loop->sigblocked & pc_sigbit(signo)))
		return;
	sigemptyset(&one);
	sigaddset(&one, signo);
	while (sigtimedwait(&one, NULL, &zero) == signo)
		;
	pthread_sigmask(SIG_UNBLOCK, &one, NULL);
	loop->sigblocked &= ~pc_sigbit(signo);
}

void pc_signal_init(struct pc_signal *sig, int signo, pc_signal_cb *cb, void *data)
{
	*sig = (struct pc_signal){.signo = signo, .cb = cb, .data = data};
}

int pc_signal_start(struct pc_loop *loop, struct pc_signal *sig)
{
	uint64_t bit;
	int err;

	if (sig->loop)
		return -EBUSY;
	if (!sig->cb || !pc_signo_valid(sig->signo))
		return -EINVAL;
	bit = pc_sigbit(sig->signo);
	if (loop->sigwatched & bit)
		return -EEXIST;
	/* Blocked first: a signal arriving before the signalfd knows it then waits, pending. */
	err = pc_sig_block(loop, sig->signo);
	if (err)
		return err;
	err = pc_sigfd_set(loop, loop->sigwatched | bit);
	if (err)
		goto unblock;
	loop->sigwatched |= bit;
	sig->loop = loop;
	sig->next = loop->signals;
	loop->signals = sig;
	return 0;
unblock:
	pc_sig_unblock(loop, sig->signo);
	return err;
}

int pc_signal_stop(struct pc_loop *loop, struct pc_signal *sig)
{
	struct pc_signal **at = &loop->signals;

	if (!sig->loop)
		return 0;
	if (sig->loop != loop)
		return -EINVAL;
	while (*at != sig)
		at = &(*at)->next;
	*at = sig->next;
	sig->next = NULL;
	sig->loop = NULL;
	loop->sigwatched &= ~pc_sigbit(sig->signo);
	/* Cannot fail: a smaller mask on a signalfd we own, or its removal. */
	pc_sigfd_set(loop, loop->sigwatched);
	pc_sig_unblock(loop, sig->signo);
	return 0;
}

/* ---- the loop ---- */

int pc_loop_init(struct pc_loop *loop, const struct pc_alloc *alloc)
{
	if (alloc && !alloc->realloc_fn != !alloc->free_fn)
		return -EINVAL;
	memset(loop, 0, sizeof(*loop));
	loop->pfds = loop->inline_pfds;
	loop->slots = loop->inline_slots;
	loop->cap = PC_INLINE_FDS;
	loop->sigfd = -1;
	loop->loadfd = -1;
	loop->timers.prev = loop->timers.next = &loop->timers;
	loop->due.prev = loop->due.next = &loop->due;
	if (alloc)
		loop->alloc = *alloc;
	return 0;
}

int pc_loop_destroy(struct pc_loop *loop)
{
	if (loop->running)
		return -EBUSY;
	while (loop->signals)
		pc_signal_stop(loop, loop->signals);
	if (loop->loadfd >= 0)
		close(loop->loadfd);
	loop->loadfd = -1;
	while (loop->timers.next != &loop->timers)
		pc_timer_stop(loop, pc_timer_of(loop->timers.next));
	if (!pc_is_inline(loop)) {
		pc_free(loop, loop->pfds);
		pc_free(loop, loop->fdmap);
	}
	loop->pfds = loop->inline_pfds;
	loop->slots = loop->inline_slots;
	loop->count = 0;
	loop->cap = PC_INLINE_FDS;
	loop->fdmap = NULL;
	loop->fdmap_len = 0;
	return 0;
}

void pc_stop(struct pc_loop *loop)
{
	loop->stopped = true;
}

void pc_loop_stats(const struct pc_loop *loop, struct pc_stats *out)
{
	*out = loop->stats;
}

/* Index of the first entry from I with revents set; the caller knows one exists below N.
 * Most entries are idle, so they are skipped four at a time. */
static uint32_t pc_next_ready(const struct pollfd *pfds, uint32_t i, uint32_t n)
{
	while (i + 4 <= n &&
	       !(pfds[i].revents | pfds[i + 1].revents | pfds[i + 2].revents | pfds[i + 3].revents))
		i += 4;
	while (!pfds[i].revents)
		i++;
	return i;
}

/*
 * Call the callbacks of the READY entries poll() marked in [0, N). Nothing a callback does
 * changes revents there: entries it adds go beyond N, entries it removes become holes that keep
 * theirs. So READY stays exact and bounds the scan. The table may move (growth) under a
 * callback, hence pfds is re-read after each one.
 */
static void pc_dispatch_io(struct pc_loop *loop, int ready)
{
	uint32_t n = loop->count;

	loop->in_pass = true;
	loop->worked = true;
	for (uint32_t i = 0; ready > 0; i++, ready--) {
		struct pollfd *p;
		int revents;

		i = pc_next_ready(loop->pfds, i, n);
		p = &loop->pfds[i];
		/* A callback earlier in the pass may have changed what this fd watches. */
		revents = p->revents & (p->events | POLLERR | POLLHUP | POLLNVAL);
		if (p->fd >= 0 && revents)
			loop->slots[i].cb(loop, p->fd, revents, loop->slots[i].data);
	}
	loop->in_pass = false;
	if (loop->holes)
		pc_compact(loop);
}

static void pc_count_wait(struct pc_loop *loop)
{
	loop->stats.waits++;
	if (pc_is_inline(loop))
		loop->stats.waits_inline++;
	else
		loop->stats.waits_heap++;
}

/* One poll(); EINTR waits again for what is left of TIMEOUT_MS (measured from NOW_NS, which
 * is 0 when the caller did not read the clock). */
static int pc_wait(struct pc_loop *loop, int timeout_ms, uint64_t now_ns)
{
	uint64_t end_ns = 0;

	if (timeout_ms > 0)
		end_ns = (now_ns ? now_ns : pc_now_ns()) + (uint64_t)timeout_ms * 1000000;
	for (;;) {
		int ready;

		pc_count_wait(loop);
		ready = poll(loop->pfds, loop->count, timeout_ms);
		if (ready >= 0)
			return ready;
		if (errno != EINTR)
			return -errno;
		if (timeout_ms > 0)
			timeout_ms = pc_ms_until(end_ns, pc_now_ns());
	}
}

int pc_run_once(struct pc_loop *loop, int timeout_ms)
{
	uint64_t now_ns = 0;
	int ready;

	if (loop->running)
		return -EBUSY;
	if (timeout_ms < 0)
		timeout_ms = -1;
	timeout_ms = pc_timers_timeout(loop, timeout_ms, &now_ns);
	if (timeout_ms < 0 && !loop->count)
		return 0;
	loop->running = true;
	ready = 0;
	if (loop->spin_us && loop->worked && timeout_ms != 0)
		ready = pc_spin(loop);
	loop->worked = false;
	if (ready == 0)
		ready = pc_wait(loop, timeout_ms, now_ns);
	if (ready > 0)
		pc_dispatch_io(loop, ready);
	if (ready >= 0)
		pc_timers_run(loop);
	loop->running = false;
	return ready < 0 ? ready : 0;
}

int pc_run(struct pc_loop *loop)
{
	int err = 0;

	/* A stop asked for outside a run (say by a callback under pc_run_once()) is stale. */
	loop->stopped = false;
	while (!loop->stopped && !err) {
		if (!loop->count && pc_list_empty(&loop->timers))
			break;
		err = pc_run_once(loop, -1);
	}
	return err;
}

/*
 * pollcore behaviour, one behaviour per test. Every wait is bounded (WAIT_MS for things that
 * should be ready at once, a guard timer around pc_run()), so a broken loop fails the test
 * instead of hanging it.
 */
#include "check_main.h"
#include "pc.h"
#include "pc_int.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum {
	WAIT_MS = 2000,	 /* bound on a wait for something already ready */
	GUARD_MS = 5000, /* bound on a whole pc_run() */
	QUIET_MS = 50,	 /* a wait that must see nothing */
};

/* ---- helpers ---- */

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

static void make_pipe(int p[2])
{
	ck_assert_int_eq(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
}

static void make_socketpair(int s[2])
{
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, s), 0);
}

static void put_byte(int fd)
{
	ck_assert_int_eq(write(fd, "x", 1), 1);
}

static void close_pair(int p[2])
{
	close(p[0]);
	close(p[1]);
}

static void init_loop(struct pc_loop *loop, const struct pc_alloc *alloc)
{
	ck_assert_int_eq(pc_loop_init(loop, alloc), 0);
}

static struct pc_stats stats_of(const struct pc_loop *loop)
{
	struct pc_stats s;

	pc_loop_stats(loop, &s);
	return s;
}

static bool is_blocked(int signo)
{
	sigset_t cur;

	ck_assert_int_eq(pthread_sigmask(SIG_BLOCK, NULL, &cur), 0);
	return sigismember(&cur, signo);
}

/* What one fd callback saw. */
struct rec {
	int calls;
	int fd;
	int revents;
};

static void record_cb(struct pc_loop *loop, int fd, int revents, void *data)
{
	struct rec *r = data;

	r->calls++;
	r->fd = fd;
	r->revents = revents;
}

/* Fails the test if pc_run() is still running GUARD_MS after it started. */
static void guard_cb(struct pc_loop *loop, struct pc_timer *timer, void *data)
{
	ck_abort_msg("pc_run() did not return in time");
}

/* Counting allocator: counts calls and live blocks, fails on demand. */
struct counting {
	long allocs;
	long frees;
	long live;
	long fail_in; /* the fail_in-th allocation from now fails (1 = the next); 0 = none */
};

static void *counting_realloc(void *ctx, void *ptr, size_t size)
{
	struct counting *c = ctx;
	void *p;

	if (c->fail_in && --c->fail_in == 0)
		return NULL;
	p = realloc(ptr, size);
	if (!p)
		return NULL;
	c->allocs++;
	if (!ptr)
		c->live++;
	return p;
}

static void counting_free(void *ctx, void *ptr)
{
	struct counting *c = ctx;

	c->frees++;
	c->live--;
	free(ptr);
}

static struct pc_alloc counting_alloc(struct counting *c)
{
	return (struct pc_alloc){
	    .realloc_fn = counting_realloc, .free_fn = counting_free, .ctx = c};
}

/*
 * A party: N pipes whose read ends are watched by one loop (embedded here, as a daemon would
 * embed it), each callback counting its calls and then running the party's script.
 */
struct party;

struct member {
	struct party *party;
	int index;
	int calls;
	int revents;
};

struct party {
	struct pc_loop loop;
	int n;
	int (*fd)[2];
	struct member *m;
	int total; /* callbacks so far */
	void (*script)(struct party *p, struct member *m);
	int arg;
};

static void party_cb(struct pc_loop *loop, int fd, int revents, void *data)
{
	struct member *m = data;

	ck_assert_int_eq(fd, m->party->fd[m->index][0]);
	m->calls++;
	m->revents = revents;
	m->party->total++;
	if (m->party->script)
		m->party->script(m->party, m);
}

static void party_add(struct party *p, int i)
{
	ck_assert_int_eq(pc_io_add(&p->loop, p->fd[i][0], POLLIN, party_cb, &p->m[i]), 0);
}

/* N pipes, the first WATCHED of them watched, each made ready if READY. */
static void party_open(struct party *p, int n, int watched, bool ready, const struct pc_alloc *a)
{
	memset(p, 0, sizeof(*p));
	init_loop(&p->loop, a);
	p->n = n;
	p->fd = calloc((size_t)n, sizeof(*p->fd));
	p->m = calloc((size_t)n, sizeof(*p->m));
	ck_assert(p->fd && p->m);
	for (int i = 0; i < n; i++) {
		make_pipe(p->fd[i]);
		p->m[i] = (struct member){.party = p, .index = i};
		if (ready)
			put_byte(p->fd[i][1]);
		if (i < watched)
			party_add(p, i);
	}
}

static void party_close(struct party *p)
{
	ck_assert_int_eq(pc_loop_destroy(&p->loop), 0);
	for (int i = 0; i < p->n; i++)
		close_pair(p->fd[i]);
	free(p->fd);
	free(p->m);
}

static void party_reset_calls(struct party *p)
{
	p->total = 0;
	for (int i = 0; i < p->n; i++)
		p->m[i].calls = 0;
}

/* Every member in [0, n) was called exactly CALLS times, except ODD which was called ODD_CALLS
 * times (odd = -1: none). */
static void assert_calls(const struct party *p, int n, int calls, int odd, int odd_calls)
{
	for (int i = 0; i < n; i++)
		ck_assert_msg(p->m[i].calls == (i == odd ? odd_calls : calls),
			      "member %d called %d times", i, p->m[i].calls);
}

/* ---- readiness ---- */

/*
 * One fd, one event: a pipe or a socketpair, one end watched, one thing done to the pair, and
 * the revents its callback must then see (and nothing before that thing is done).
 */
enum pair_act {
	ACT_NONE,	   /* already ready */
	ACT_WRITE_PEER,	   /* a byte written into the other end */
	ACT_CLOSE_PEER,	   /* the other end closed */
	ACT_CLOSE_WATCHED, /* the watched fd closed behind the loop's back */
};

static const struct {
	const char *name;
	bool socket; /* a socketpair, else a pipe (p[0] reads, p[1] writes) */
	int watched; /* the end watched */
	short events;
	enum pair_act act;
	int revents;
	bool at_least; /* revents holds these bits, maybe more (a socket's hang-up) */
} revents_cases[] = {
    {"pipe read end is readable after write", false, 0, POLLIN, ACT_WRITE_PEER, POLLIN, false},
    {"pipe write end is writable", false, 1, POLLOUT, ACT_NONE, POLLOUT, false},
    {"socketpair is readable after send", true, 0, POLLIN, ACT_WRITE_PEER, POLLIN, false},
    {"socketpair is writable", true, 0, POLLOUT, ACT_NONE, POLLOUT, false},
    {"pipe peer close reports hup", false, 0, POLLIN, ACT_CLOSE_PEER, POLLHUP, false},
    {"socketpair peer close reports hup", true, 0, POLLIN, ACT_CLOSE_PEER, POLLHUP, true},
    /* a pipe with no reader reports POLLERR to its writer, asked for or not */
    {"pollerr reaches a callback that did not ask for it", false, 1, 0, ACT_CLOSE_PEER, POLLERR,
     false},
    {"fd closed behind the loop reports nval", false, 0, POLLIN, ACT_CLOSE_WATCHED, POLLNVAL,
     false},
};

static void pair_act(int fd[2], int watched, enum pair_act act)
{
	switch (act) {
	case ACT_NONE:
		break;
	case ACT_WRITE_PEER:
		put_byte(fd[!watched]);
		break;
	case ACT_CLOSE_PEER:
		close(fd[!watched]);
		fd[!watched] = -1;
		break;
	case ACT_CLOSE_WATCHED:
		close(fd[watched]);
		fd[watched] = -1;
		break;
	}
}

START_TEST(test_fd_event_reaches_its_callback_with_its_revents)
{
	const char *name = revents_cases[_i].name;
	int watched = revents_cases[_i].watched, want = revents_cases[_i].revents;
	struct pc_loop loop;
	struct rec r = {0};
	int fd[2], wfd;

	init_loop(&loop, NULL);
	if (revents_cases[_i].socket)
		make_socketpair(fd);
	else
		make_pipe(fd);
	wfd = fd[watched];
	ck_assert_int_eq(pc_io_add(&loop, wfd, revents_cases[_i].events, record_cb, &r), 0);
	if (revents_cases[_i].act != ACT_NONE) {
		ck_assert_int_eq(pc_run_once(&loop, 0), 0);
		ck_assert_msg(r.calls == 0, "%s: called before the event", name);
	}
	pair_act(fd, watched, revents_cases[_i].act);
	ck_assert_int_eq(pc_run_once(&loop, WAIT_MS), 0);
	ck_assert_msg(r.calls == 1, "%s: %d calls", name, r.calls);
	ck_assert_msg(r.fd == wfd, "%s: called for fd %d, not %d", name, r.fd, wfd);
	ck_assert_msg(revents_cases[_i].at_least ? (r.revents & want) == want : r.revents == want,
		      "%s: revents %#x, want %s%#x", name, r.revents,
		      revents_cases[_i].at_least ? "at least " : "", want);
	/* even a closed fd's watcher comes off the table by its number */
	ck_assert_int_eq(pc_io_del(&loop, wfd), 0);
	pc_loop_destroy(&loop);
	for (int i = 0; i < 2; i++)
		if (fd[i] >= 0)
			close(fd[i]);
}
END_TEST

START_TEST(test_timeout_with_nothing_ready_returns_after_timeout_without_callbacks)
{
	struct pc_loop loop;
	struct rec r = {0};
	struct timespec t0;
	int p[2];

	init_loop(&loop, NULL);
	make_pipe(p);
	ck_assert_int_eq(pc_io_add(&loop, p[0], POLLIN, record_cb, &r), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(pc_run_once(&loop, 100), 0);
	ck_assert_int_ge(ms_since(&t0), 99);
	ck_assert_int_eq(r.calls, 0);
	ck_assert_uint_eq(stats_of(&loop).waits, 1);
	pc_loop_destroy(&loop);
	close_pair(p);
}
END_TEST

START_TEST(test_unread_data_is_reported_again_on_the_next_pass)
{
	struct pc_loop loop;
	struct rec r = {0};
	int p[2];

	init_loop(&loop, NULL);
	make_pipe(p);
	ck_assert_int_eq(pc_io_add(&loop, p[0], POLLIN, record_cb, &r), 0);
	put_byte(p[1]);
	ck_assert_int_eq(pc_run_once(&loop, WAIT_MS), 0);
	ck_assert_int_eq(pc_run_once(&loop, WAIT_MS), 0);
	ck_assert_int_eq(r.calls, 2);
	pc_loop_destroy(&loop);
	close_pair(p);
}
END_TEST

START_TEST(test_modify_changes_the_events_reported)
{
	struct pc_loop loop;
	struct rec r = {0};
	int s[2];

	init_loop(&loop, NULL);
	make_socketpair(s);
	ck_assert_int_eq(pc_io_add(&loop, s[0], POLLIN, record_cb, &r), 0);
	ck_assert_int_eq(pc_run_once(&loop, QUIET_MS), 0);
	ck_assert_int_eq(r.calls, 0);
	ck_assert_int_eq(pc_io_mod(&loop, s[0], POLLOUT), 0);
	ck_assert_int_eq(pc_run_once(&loop, WAIT_MS), 0);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.revents, POLLOUT);
	ck_assert_int_eq(pc_io_mod(&loop, s[0], 0), 0);
	ck_assert_int_eq(pc_run_once(&loop, QUIET_MS), 0);
	ck_assert_int_eq(r.calls, 1);
	pc_loop_destroy(&loop);
	close_pair(s);
}
END_TEST

START_TEST(test_removed_fd_is_not_reported)
{
	struct pc_loop loop;
	struct rec r = {0};
	int p[2];

	init_loop(&loop, NULL);
	make_pipe(p);
	ck_assert_int_eq(pc_io_add(&loop, p[0], POLLIN, record_cb, &r), 0);
	put_byte(p[1]);
	ck_assert_int_eq(pc_io_del(&loop, p[0]), 0);
	ck_assert_uint_eq(pc_io_count(&loop), 0);
	ck_assert_int_eq(pc_run_once(&loop, QUIET_MS), 0);
	ck_assert_int_eq(r.calls, 0);
	pc_loop_destroy(&loop);
	close_pair(p);
}
END_TEST

START_TEST(test_one_pass_is_one_poll)
{
	struct party p;

	party_open(&p, 10, 10, false, NULL);
	put_byte(p.fd[2][1]);
	put_byte(p.fd[7][1]);
	ck_assert_int_eq(pc_run_once(&p.loop, WAIT_MS), 0);
	ck_assert_uint_eq(stats_of(&p.loop).waits, 1);
	ck_assert_int_eq(p.total, 2);
	party_close(&p);
}
END_TEST

/* ---- argument errors ---- */

static void ignore_cb(struct pc_loop *loop, int fd, int revents, void *data)
{
}

static void ignore_signal_cb(struct pc_loop *loop, struct pc_signal *sig, int signo, void *data)
{
}

static int add_negative_fd(struct pc_loop *loop, int fd)
{
	return pc_io_add(loop, -1, POLLIN, ignore_cb, NULL);
}

static int add_without_callback(struct pc_loop *loop, int fd)
{
	return pc_io_add(loop, fd, POLLIN, NULL, NULL);
}

static int add_events_beyond_short(struct pc_loop *loop, int fd)
{
	return pc_io_add(loop, fd, 0x10000, ignore_cb, NULL);
}

static int add_twice(struct pc_loop *loop, int fd)
{
	pc_io_add(loop, fd, POLLIN, ignore_cb, NULL);
	return pc_io_add(loop, fd, POLLOUT, ignore_cb, NULL);
}

static int mod_unwatched(struct pc_loop *loop, int fd)
{
	return pc_io_mod(loop, fd, POLLIN);
}

static int del_unwatched(struct pc_loop *loop, int fd)
{
	return pc_io_del(loop, fd);
}

static int del_negative(struct pc_loop *loop, int fd)
{
	return pc_io_del(loop, -1);
}

static int init_with_one_hook(struct pc_loop *loop, int fd)
{
	struct pc_alloc half = {.realloc_fn = counting_realloc};
	struct pc_loop other;

	return pc_loop_init(&other, &half);
}

static int watch_sigkill(struct pc_loop *loop, int fd)
{
	struct pc_signal sig;

	pc_signal_init(&sig, SIGKILL, ignore_signal_cb, NULL);
	return pc_signal_start(loop, &sig);
}

static int watch_glibc_internal_signal(struct pc_loop *loop, int fd)
{
	struct pc_signal sig;

	pc_signal_init(&sig, 32, ignore_signal_cb, NULL);
	return pc_signal_start(loop, &sig);
}

static int watch_signal_twice(struct pc_loop *loop, int fd)
{
	static struct pc_signal a, b;

	pc_signal_init(&a, SIGUSR1, ignore_signal_cb, NULL);
	pc_signal_init(&b, SIGUSR1, ignore_signal_cb, NULL);
	ck_assert_int_eq(pc_signal_start(loop, &a), 0);
	return pc_signal_start(loop, &b);
}

static int start_timer_without_callback(struct pc_loop *loop, int fd)
{
	struct pc_timer t;

	pc_timer_init(&t, NULL, NULL);
	return pc_timer_start(loop, &t, 1, 0);
}

static int spin_too_long(struct pc_loop *loop, int fd)
{
	return pc_loop_set_spin(loop, PC_MAX_SPIN_US + 1, 0);
}

static int spin_unknown_flag(struct pc_loop *loop, int fd)
{
	return pc_loop_set_spin(loop, 10, PC_SPIN_ALWAYS << 1);
}

static const struct {
	const char *name;
	int (*call)(struct pc_loop *loop, int fd);
	int expect;
} error_cases[] = {
    {"add negative fd", add_negative_fd, -EBADF},
    {"add without callback", add_without_callback, -EINVAL},
    {"add events beyond short", add_events_beyond_short, -EINVAL},
    {"add a watched fd", add_twice, -EEXIST},
    {"mod an unwatched fd", mod_unwatched, -ENOENT},
    {"del an unwatched fd", del_unwatched, -ENOENT},
    {"del fd -1", del_negative, -ENOENT},
    {"init with one allocator hook", init_with_one_hook, -EINVAL},
    {"watch SIGKILL", watch_sigkill, -EINVAL},
    {"watch glibc's signal 32", watch_glibc_internal_signal, -EINVAL},
    {"watch a watched signal", watch_signal_twice, -EEXIST},
    {"start a timer without callback", start_timer_without_callback, -EINVAL},
    {"spin past the maximum", spin_too_long, -EINVAL},
    {"spin with an unknown flag", spin_unknown_flag, -EINVAL},
};

START_TEST(test_invalid_calls_return_negative_errno)
{
	struct pc_loop loop;
	int p[2];

	init_loop(&loop, NULL);
	make_pipe(p);
	ck_assert_msg(error_cases[_i].call(&loop, p[0]) == error_cases[_i].expect, "%s",
		      error_cases[_i].name);
	pc_loop_destroy(&loop);
	close_pair(p);
}
END_TEST

/* ---- changing the watchers from inside a pass ---- */

static void remove_self(struct pc_loop *loop, int fd, int revents, void *data)
{
	struct rec *r = data;

	r->calls++;
	ck_assert_int_eq(pc_io_del(loop, fd), 0);
}

START_TEST(test_remove_self_in_callback_is_never_called_again)
{
	struct pc_loop loop;
	struct rec r = {0};
	int p[2];

	init_loop(&loop, NULL);
	make_pipe(p);
	ck_assert_int_eq(pc_io_add(&loop, p[0], POLLIN, remove_self, &r), 0);
	put_byte(p[1]); /* never read: it would be reported on every pass */
	ck_assert_int_eq(pc_run_once(&loop, WAIT_MS), 0);
	ck_assert_int_eq(pc_run_once(&loop, QUIET_MS), 0);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_uint_eq(pc_io_count(&loop), 0);
	pc_loop_destroy(&loop);
	close_pair(p);
}
END_TEST

/* Table sizes for the in-pass tests: all inline, and all on the heap. */
static const int pass_sizes[] = {4, 40};

static void remove_others_on_first_call(struct party *p, struct member *m)
{
	if (p->total != 1)
		return;
	for (int i = 0; i < p->n; i++)
		if (i != m->index)
			ck_assert_int_eq(pc_io_del(&p->loop, p->fd[i][0]), 0);
}

START_TEST(test_remove_later_in_pass_is_not_called)
{
	struct party p;
	int first = -1;

	party_open(&p, pass_sizes[_i], pass_sizes[_i], true, NULL);
	p.script = remove_others_on_first_call;
	ck_assert_int_eq(pc_run_once(&p.loop, WAIT_MS), 0);
	ck_assert_int_eq(p.total, 1);
	for (int i = 0; i < p.n; i++)
		if (p.m[i].calls)
			first = i;
	ck_assert_uint_eq(pc_io_count(&p.loop), 1);
	ck_assert_int_eq(pc_run_once(&p.loop, WAIT_MS), 0);
	assert_calls(&p, p.n, 0, first, 2);
	party_close(&p);
}
END_TEST

static void remove_others_on_last_call(struct party *p, struct member *m)
{
	if (p->total != p->n)
		return;
	for (int i = 0; i < p->n; i++)
		if (i != m->index)
			ck_assert_int_eq(pc_io_del(&p->loop, p->fd[i][0]), 0);
}

START_TEST(test_remove_earlier_in_pass_is_not_called_again)
{
	struct party p;
	int last = -1;

	party_open(&p, pass_sizes[_i], pass_sizes[_i], true, NULL);
	p.script = remove_others_on_last_call;
	ck_assert_int_eq(pc_run_once(&p.loop, WAIT_MS), 0);
	ck_assert_int_eq(p.total, p.n);
	ck_assert_uint_eq(pc_io_count(&p.loop), 1);
	p.script = NULL;
	ck_assert_int_eq(pc_run_once(&p.loop, WAIT_MS), 0);
	ck_assert_int_eq(p.total, p.n + 1);
	for (int i = 0; i < p.n; i++)
		if (p.m[i].calls == 2)
			last = i;
	ck_assert_int_ge(last, 0);
	assert_calls(&p, p.n, 1, last, 2);
	ck_assert_uint_eq(pc_io_count(&p.loop), 1);
	party_close(&p);
}
END_TEST

/* The first callback watches the party's unwatched pipes (all ready). */
static void add_rest_on_first_call(struct party *p, struct member *m)
{
	if (p->total != 1)
		return;
	for (int i = p->arg; i < p->n; i++)
		party_add(p, i);
}

START_TEST(test_add_during_dispatch_is_polled_from_the_next_pass)
{
	struct party p;

	party_open(&p, 4, 2, true, NULL);
	p.arg = 2;
	p.script = add_rest_on_first_call;
	ck_assert_int_eq(pc_run_once(&p.loop, WAIT_MS), 0);
	ck_assert_uint_eq(pc_io_count(&p.loop), 4);
	assert_calls(&p, 2, 1, -1, 0);
	ck_assert_int_eq(p.m[2].calls + p.m[3].calls, 0);
	p.script = NULL;
	party_reset_calls(&p);
	ck_assert_int_eq(pc_run_once(&p.loop, WAIT_MS), 0);
	assert_calls(&p, 4, 1, -1, 0);
	party_close(&p);
}
END_TEST

START_TEST(test_add_during_dispatch_that_moves_table_to_heap_calls_each_ready_fd_once)
{
	struct party p;
	struct pc_stats s;

	party_open(&p, 60, 20, true, NULL);
	p.arg = 20;
	p.script = add_rest_on_first_call;
	ck_assert_int_eq(pc_run_once(&p.loop, WAIT_MS), 0);
	assert_calls(&p, 20, 1, -1, 0);
	for (int i = 20; i < 60; i++)
		ck_assert_int_eq(p.m[i].calls, 0);
	p.script = NULL;
	party_reset_calls(&p);
	ck_assert_int_eq(pc_run_once(&p.loop, WAIT_MS), 0);
	assert_calls(&p, 60, 1, -1, 0);
	s = stats_of(&p.loop);
	ck_assert_uint_eq(s.waits_inline, 1);
	ck_assert_uint_eq(s.waits_heap, 1);
	party_close(&p);
}
END_TEST

/* The first callback replaces the watcher of another member by a record_cb watcher on the same
 * fd, as a server does when a client fd is closed and accept() hands the number out again. */
static struct rec replaced;

static void replace_other_on_first_call(struct party *p, struct member *m)
{
	int victim = m->index == 0 ? 1 : 0;

	if (p->total != 1)
		return;
	p->arg = victim;
	ck_assert_int_eq(pc_io_del(&p->loop, p->fd[victim][0]), 0);
	ck_assert_int_eq(pc_io_add(&p->loop, p->fd[victim][0], POLLIN, record_cb, &replaced), 0);
}

START_TEST(test_fd_removed_and_added_again_in_a_pass_keeps_only_the_new_watcher)
{
	struct party p;

	memset(&replaced, 0, sizeof(replaced));
	party_open(&p, pass_sizes[_i], pass_sizes[_i], true, NULL);
	p.script = replace_other_on_first_call;
	ck_assert_int_eq(pc_run_once(&p.loop, WAIT_MS), 0);
	ck_assert_int_eq(p.m[p.arg].calls, 0);
	ck_assert_int_eq(replaced.calls, 0);
	p.script = NULL;
	ck_assert_int_eq(pc_run_once(&p.loop, WAIT_MS), 0);
	ck_assert_int_eq(p.m[p.arg].calls, 0);
	ck_assert_int_eq(replaced.calls, 1);
	ck_assert_int_eq(replaced.fd, p.fd[p.arg][0]);
	ck_assert_uint_eq(pc_io_count(&p.loop), (unsigned)p.n);
	party_close(&p);
}
END_TEST

static void mute_others_on_first_call(struct party *p, struct member *m)
{
	if (p->total != 1)
		return;
	for (int i = 0; i < p->n; i++)
		if (i != m->index)
			ck_assert_int_eq(pc_io_mod(&p->loop, p->fd[i][0], POLLOUT), 0);
}

START_TEST(test_modify_later_in_pass_applies_to_that_pass)
{
	struct party p;

	party_open(&p, pass_sizes[_i], pass_sizes[_i], true, NULL);
	p.script = mute_others_on_first_call;
	ck_assert_int_eq(pc_run_once(&p.loop, WAIT_MS), 0);
	ck_assert_int_eq(p.total, 1);
	party_close(&p);
}
END_TEST

static void stop_at_five(struct pc_loop *loop, struct pc_timer *timer, void *data)
{
	int *calls = data;

	if (++*calls == 5)
		pc_stop(loop);
}

static void stop_on_first_call(struct party *p, struct member *m)
{
	if (p->total == 1)
		pc_stop(&p->loop);
}

START_TEST(test_stop_during_dispatch_ends_run_after_the_pass)
{
	struct party p;
	struct pc_timer guard;

	party_open(&p, 3, 3, true, NULL);
	p.script = stop_on_first_call;
	pc_timer_init(&guard, guard_cb, NULL);
	ck_assert_int_eq(pc_timer_start(&p.loop, &guard, GUARD_MS, 0), 0);
	ck_assert_int_eq(pc_run(&p.loop), 0);
	ck_assert_uint_eq(stats_of(&p.loop).waits, 1);
	assert_calls(&p, 3, 1, -1, 0);
	party_close(&p);
}
END_TEST

START_TEST(test_stop_before_run_does_not_end_the_next_run)
{
	struct pc_loop loop;
	struct pc_timer t;
	int calls = 0;

	init_loop(&loop, NULL);
	pc_timer_init(&t, stop_at_five, &calls);
	ck_assert_int_eq(pc_timer_start(&loop, &t, 0, 1), 0);
	pc_stop(&loop);
	ck_assert_int_eq(pc_run(&loop), 0);
	ck_assert_int_eq(calls, 5);
	pc_loop_destroy(&loop);
}
END_TEST

START_TEST(test_run_returns_when_nothing_is_watched)
{
	struct pc_loop loop;

	init_loop(&loop, NULL);
	alarm(GUARD_MS / 1000); /* a hang ends the process: the test fails */
	ck_assert_int_eq(pc_run(&loop), 0);
	alarm(0);
	ck_assert_uint_eq(stats_of(&loop).waits, 0);
	pc_loop_destroy(&loop);
}
END_TEST

static void run_once_inside(struct pc_loop *loop, int fd, int revents, void *data)
{
	int *result = data;

	*result = pc_run_once(loop, 0);
	ck_assert_int_eq(pc_io_del(loop, fd), 0);
}

START_TEST(test_run_once_from_a_callback_is_ebusy)
{
	struct pc_loop loop;
	int result = 0, p[2];

	init_loop(&loop, NULL);
	make_pipe(p);
	put_byte(p[1]);
	ck_assert_int_eq(pc_io_add(&loop, p[0], POLLIN, run_once_inside, &result), 0);
	ck_assert_int_eq(pc_run_once(&loop, WAIT_MS), 0);
	ck_assert_int_eq(result, -EBUSY);
	pc_loop_destroy(&loop);
	close_pair(p);
}
END_TEST

/* ---- many watchers ---- */

static const int scale_sizes[] = {1, 31, 32, 33, 100, 1000};

/* Every third pipe ready: each ready one is called once per pass, the others never. */
static void assert_every_third_once(struct party *p, int passes)
{
	for (int i = 0; i < p->n; i++)
		ck_assert_msg(p->m[i].calls == (i % 3 == 0 ? passes : 0),
			      "member %d called %d times", i, p->m[i].calls);
}

START_TEST(test_every_ready_fd_is_dispatched_exactly_once_per_pass)
{
	int n = scale_sizes[_i];
	struct party p;
	struct pc_stats s;

	party_open(&p, n, n, false, NULL);
	for (int i = 0; i < n; i += 3)
		put_byte(p.fd[i][1]);
	ck_assert_int_eq(pc_run_once(&p.loop, WAIT_MS), 0);
	assert_every_third_once(&p, 1);
	ck_assert_int_eq(pc_run_once(&p.loop, WAIT_MS), 0);
	assert_every_third_once(&p, 2);
	s = stats_of(&p.loop);
	ck_assert_uint_eq(s.waits, 2);
	ck_assert_uint_eq(n <= PC_INLINE_FDS ? s.waits_inline : s.waits_heap, 2);
	ck_assert_uint_eq(s.largest_table, (unsigned)n);
	party_close(&p);
}
END_TEST

/* The K-th member to remove: 7919 is prime to 1000, so K = 0..999 visit every member once, in
 * an order that makes swap-removal move entries all over the table. */
static int scrambled(int k)
{
	return (int)(((unsigned)k * 7919u) % 1000u);
}

/* One pass with every pipe ready: exactly the members still watched are called, once. */
static void assert_pass_calls_exactly(struct party *p, const bool *watched)
{
	party_reset_calls(p);
	ck_assert_int_eq(pc_run_once(&p->loop, WAIT_MS), 0);
	for (int i = 0; i < p->n; i++)
		ck_assert_msg(p->m[i].calls == (watched[i] ? 1 : 0), "member %d called %d times", i,
			      p->m[i].calls);
}

START_TEST(test_table_moves_to_heap_past_32_and_back_inline_after_shrinking_to_5)
{
	static const int steps[] = {1, 31, 32, 33, 100, 1000};
	struct counting c = {0};
	struct pc_alloc a = counting_alloc(&c);
	struct party p;
	struct pc_stats before, after;
	bool is_watched[1000] = {false};
	int watched = 0;

	party_open(&p, 1000, 0, true, &a);
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		for (; watched < steps[k]; watched++) {
			party_add(&p, watched);
			is_watched[watched] = true;
		}
		party_reset_calls(&p);
		before = stats_of(&p.loop);
		ck_assert_int_eq(pc_run_once(&p.loop, WAIT_MS), 0);
		after = stats_of(&p.loop);
		ck_assert_int_eq(p.total, watched);
		assert_calls(&p, watched, 1, -1, 0);
		if (watched <= PC_INLINE_FDS)
			ck_assert_uint_eq(after.waits_inline, before.waits_inline + 1);
		else
			ck_assert_uint_eq(after.waits_heap, before.waits_heap + 1);
		ck_assert_int_eq(c.live, watched <= PC_INLINE_FDS ? 0 : 2);
	}
	for (int k = 0; k < 995; k++) {
		int i = scrambled(k);

		ck_assert_int_eq(pc_io_del(&p.loop, p.fd[i][0]), 0);
		is_watched[i] = false;
		if (k % 97 == 0)
			assert_pass_calls_exactly(&p, is_watched);
	}
	ck_assert_uint_eq(pc_io_count(&p.loop), 5);
	ck_assert_int_eq(c.live, 0);
	before = stats_of(&p.loop);
	assert_pass_calls_exactly(&p, is_watched);
	after = stats_of(&p.loop);
	ck_assert_uint_eq(after.waits_inline, before.waits_inline + 1);
	ck_assert_uint_eq(after.largest_table, 1000);
	party_close(&p);
	ck_assert_int_eq(c.live, 0);
}
END_TEST

START_TEST(test_table_is_inline_at_32_heap_at_33_and_inline_again_at_32)
{
	struct party p;
	struct pc_stats s;

	party_open(&p, 33, 32, true, NULL);
	ck_assert_int_eq(pc_run_once(&p.loop, WAIT_MS), 0);
	party_add(&p, 32);
	ck_assert_int_eq(pc_run_once(&p.loop, WAIT_MS), 0);
	ck_assert_int_eq(pc_io_del(&p.loop, p.fd[5][0]), 0);
	ck_assert_int_eq(pc_run_once(&p.loop, WAIT_MS), 0);
	s = stats_of(&p.loop);
	ck_assert_uint_eq(s.waits_inline, 2);
	ck_assert_uint_eq(s.waits_heap, 1);
	for (int i = 0; i < 32; i++)
		ck_assert_int_eq(p.m[i].calls, i == 5 ? 2 : 3);
	ck_assert_int_eq(p.m[32].calls, 2);
	party_close(&p);
}
END_TEST

/* ---- allocation ---- */

static void count_signal(struct pc_loop *loop, struct pc_signal *sig, int signo, void *data)
{
	(*(int *)data)++;
}

static void count_timer(struct pc_loop *loop, struct pc_timer *timer, void *data)
{
	(*(int *)data)++;
}

START_TEST(test_no_heap_allocation_at_32_fds_with_a_timer_and_a_signal)
{
	struct counting c = {0};
	struct pc_alloc a = counting_alloc(&c);
	struct party p;
	struct pc_timer t;
	struct pc_signal sig;
	int ticks = 0, signals = 0;

	/* 31 pipes + the signalfd = 32 entries, the whole inline table */
	party_open(&p, 31, 31, false, &a);
	pc_timer_init(&t, count_timer, &ticks);
	ck_assert_int_eq(pc_timer_start(&p.loop, &t, 0, 1), 0);
	pc_signal_init(&sig, SIGUSR1, count_signal, &signals);
	ck_assert_int_eq(pc_signal_start(&p.loop, &sig), 0);
	ck_assert_uint_eq(pc_io_count(&p.loop), 32);
	for (int k = 0; k < 100; k++) {
		put_byte(p.fd[k % 31][1]);
		if (k % 10 == 0)
			kill(getpid(), SIGUSR1);
		ck_assert_int_eq(pc_run_once(&p.loop, WAIT_MS), 0);
		ck_assert_int_eq(read(p.fd[k % 31][0], &(char){0}, 1), 1);
	}
	ck_assert_int_eq(p.total, 100);
	ck_assert_int_gt(signals, 0);
	ck_assert_int_gt(ticks, 0);
	ck_assert_int_eq(c.allocs, 0);
	ck_assert_uint_eq(stats_of(&p.loop).heap_allocs, 0);
	ck_assert_uint_eq(stats_of(&p.loop).waits_heap, 0);
	party_close(&p);
}
END_TEST

START_TEST(test_no_heap_allocation_per_wait_after_growth_to_1000)
{
	struct counting c = {0};
	struct pc_alloc a = counting_alloc(&c);
	struct party p;
	long grown;

	party_open(&p, 1000, 1000, false, &a);
	grown = c.allocs;
	ck_assert_int_gt(grown, 0);
	ck_assert_uint_eq(stats_of(&p.loop).heap_allocs, (uint64_t)grown);
	for (int k = 0; k < 100; k++) {
		int i = (k * 37) % 1000;

		put_byte(p.fd[i][1]);
		ck_assert_int_eq(pc_run_once(&p.loop, WAIT_MS), 0);
		ck_assert_int_eq(read(p.fd[i][0], &(char){0}, 1), 1);
	}
	ck_assert_int_eq(p.total, 100);
	ck_assert_int_eq(c.allocs, grown);
	ck_assert_uint_eq(stats_of(&p.loop).heap_allocs, (uint64_t)grown);
	ck_assert_uint_eq(stats_of(&p.loop).waits_heap, 100);
	party_close(&p);
	ck_assert_int_eq(c.live, 0);
}
END_TEST

/* Adding fd number FAIL_AT-th allocation fails: -ENOMEM, the loop as it was, nothing leaked.
 * Then the same add succeeds. */
static void assert_add_fails_cleanly(struct party *p, struct counting *c, int fd, int fail_at)
{
	long live = c->live;
	uint32_t count = pc_io_count(&p->loop);
	struct rec r = {0};

	c->fail_in = fail_at;
	ck_assert_int_eq(pc_io_add(&p->loop, fd, POLLIN, record_cb, &r), -ENOMEM);
	c->fail_in = 0;
	ck_assert_int_eq(c->live, live);
	ck_assert_uint_eq(pc_io_count(&p->loop), count);
	party_reset_calls(p);
	ck_assert_int_eq(pc_run_once(&p->loop, WAIT_MS), 0);
	assert_calls(p, (int)count, 1, -1, 0);
	ck_assert_int_eq(r.calls, 0);
	ck_assert_int_eq(pc_io_add(&p->loop, fd, POLLIN, record_cb, &r), 0);
	ck_assert_int_eq(pc_io_del(&p->loop, fd), 0);
}

START_TEST(test_allocation_failure_moving_to_heap_is_enomem_and_loop_intact)
{
	struct counting c = {0};
	struct pc_alloc a = counting_alloc(&c);
	struct party p;

	party_open(&p, 33, 32, true, &a);
	assert_add_fails_cleanly(&p, &c, p.fd[32][0], 1); /* the table */
	assert_add_fails_cleanly(&p, &c, p.fd[32][0], 2); /* the fd map, after the table */
	ck_assert_uint_eq(stats_of(&p.loop).waits_heap, 0);
	party_close(&p);
	ck_assert_int_eq(c.live, 0);
}
END_TEST

START_TEST(test_allocation_failure_doubling_the_heap_table_is_enomem_and_loop_intact)
{
	struct counting c = {0};
	struct pc_alloc a = counting_alloc(&c);
	struct party p;

	party_open(&p, 65, 64, true, &a);
	ck_assert_int_eq(c.live, 2);
	assert_add_fails_cleanly(&p, &c, p.fd[64][0], 1);
	party_close(&p);
	ck_assert_int_eq(c.live, 0);
}
END_TEST

START_TEST(test_allocation_failure_growing_the_fd_map_is_enomem_and_loop_intact)
{
	struct counting c = {0};
	struct pc_alloc a = counting_alloc(&c);
	struct party p;
	int big;

	party_open(&p, 41, 40, true, &a);
	big = fcntl(p.fd[40][0], F_DUPFD_CLOEXEC, 4000); /* beyond the map, table not full */
	ck_assert_int_ge(big, 4000);
	assert_add_fails_cleanly(&p, &c, big, 1);
	close(big);
	party_close(&p);
	ck_assert_int_eq(c.live, 0);
}
END_TEST

START_TEST(test_largest_table_is_the_high_water_mark)
{
	struct party p;

	party_open(&p, 40, 40, false, NULL);
	for (int i = 0; i < 35; i++)
		ck_assert_int_eq(pc_io_del(&p.loop, p.fd[i][0]), 0);
	ck_assert_uint_eq(stats_of(&p.loop).largest_table, 40);
	ck_assert_uint_eq(pc_io_count(&p.loop), 5);
	party_close(&p);
}
END_TEST

/* ---- timers ---- */

struct timeline {
	int order[8];
	int fired;
};

struct tick {
	struct pc_timer timer;
	struct timeline *line;
	int id;
	int calls;
	struct pc_timer *victim; /* stopped by this timer's callback, if set */
};

static void tick_cb(struct pc_loop *loop, struct pc_timer *timer, void *data)
{
	struct tick *t = data;

	t->calls++;
	if (t->line && t->line->fired < 8)
		t->line->order[t->line->fired++] = t->id;
	if (t->victim)
		pc_timer_stop(loop, t->victim);
}

/* Runs passes until LINE has WANT timers fired, GUARD_MS at most. */
static void run_until_fired(struct pc_loop *loop, struct timeline *line, int want)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (line->fired < want && ms_since(&t0) < GUARD_MS)
		ck_assert_int_eq(pc_run_once(loop, WAIT_MS), 0);
	ck_assert_int_eq(line->fired, want);
}

START_TEST(test_timers_fire_in_deadline_order)
{
	static const int after_ms[] = {40, 10, 30, 20, 10};
	static const int expect[] = {1, 4, 3, 2, 0};
	struct pc_loop loop;
	struct timeline line = {0};
	struct tick ticks[5];

	init_loop(&loop, NULL);
	for (int i = 0; i < 5; i++) {
		ticks[i] = (struct tick){.line = &line, .id = i};
		pc_timer_init(&ticks[i].timer, tick_cb, &ticks[i]);
		ck_assert_int_eq(pc_timer_start(&loop, &ticks[i].timer, after_ms[i], 0), 0);
	}
	run_until_fired(&loop, &line, 5);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(line.order[i], expect[i]);
	pc_loop_destroy(&loop);
}
END_TEST

START_TEST(test_one_shot_timer_fires_once_and_becomes_inactive)
{
	struct pc_loop loop;
	struct timeline line = {0};
	struct tick t = {.line = &line};

	init_loop(&loop, NULL);
	pc_timer_init(&t.timer, tick_cb, &t);
	ck_assert(!pc_timer_active(&t.timer));
	ck_assert_int_eq(pc_timer_start(&loop, &t.timer, 5, 0), 0);
	ck_assert(pc_timer_active(&t.timer));
	run_until_fired(&loop, &line, 1);
	ck_assert(!pc_timer_active(&t.timer));
	ck_assert_int_eq(pc_run_once(&loop, QUIET_MS), 0);
	ck_assert_int_eq(t.calls, 1);
	pc_loop_destroy(&loop);
}
END_TEST

START_TEST(test_repeating_timer_repeats_every_period)
{
	struct pc_loop loop;
	struct pc_timer rep, guard;
	struct timespec t0;
	int calls = 0;

	init_loop(&loop, NULL);
	pc_timer_init(&rep, stop_at_five, &calls);
	pc_timer_init(&guard, guard_cb, NULL);
	ck_assert_int_eq(pc_timer_start(&loop, &guard, GUARD_MS, 0), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(pc_timer_start(&loop, &rep, 10, 10), 0);
	ck_assert_int_eq(pc_run(&loop), 0);
	ck_assert_int_eq(calls, 5);
	ck_assert_int_ge(ms_since(&t0), 50);
	ck_assert(pc_timer_active(&rep));
	pc_timer_stop(&loop, &rep);
	ck_assert(!pc_timer_active(&rep));
	pc_loop_destroy(&loop);
}
END_TEST

START_TEST(test_stopped_timer_never_fires)
{
	struct pc_loop loop;
	struct tick t = {0};

	init_loop(&loop, NULL);
	pc_timer_init(&t.timer, tick_cb, &t);
	ck_assert_int_eq(pc_timer_start(&loop, &t.timer, 10, 10), 0);
	pc_timer_stop(&loop, &t.timer);
	ck_assert_int_eq(pc_run_once(&loop, QUIET_MS), 0);
	ck_assert_int_eq(t.calls, 0);
	pc_loop_destroy(&loop);
}
END_TEST

START_TEST(test_timer_stopped_by_an_earlier_timer_of_the_same_pass_is_not_called)
{
	struct pc_loop loop;
	struct tick a = {.id = 0}, b = {.id = 1};

	init_loop(&loop, NULL);
	pc_timer_init(&a.timer, tick_cb, &a);
	pc_timer_init(&b.timer, tick_cb, &b);
	a.victim = &b.timer;
	ck_assert_int_eq(pc_timer_start(&loop, &a.timer, 0, 0), 0);
	ck_assert_int_eq(pc_timer_start(&loop, &b.timer, 0, 0), 0);
	usleep(2000); /* both due before the pass starts */
	ck_assert_int_eq(pc_run_once(&loop, WAIT_MS), 0);
	ck_assert_int_eq(a.calls, 1);
	ck_assert_int_eq(b.calls, 0);
	ck_assert(!pc_timer_active(&b.timer));
	pc_loop_destroy(&loop);
}
END_TEST

static void restart_now(struct pc_loop *loop, struct pc_timer *timer, void *data)
{
	(*(int *)data)++;
	ck_assert_int_eq(pc_timer_start(loop, timer, 0, 0), 0);
}

START_TEST(test_timer_restarted_from_its_callback_fires_in_the_next_pass)
{
	struct pc_loop loop;
	struct pc_timer t;
	int calls = 0;

	init_loop(&loop, NULL);
	pc_timer_init(&t, restart_now, &calls);
	ck_assert_int_eq(pc_timer_start(&loop, &t, 0, 0), 0);
	ck_assert_int_eq(pc_run_once(&loop, WAIT_MS), 0);
	ck_assert_int_eq(calls, 1);
	ck_assert_int_eq(pc_run_once(&loop, WAIT_MS), 0);
	ck_assert_int_eq(calls, 2);
	pc_loop_destroy(&loop);
}
END_TEST

START_TEST(test_timer_shortens_a_longer_wait)
{
	struct pc_loop loop;
	struct tick t = {0};
	struct timespec t0;

	init_loop(&loop, NULL);
	pc_timer_init(&t.timer, tick_cb, &t);
	ck_assert_int_eq(pc_timer_start(&loop, &t.timer, 20, 0), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!t.calls && ms_since(&t0) < GUARD_MS)
		ck_assert_int_eq(pc_run_once(&loop, 10 * GUARD_MS), 0);
	ck_assert_int_eq(t.calls, 1);
	ck_assert_int_ge(ms_since(&t0), 19);
	ck_assert_int_lt(ms_since(&t0), GUARD_MS);
	pc_loop_destroy(&loop);
}
END_TEST

/* ---- signals ---- */

static const int signals_watched[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGUSR1};

struct sigrec {
	int calls;
	int signo;
};

static void sigrec_cb(struct pc_loop *loop, struct pc_signal *sig, int signo, void *data)
{
	struct sigrec *r = data;

	r->calls++;
	r->signo = signo;
}

START_TEST(test_signal_sent_with_kill_arrives_as_a_callback)
{
	int signo = signals_watched[_i];
	struct pc_loop loop;
	struct pc_signal sig;
	struct sigrec r = {0};

	init_loop(&loop, NULL);
	pc_signal_init(&sig, signo, sigrec_cb, &r);
	ck_assert_int_eq(pc_signal_start(&loop, &sig), 0);
	ck_assert_int_eq(kill(getpid(), signo), 0);
	ck_assert_int_eq(pc_run_once(&loop, WAIT_MS), 0);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.signo, signo);
	pc_loop_destroy(&loop);
}
END_TEST

START_TEST(test_sigchld_of_an_exiting_child_arrives_as_a_callback)
{
	struct pc_loop loop;
	struct pc_signal sig;
	struct sigrec r = {0};
	struct timespec t0;
	pid_t pid;

	init_loop(&loop, NULL);
	pc_signal_init(&sig, SIGCHLD, sigrec_cb, &r);
	ck_assert_int_eq(pc_signal_start(&loop, &sig), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(7);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!r.calls && ms_since(&t0) < GUARD_MS)
		ck_assert_int_eq(pc_run_once(&loop, WAIT_MS), 0);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.signo, SIGCHLD);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
	pc_loop_destroy(&loop);
}
END_TEST

START_TEST(test_watched_signal_is_blocked_and_unblocked_when_the_watcher_stops)
{
	struct pc_loop loop;
	struct pc_signal sig;

	init_loop(&loop, NULL);
	ck_assert(!is_blocked(SIGTERM));
	pc_signal_init(&sig, SIGTERM, ignore_signal_cb, NULL);
	ck_assert_int_eq(pc_signal_start(&loop, &sig), 0);
	ck_assert(is_blocked(SIGTERM));
	ck_assert_int_eq(pc_signal_stop(&loop, &sig), 0);
	ck_assert(!is_blocked(SIGTERM));
	ck_assert_uint_eq(pc_io_count(&loop), 0);
	pc_loop_destroy(&loop);
}
END_TEST

START_TEST(test_loop_destroy_unblocks_watched_signals)
{
	struct pc_loop loop;
	struct pc_signal a, b;

	init_loop(&loop, NULL);
	pc_signal_init(&a, SIGINT, ignore_signal_cb, NULL);
	pc_signal_init(&b, SIGHUP, ignore_signal_cb, NULL);
	ck_assert_int_eq(pc_signal_start(&loop, &a), 0);
	ck_assert_int_eq(pc_signal_start(&loop, &b), 0);
	ck_assert(is_blocked(SIGINT) && is_blocked(SIGHUP));
	ck_assert_int_eq(pc_loop_destroy(&loop), 0);
	ck_assert(!is_blocked(SIGINT));
	ck_assert(!is_blocked(SIGHUP));
	ck_assert_uint_eq(pc_io_count(&loop), 0);
}
END_TEST

START_TEST(test_signal_blocked_before_watching_stays_blocked_after_stop)
{
	struct pc_loop loop;
	struct pc_signal sig;
	sigset_t one;

	sigemptyset(&one);
	sigaddset(&one, SIGHUP);
	ck_assert_int_eq(pthread_sigmask(SIG_BLOCK, &one, NULL), 0);
	init_loop(&loop, NULL);
	pc_signal_init(&sig, SIGHUP, ignore_signal_cb, NULL);
	ck_assert_int_eq(pc_signal_start(&loop, &sig), 0);
	ck_assert_int_eq(pc_signal_stop(&loop, &sig), 0);
	ck_assert(is_blocked(SIGHUP));
	pc_loop_destroy(&loop);
	ck_assert_int_eq(pthread_sigmask(SIG_UNBLOCK, &one, NULL), 0);
}
END_TEST

START_TEST(test_signal_pending_when_its_watcher_stops_is_consumed)
{
	struct pc_loop loop;
	struct pc_signal sig;
	sigset_t pending;

	init_loop(&loop, NULL);
	pc_signal_init(&sig, SIGTERM, ignore_signal_cb, NULL);
	ck_assert_int_eq(pc_signal_start(&loop, &sig), 0);
	ck_assert_int_eq(kill(getpid(), SIGTERM), 0);
	/* Unblocking a pending SIGTERM would kill this process. */
	ck_assert_int_eq(pc_signal_stop(&loop, &sig), 0);
	ck_assert_int_eq(sigpending(&pending), 0);
	ck_assert(!sigismember(&pending, SIGTERM));
	ck_assert(!is_blocked(SIGTERM));
	pc_loop_destroy(&loop);
}
END_TEST

static void stop_own_signal(struct pc_loop *loop, struct pc_signal *sig, int signo, void *data)
{
	(*(int *)data)++;
	ck_assert_int_eq(pc_signal_stop(loop, sig), 0);
}

START_TEST(test_signal_callback_may_stop_its_own_watcher)
{
	struct pc_loop loop;
	struct pc_signal sig;
	int calls = 0;

	init_loop(&loop, NULL);
	pc_signal_init(&sig, SIGUSR2, stop_own_signal, &calls);
	ck_assert_int_eq(pc_signal_start(&loop, &sig), 0);
	ck_assert_int_eq(kill(getpid(), SIGUSR2), 0);
	ck_assert_int_eq(pc_run_once(&loop, WAIT_MS), 0);
	ck_assert_int_eq(calls, 1);
	ck_assert_uint_eq(pc_io_count(&loop), 0);
	ck_assert(!is_blocked(SIGUSR2));
	pc_loop_destroy(&loop);
}
END_TEST

/* ---- EINTR ---- */

static void on_alarm(int signo)
{
}

START_TEST(test_eintr_restarts_the_wait_with_the_remaining_timeout)
{
	struct sigaction sa = {.sa_handler = on_alarm}; /* no SA_RESTART: poll() gets EINTR */
	struct itimerval at = {.it_value = {.tv_usec = 400000}};
	struct pc_loop loop;
	struct rec r = {0};
	struct timespec t0;
	long ms;
	int p[2];

	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGALRM, &sa, NULL), 0);
	init_loop(&loop, NULL);
	make_pipe(p);
	ck_assert_int_eq(pc_io_add(&loop, p[0], POLLIN, record_cb, &r), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(setitimer(ITIMER_REAL, &at, NULL), 0);
	ck_assert_int_eq(pc_run_once(&loop, 500), 0);
	ms = ms_since(&t0);
	ck_assert_uint_eq(stats_of(&loop).waits, 2); /* interrupted once, restarted once */
	ck_assert_int_ge(ms, 499);
	ck_assert_int_lt(ms, 750); /* a restart with the full 500 ms would end near 900 */
	ck_assert_int_eq(r.calls, 0);
	signal(SIGALRM, SIG_DFL);
	pc_loop_destroy(&loop);
	close_pair(p);
}
END_TEST

/* ---- spinning ---- */

static void read_byte_cb(struct pc_loop *loop, int fd, int revents, void *data)
{
	struct rec *r = data;
	char c;

	r->calls++;
	r->revents = revents;
	if (read(fd, &c, 1) != 1)
		r->fd = -1; /* reported readable with nothing to read: the test sees it */
}

/* A loop spinning SPIN_US with FLAGS, watching a pipe, after one pass that did fd work (the
 * work a spin follows). */
static void spin_open(struct pc_loop *loop, int p[2], struct rec *r, uint32_t spin_us,
		      unsigned flags)
{
	init_loop(loop, NULL);
	make_pipe(p);
	ck_assert_int_eq(pc_loop_set_spin(loop, spin_us, flags), 0);
	ck_assert_int_eq(pc_io_add(loop, p[0], POLLIN, read_byte_cb, r), 0);
	put_byte(p[1]);
	ck_assert_int_eq(pc_run_once(loop, WAIT_MS), 0);
	ck_assert_int_eq(r->calls, 1);
	ck_assert_uint_eq(stats_of(loop).waits, 1);
}

static void assert_spin_stats(const struct pc_loop *loop, uint64_t waits, uint64_t spins,
			      uint64_t hits)
{
	struct pc_stats s = stats_of(loop);

	ck_assert_uint_eq(s.waits, waits);
	ck_assert_uint_eq(s.spins, spins);
	ck_assert_uint_eq(s.spin_hits, hits);
}

struct late_write {
	pthread_t thread;
	int fd;
	long delay_ms;
};

static void *late_write_main(void *arg)
{
	struct late_write *w = arg;
	struct timespec ts = {w->delay_ms / 1000, (w->delay_ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
	return (void *)(intptr_t)write(w->fd, "x", 1);
}

static void late_write_start(struct late_write *w, int fd, long delay_ms)
{
	*w = (struct late_write){.fd = fd, .delay_ms = delay_ms};
	ck_assert_int_eq(pthread_create(&w->thread, NULL, late_write_main, w), 0);
}

static void late_write_join(struct late_write *w)
{
	void *wrote;

	ck_assert_int_eq(pthread_join(w->thread, &wrote), 0);
	ck_assert_int_eq((intptr_t)wrote, 1);
}

START_TEST(test_spin_catches_an_fd_that_becomes_ready_within_the_window)
{
	struct pc_loop loop;
	struct rec r = {0};
	struct late_write w;
	struct timespec t0;
	int p[2];

	spin_open(&loop, p, &r, PC_MAX_SPIN_US, PC_SPIN_ALWAYS);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	late_write_start(&w, p[1], 20);
	ck_assert_int_eq(pc_run_once(&loop, WAIT_MS), 0);
	late_write_join(&w);
	ck_assert_int_eq(r.calls, 2);
	ck_assert_int_eq(r.fd, 0);
	ck_assert_int_ge(ms_since(&t0), 19);
	assert_spin_stats(&loop, 1, 1, 1); /* the byte came while spinning: no sleeping wait */
	ck_assert_uint_ge(stats_of(&loop).spin_polls, 2);
	ck_assert_uint_eq(stats_of(&loop).spin_skips, 0);
	pc_loop_destroy(&loop);
	close_pair(p);
}
END_TEST

START_TEST(test_spin_that_sees_nothing_ends_in_a_sleeping_wait)
{
	struct pc_loop loop;
	struct rec r = {0};
	struct timespec t0;
	int p[2];

	spin_open(&loop, p, &r, 20000, PC_SPIN_ALWAYS);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(pc_run_once(&loop, QUIET_MS), 0);
	ck_assert_int_ge(ms_since(&t0), 20 + QUIET_MS - 1);
	ck_assert_int_eq(r.calls, 1);
	assert_spin_stats(&loop, 2, 1, 0);
	pc_loop_destroy(&loop);
	close_pair(p);
}
END_TEST

/* Spinning follows fd work only: not a fresh loop, not a zero-timeout pass, and not a pass
 * after one that found nothing. */
START_TEST(test_loop_spins_only_right_after_fd_work)
{
	struct pc_loop loop;
	struct rec r = {0};
	int p[2];

	init_loop(&loop, NULL);
	make_pipe(p);
	ck_assert_int_eq(pc_loop_set_spin(&loop, PC_MAX_SPIN_US, PC_SPIN_ALWAYS), 0);
	ck_assert_int_eq(pc_io_add(&loop, p[0], POLLIN, read_byte_cb, &r), 0);
	ck_assert_int_eq(pc_run_once(&loop, QUIET_MS), 0); /* fresh: nothing done yet */
	ck_assert_uint_eq(stats_of(&loop).spins, 0);
	put_byte(p[1]);
	ck_assert_int_eq(pc_run_once(&loop, WAIT_MS), 0);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(pc_run_once(&loop, 0), 0); /* zero timeout: no spin */
	ck_assert_uint_eq(stats_of(&loop).spins, 0);
	ck_assert_int_eq(pc_run_once(&loop, QUIET_MS), 0); /* the pass before found nothing */
	ck_assert_uint_eq(stats_of(&loop).spins, 0);
	ck_assert_uint_eq(stats_of(&loop).waits, 4);
	pc_loop_destroy(&loop);
	close_pair(p);
}
END_TEST

static atomic_bool busy_run;

static void *busy_main(void *arg)
{
	atomic_fetch_add((atomic_int *)arg, 1);
	while (atomic_load(&busy_run))
		;
	return NULL;
}

/* Runs BUSY threads that spin until busy_stop(); returns once all of them have started. */
static pthread_t *busy_start(long busy)
{
	pthread_t *t = calloc((size_t)busy, sizeof(*t));
	atomic_int started = 0;
	struct timespec t0;

	ck_assert_ptr_nonnull(t);
	atomic_store(&busy_run, true);
	for (long i = 0; i < busy; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, busy_main, &started), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (atomic_load(&started) < busy && ms_since(&t0) < WAIT_MS)
		sched_yield();
	ck_assert_int_eq(atomic_load(&started), busy);
	return t;
}

static void busy_stop(pthread_t *t, long busy)
{
	atomic_store(&busy_run, false);
	for (long i = 0; i < busy; i++)
		pthread_join(t[i], NULL);
	free(t);
}

/* A one-second spin after work, with BUSY threads hogging CPUs: it must be skipped. */
static void assert_spin_skipped_beside(long busy)
{
	pthread_t *t = busy_start(busy);
	struct pc_loop loop;
	struct rec r = {0};
	struct timespec t0;
	int p[2];

	spin_open(&loop, p, &r, PC_MAX_SPIN_US, 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(pc_run_once(&loop, QUIET_MS), 0);
	ck_assert_int_lt(ms_since(&t0), 500); /* no one-second spin */
	busy_stop(t, busy);
	ck_assert_uint_eq(stats_of(&loop).spin_skips, 1);
	ck_assert_uint_eq(stats_of(&loop).spins, 0);
	pc_loop_destroy(&loop);
	close_pair(p);
}

/* More runnable threads than CPUs: a spin would take time from them. */
START_TEST(test_spin_is_skipped_while_every_cpu_has_work)
{
	assert_spin_skipped_beside(sysconf(_SC_NPROCESSORS_ONLN) + 1);
}
END_TEST

/* ---- the cgroup CPU quota the spin counts ---- */

/*
 * A fake /proc directory and cgroup mounts: the cgroup and mountinfo texts ("@" stands for the
 * temp dir, where the mounts are) and up to five files, "dir/name=text".
 */
struct quota_case {
	const char *name;
	const char *cgroup;
	const char *mountinfo;
	const char *files[5];
	long cpus;
};

/* A v2-only machine (Debian 12): cgroup2 at the top. */
#define V2_TOP "25 22 0:23 / @ rw,nosuid,nodev shared:9 - cgroup2 cgroup2 rw,nsdelegate\n"
/* A hybrid machine: v2 beside the v1 hierarchies, v1 cpu alone at @/cpu. */
#define V2_UNIFIED "40 30 0:37 / @/unified rw,relatime - cgroup2 cgroup2 rw\n"
#define V1_CPU	   "31 30 0:28 / @/cpu rw,relatime - cgroup cgroup rw,cpu\n"
#define V1_CPUACCT "32 30 0:29 / @/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
#define V1_CPU_CPUACCT                                                                             \
	"33 30 0:30 / @/cpu,cpuacct rw,nosuid shared:12 - cgroup cgroup rw,cpu,cpuacct\n"

static const struct quota_case quota_cases[] = {
    {"v2 max is no quota", "0::/a\n", V2_TOP, {"a/cpu.max=max 100000\n"}, 0},
    {"v2 half a CPU is 1", "0::/a\n", V2_TOP, {"a/cpu.max=50000 100000\n"}, 1},
    {"v2 1.5 CPUs round up to 2", "0::/a\n", V2_TOP, {"a/cpu.max=150000 100000\n"}, 2},
    {"v2 a tighter parent binds",
     "0::/a/b\n",
     V2_TOP,
     {"a/cpu.max=100000 100000\n", "a/b/cpu.max=300000 100000\n"},
     1},
    {"v2 a tighter child binds",
     "0::/a/b\n",
     V2_TOP,
     {"a/cpu.max=400000 100000\n", "a/b/cpu.max=200000 100000\n"},
     2},
    {"v2 garbage is no quota", "0::/a\n", V2_TOP, {"a/cpu.max=lots 100000\n"}, 0},
    {"v2 no period is no quota", "0::/a\n", V2_TOP, {"a/cpu.max=50000\n"}, 0},
    {"v2 trailing junk is no quota", "0::/a\n", V2_TOP, {"a/cpu.max=50000 100000 x\n"}, 0},
    {"v2 absent is no quota", "0::/a\n", V2_TOP, {NULL}, 0},
    {"v2 in the top group is no quota", "0::/\n", V2_TOP, {"a/cpu.max=50000 100000\n"}, 0},
    {"v2 mounted beside v1 (hybrid: /sys/fs/cgroup/unified)",
     "1:cpu:/\n0::/a\n",
     V1_CPU V2_UNIFIED,
     {"unified/a/cpu.max=50000 100000\n", "a/cpu.max=300000 100000\n"},
     1},
    {"v2 mounted anywhere, escaped name",
     "0::/a\n",
     "25 22 0:23 / @/my\\040cg\\134x rw - cgroup2 none rw\n",
     {"my cg\\x/a/cpu.max=50000 100000\n"},
     1},
    {"v2 unmounted: no quota", "0::/a\n", V1_CPU, {"a/cpu.max=50000 100000\n"}, 0},
    {"v2 a container's view: the mount's root is its group",
     "0::/box/a\n",
     "25 22 0:23 /box @ rw - cgroup2 cgroup2 rw\n",
     {"a/cpu.max=50000 100000\n"},
     1},
    {"v2 a mount of another part of the tree is not ours",
     "0::/boxes/a\n",
     "25 22 0:23 /box @ rw - cgroup2 cgroup2 rw\n",
     {"boxes/a/cpu.max=50000 100000\n", "cpu.max=50000 100000\n"},
     0},
    {"v2 a second mount that shows the group counts",
     "0::/a\n",
     "25 22 0:23 /elsewhere @/x rw - cgroup2 cgroup2 rw\n"
     "26 22 0:23 / @/y rw - cgroup2 cgroup2 rw\n",
     {"x/a/cpu.max=50000 100000\n", "y/a/cpu.max=250000 100000\n"},
     3},
    {"v1 -1 is no quota",
     "1:cpu:/a\n",
     V1_CPU,
     {"cpu/a/cpu.cfs_quota_us=-1\n", "cpu/a/cpu.cfs_period_us=100000\n"},
     0},
    {"v1 half a CPU is 1",
     "1:cpu:/a\n",
     V1_CPU,
     {"cpu/a/cpu.cfs_quota_us=50000\n", "cpu/a/cpu.cfs_period_us=100000\n"},
     1},
    {"v1 2.5 CPUs round up to 3",
     "1:cpu:/a\n",
     V1_CPU,
     {"cpu/a/cpu.cfs_quota_us=250000\n", "cpu/a/cpu.cfs_period_us=100000\n"},
     3},
    {"v1 combined cpu,cpuacct mount",
     "3:cpu,cpuacct:/a\n",
     V1_CPU_CPUACCT,
     {"cpu,cpuacct/a/cpu.cfs_quota_us=50000\n", "cpu,cpuacct/a/cpu.cfs_period_us=100000\n"},
     1},
    {"v1 mounted under any name",
     "3:cpuacct,cpu:/a\n",
     "33 30 0:30 / @/q rw - cgroup whatever rw,cpuacct,cpu\n",
     {"q/a/cpu.cfs_quota_us=50000\n", "q/a/cpu.cfs_period_us=100000\n"},
     1},
    {"v1 a tighter parent binds",
     "1:cpu:/a/b\n",
     V1_CPU,
     {"cpu/a/cpu.cfs_quota_us=100000\n", "cpu/a/cpu.cfs_period_us=100000\n",
      "cpu/a/b/cpu.cfs_quota_us=-1\n", "cpu/a/b/cpu.cfs_period_us=100000\n"},
     1},
    {"v1 cpuacct alone is not cpu",
     "2:cpuacct:/a\n",
     V1_CPUACCT,
     {"cpuacct/a/cpu.cfs_quota_us=50000\n", "cpuacct/a/cpu.cfs_period_us=100000\n"},
     0},
    {"v1 a cpuacct mount does not show the cpu hierarchy",
     "1:cpu:/a\n2:cpuacct:/\n",
     V1_CPUACCT,
     {"cpuacct/a/cpu.cfs_quota_us=50000\n", "cpuacct/a/cpu.cfs_period_us=100000\n"},
     0},
    {"v1 garbage is no quota",
     "1:cpu:/a\n",
     V1_CPU,
     {"cpu/a/cpu.cfs_quota_us=fifty\n", "cpu/a/cpu.cfs_period_us=100000\n"},
     0},
    {"v1 no period is no quota", "1:cpu:/a\n", V1_CPU, {"cpu/a/cpu.cfs_quota_us=50000\n"}, 0},
    {"a v1 line among others",
     "4:memory:/x\n1:cpu:/a\n0::/\n",
     V1_CPUACCT V1_CPU V2_UNIFIED,
     {"cpu/a/cpu.cfs_quota_us=50000\n", "cpu/a/cpu.cfs_period_us=100000\n"},
     1},
    {"v1 and v2 quotas: the tighter binds",
     "1:cpu:/a\n0::/b\n",
     V1_CPU V2_UNIFIED,
     {"cpu/a/cpu.cfs_quota_us=300000\n", "cpu/a/cpu.cfs_period_us=100000\n",
      "unified/b/cpu.max=200000 100000\n"},
     2},
    {"garbage lines are ignored",
     "nonsense\n1:cpu\n::\n0::\n0::/a",
     "x\n\n1 2 3 4 5 6 7 8 - cgroup2\n1 2 3 / @ rw - cgroup2 cgroup2 rw",
     {"a/cpu.max=50000 100000\n"},
     1},
};

/* Writes ROOT/REL, making its directories. */
static void put_file(const char *root, const char *rel, const char *text)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *slash = strchr(path + strlen(root) + 1, '/'); slash;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		ck_assert(mkdir(path, 0755) == 0 || errno == EEXIST);
		*slash = '/';
	}
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

/* Writes ROOT/REL from TEMPLATE, each "@" replaced by ROOT. */
static void put_template(const char *root, const char *rel, const char *template)
{
	char text[4096];
	size_t n = 0;

	for (; *template && n + strlen(root) + 1 < sizeof(text); template ++) {
		if (*template == '@')
			n += (size_t)sprintf(text + n, "%s", root);
		else
			text[n++] = *template;
	}
	ck_assert(!*template);
	text[n] = '\0';
	put_file(root, rel, text);
}

static void remove_tree(const char *root)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_cgroup_quota_counts_whole_cpus)
{
	const struct quota_case *c = &quota_cases[_i];
	char root[] = "/tmp/pc_cgroup_XXXXXX", rel[256];
	long cpus;

	ck_assert_ptr_nonnull(mkdtemp(root));
	put_file(root, "cgroup", c->cgroup);
	put_template(root, "mountinfo", c->mountinfo);
	for (int i = 0; i < 5 && c->files[i]; i++) {
		const char *eq = strchr(c->files[i], '=');

		snprintf(rel, sizeof(rel), "%.*s", (int)(eq - c->files[i]), c->files[i]);
		put_file(root, rel, eq + 1);
	}
	cpus = pc_cgroup_cpus_at(root);
	ck_assert_msg(cpus == c->cpus, "%s: %ld, not %ld", c->name, cpus, c->cpus);
	remove_tree(root);
}
END_TEST

/* Either file missing: -ENOENT, which pc_self_cgroup_cpus() takes for "try /proc/self". */
START_TEST(test_cgroup_quota_without_its_proc_files_is_enoent)
{
	char root[] = "/tmp/pc_cgroup_XXXXXX";

	ck_assert_ptr_nonnull(mkdtemp(root));
	ck_assert_int_eq(pc_cgroup_cpus_at(root), -ENOENT);
	put_file(root, "cgroup", "0::/\n");
	ck_assert_int_eq(pc_cgroup_cpus_at(root), -ENOENT);
	put_file(root, "mountinfo", "");
	ck_assert_int_eq(pc_cgroup_cpus_at(root), 0);
	remove_tree(root);
}
END_TEST

/* mountinfo is read in pieces: a mount far down a long file counts, and a line longer than
 * the reader's buffer is skipped without losing the lines after it. */
START_TEST(test_cgroup_quota_found_in_a_long_mountinfo)
{
	char root[] = "/tmp/pc_cgroup_XXXXXX", path[4200], line[8200];
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(root));
	put_file(root, "cgroup", "0::/a\n");
	put_file(root, "a/cpu.max", "50000 100000\n");
	snprintf(path, sizeof(path), "%s/mountinfo", root);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	for (int i = 0; i < 500; i++)
		fprintf(f, "%d 1 0:%d / /tmp/overlay/%d/merged rw - overlay overlay rw,xino=off\n",
			100 + i, i, i);
	memset(line, 'x', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\0';
	fprintf(f, "99 1 0:9 / /%s rw - cgroup2 cgroup2 rw\n", line);
	fprintf(f, "98 1 0:8 / %s rw - cgroup2 cgroup2 rw\n", root);
	fclose(f);
	ck_assert_int_eq(pc_cgroup_cpus_at(root), 1);
	remove_tree(root);
}
END_TEST

/* The count the spin uses is shown once a spin is set, and never beyond the affinity mask. */
START_TEST(test_spin_cpus_is_shown_once_a_spin_is_set)
{
	struct pc_loop loop;
	cpu_set_t set;

	init_loop(&loop, NULL);
	ck_assert_uint_eq(stats_of(&loop).spin_cpus, 0);
	ck_assert_int_eq(pc_loop_set_spin(&loop, 50, 0), 0);
	ck_assert_int_eq(sched_getaffinity(0, sizeof(set), &set), 0);
	ck_assert_uint_ge(stats_of(&loop).spin_cpus, 1);
	ck_assert_uint_le(stats_of(&loop).spin_cpus, (unsigned)CPU_COUNT(&set));
	pc_loop_destroy(&loop);
}
END_TEST

/* ---- suite ---- */

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

static Suite *pollcore_suite(void)
{
	Suite *s = suite_create("pollcore");
	TCase *io = tcase_create("readiness");
	TCase *pass = tcase_create("changes during a pass");
	TCase *scale = tcase_create("table size");
	TCase *alloc = tcase_create("allocation");
	TCase *timers = tcase_create("timers");
	TCase *sigs = tcase_create("signals");
	TCase *spin = tcase_create("spinning");

	tcase_add_loop_test(io, test_fd_event_reaches_its_callback_with_its_revents, 0,
			    N_OF(revents_cases));
	tcase_add_test(io, test_timeout_with_nothing_ready_returns_after_timeout_without_callbacks);
	tcase_add_test(io, test_unread_data_is_reported_again_on_the_next_pass);
	tcase_add_test(io, test_modify_changes_the_events_reported);
	tcase_add_test(io, test_removed_fd_is_not_reported);
	tcase_add_test(io, test_one_pass_is_one_poll);
	tcase_add_test(io, test_eintr_restarts_the_wait_with_the_remaining_timeout);
	tcase_add_loop_test(io, test_invalid_calls_return_negative_errno, 0, N_OF(error_cases));

	tcase_add_test(pass, test_remove_self_in_callback_is_never_called_again);
	tcase_add_loop_test(pass, test_remove_later_in_pass_is_not_called, 0, N_OF(pass_sizes));
	tcase_add_loop_test(pass, test_remove_earlier_in_pass_is_not_called_again, 0,
			    N_OF(pass_sizes));
	tcase_add_test(pass, test_add_during_dispatch_is_polled_from_the_next_pass);
	tcase_add_test(pass,
		       test_add_during_dispatch_that_moves_table_to_heap_calls_each_ready_fd_once);
	tcase_add_loop_test(pass,
			    test_fd_removed_and_added_again_in_a_pass_keeps_only_the_new_watcher, 0,
			    N_OF(pass_sizes));
	tcase_add_loop_test(pass, test_modify_later_in_pass_applies_to_that_pass, 0,
			    N_OF(pass_sizes));
	tcase_add_test(pass, test_stop_during_dispatch_ends_run_after_the_pass);
	tcase_add_test(pass, test_stop_before_run_does_not_end_the_next_run);
	tcase_add_test(pass, test_run_returns_when_nothing_is_watched);
	tcase_add_test(pass, test_run_once_from_a_callback_is_ebusy);

	tcase_add_loop_test(scale, test_every_ready_fd_is_dispatched_exactly_once_per_pass, 0,
			    N_OF(scale_sizes));
	tcase_add_test(scale,
		       test_table_moves_to_heap_past_32_and_back_inline_after_shrinking_to_5);
	tcase_add_test(scale, test_table_is_inline_at_32_heap_at_33_and_inline_again_at_32);
	tcase_add_test(scale, test_largest_table_is_the_high_water_mark);

	tcase_add_test(alloc, test_no_heap_allocation_at_32_fds_with_a_timer_and_a_signal);
	tcase_add_test(alloc, test_no_heap_allocation_per_wait_after_growth_to_1000);
	tcase_add_test(alloc, test_allocation_failure_moving_to_heap_is_enomem_and_loop_intact);
	tcase_add_test(alloc,
		       test_allocation_failure_doubling_the_heap_table_is_enomem_and_loop_intact);
	tcase_add_test(alloc, test_allocation_failure_growing_the_fd_map_is_enomem_and_loop_intact);

	tcase_add_test(timers, test_timers_fire_in_deadline_order);
	tcase_add_test(timers, test_one_shot_timer_fires_once_and_becomes_inactive);
	tcase_add_test(timers, test_repeating_timer_repeats_every_period);
	tcase_add_test(timers, test_stopped_timer_never_fires);
	tcase_add_test(timers,
		       test_timer_stopped_by_an_earlier_timer_of_the_same_pass_is_not_called);
	tcase_add_test(timers, test_timer_restarted_from_its_callback_fires_in_the_next_pass);
	tcase_add_test(timers, test_timer_shortens_a_longer_wait);

	tcase_add_loop_test(sigs, test_signal_sent_with_kill_arrives_as_a_callback, 0,
			    N_OF(signals_watched));
	tcase_add_test(sigs, test_sigchld_of_an_exiting_child_arrives_as_a_callback);
	tcase_add_test(sigs, test_watched_signal_is_blocked_and_unblocked_when_the_watcher_stops);
	tcase_add_test(sigs, test_loop_destroy_unblocks_watched_signals);
	tcase_add_test(sigs, test_signal_blocked_before_watching_stays_blocked_after_stop);
	tcase_add_test(sigs, test_signal_pending_when_its_watcher_stops_is_consumed);
	tcase_add_test(sigs, test_signal_callback_may_stop_its_own_watcher);

	suite_add_tcase(s, io);
	suite_add_tcase(s, pass);
	suite_add_tcase(s, scale);
	suite_add_tcase(s, alloc);
	suite_add_tcase(s, timers);
	tcase_add_test(spin, test_spin_catches_an_fd_that_becomes_ready_within_the_window);
	tcase_add_test(spin, test_spin_that_sees_nothing_ends_in_a_sleeping_wait);
	tcase_add_test(spin, test_loop_spins_only_right_after_fd_work);
	tcase_add_test(spin, test_spin_is_skipped_while_every_cpu_has_work);
	tcase_add_test(spin, test_spin_cpus_is_shown_once_a_spin_is_set);
	tcase_add_loop_test(spin, test_cgroup_quota_counts_whole_cpus, 0, N_OF(quota_cases));
	tcase_add_test(spin, test_cgroup_quota_without_its_proc_files_is_enoent);
	tcase_add_test(spin, test_cgroup_quota_found_in_a_long_mountinfo);

	suite_add_tcase(s, sigs);
	suite_add_tcase(s, spin);
	return s;
}

/* 1,000 pipes are 2,000 fds; the fd-map test dups to fd 4000. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 8192) {
		rl.rlim_cur = rl.rlim_max < 8192 ? rl.rlim_max : 8192;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

void unit_add_suites(SRunner *sr)
{
	raise_fd_limit();
	srunner_add_suite(sr, pollcore_suite());
}

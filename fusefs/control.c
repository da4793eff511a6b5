/*
 * The control socket. Clients are non-blocking and served by the daemon's pollcore loop:
 * input is buffered up to one line of CFS_CTL_MAX_LINE, replies up to CFS_CTL_MAX_PENDING
 * unread bytes, so neither a silent nor a flooding client can stall the mount or grow the
 * daemon without bound. Replies are built with json-glib.
 *
 * Two replies are not built at once. A request that queued kernel cache invalidations (mode,
 * limits, generators) is answered once the notifier delivered them, so the next syscall sees
 * the change; a dump streams, a piece each time the socket takes the last one. Meanwhile the
 * loop serves FUSE and other clients, and this client's further requests wait unread.
 */
#include "control.h"
#include "fault.h"
#include "notify.h"
#include "paths.h"
#include "spec.h"

#include <errno.h>
#include <json-glib/json-glib.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

struct cfs_client {
	struct cfs_control *ctl;
	int fd;
	GString *in, *out;
	char *held;      /* a reply waiting for the invalidations its request queued */
	uint64_t ticket; /* ... up to this one (notify.h) */
	struct cfs_spec_dumper *dump; /* a dump being streamed */
	bool closing; /* send what is pending, then close */
};

struct cfs_control {
	struct cfs_daemon *d;
	struct pc_loop *loop;
	int fd;
	char *path;
	GHashTable *clients; /* fd -> struct cfs_client */
	struct pc_stats pc_base; /* `stats reset` subtracts this */
	uint64_t refused, accepted;
	uint64_t accept_pauses; /* times accept ran out of fds and the listener was set aside */
	bool paused;		/* ... and still is */
	bool pause_told;	/* logged once until an accept succeeds again */
	struct pc_timer resume; /* polls the listener again after CFS_CTL_ACCEPT_RETRY_MS */
	struct cfs_client *asking; /* whose request is being answered (NULL: cfs_control_handle) */
	int wake_fd;		   /* the notifier's: delivered what a held reply waits for */
};

/* Out of fds (or memory): the pending connection stays, so the listener stays readable and
 * polling it would spin. Set it aside until a client closes or the retry timer fires. */
static void cfs_accept_pause(struct cfs_control *c, int err)
{
	if (!c->pause_told)
		g_warning("control: cannot accept a client (%s); waiting for one to close",
			  strerror(err));
	c->pause_told = true;
	c->paused = true;
	c->accept_pauses++;
	pc_io_mod(c->loop, c->fd, 0);
	pc_timer_start(c->loop, &c->resume, CFS_CTL_ACCEPT_RETRY_MS, 0);
}

static void cfs_accept_resume(struct cfs_control *c)
{
	if (!c->paused)
		return;
	c->paused = false;
	pc_timer_stop(c->loop, &c->resume);
	pc_io_mod(c->loop, c->fd, POLLIN);
}

static void cfs_on_resume(struct pc_loop *loop, struct pc_timer *t, void *data)
{
	cfs_accept_resume(data);
}

static void cfs_client_close(struct cfs_client *cl)
{
	struct cfs_control *c = cl->ctl;

	pc_io_del(c->loop, cl->fd);
	g_hash_table_remove(c->clients, GINT_TO_POINTER(cl->fd));
	cfs_accept_resume(c); /* an fd is free again */
}

static void cfs_client_free(gpointer p)
{
	struct cfs_client *cl = p;

	close(cl->fd);
	g_string_free(cl->in, TRUE);
	g_string_free(cl->out, TRUE);
	g_free(cl->held);
	cfs_spec_dumper_free(cl->dump);
	g_free(cl);
}

static bool cfs_client_busy(const struct cfs_client *cl)
{
	return cl->held || cl->dump;
}

static void cfs_dump_piece(struct cfs_client *cl);

/* Send what the socket takes: false when the client went away (and was closed). */
static bool cfs_client_send(struct cfs_client *cl)
{
	while (cl->out->len) {
		ssize_t n = send(cl->fd, cl->out->str, cl->out->len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			cfs_client_close(cl);
			return false;
		}
		g_string_erase(cl->out, 0, n);
	}
	return true;
}

/* Write what we can; the loop watches POLLOUT only while something is pending. A streamed
 * dump makes its next piece once the last one is nearly out, so it never piles up here. */
static void cfs_client_flush(struct cfs_client *cl)
{
	if (!cfs_client_send(cl))
		return;
	if (cl->dump && cl->out->len < CFS_CTL_DUMP_PIECE) {
		cfs_dump_piece(cl);
		if (!cfs_client_send(cl))
			return;
	}
	if (!cl->out->len && !cfs_client_busy(cl) && cl->closing) {
		cfs_client_close(cl);
		return;
	}
	/* a closing client is not read any more (at its EOF, POLLIN would never stop); a busy
	 * one not until its reply is out, so its requests wait in its socket, not here */
	bool read = !cl->closing && !cfs_client_busy(cl);
	pc_io_mod(cl->ctl->loop, cl->fd,
		  (read ? POLLIN : 0) | (cl->out->len || cl->dump ? POLLOUT : 0));
}

static void cfs_client_reply(struct cfs_client *cl, char *json)
{
	if (!json)
		return; /* the reply streams (dump) */
	/* a client that does not read its replies is dropped, not buffered for ever */
	if (cl->out->len > CFS_CTL_MAX_PENDING) {
		g_free(json);
		g_message("control: dropping a client with %zu unread bytes", cl->out->len);
		cl->out->len = 0;
		cl->closing = true;
		return;
	}
	g_string_append(cl->out, json);
	g_string_append_c(cl->out, '\n');
	g_free(json);
}

static char *cfs_json_error(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
char *cfs_control_handle(struct cfs_control *c, const char *line, size_t len);

/* Answer one request; a reply to one that queued invalidations is held until they were
 * delivered (the loop goes on serving the kernel meanwhile: that is what lets them through). */
static void cfs_client_request(struct cfs_client *cl, const char *line, size_t len)
{
	struct cfs_control *c = cl->ctl;
	struct cfs_notifier *n = c->d->notifier;
	uint64_t before = cfs_notify_ticket(n);

	c->asking = cl;
	char *reply = cfs_control_handle(c, line, len);
	c->asking = NULL;
	cfs_coherence_flush(c->d); /* what the command changed, as the tree recorded it */
	uint64_t after = cfs_notify_ticket(n);
	if (reply && after != before && c->wake_fd >= 0 && !cfs_notify_delivered(n, after, true)) {
		cl->held = reply;
		cl->ticket = after;
		return;
	}
	cfs_client_reply(cl, reply);
}

static void cfs_client_lines(struct cfs_client *cl)
{
	char *nl;

	while (!cl->closing && !cfs_client_busy(cl) &&
	       (nl = memchr(cl->in->str, '\n', cl->in->len))) {
		size_t len = (size_t)(nl - cl->in->str);
		cfs_client_request(cl, cl->in->str, len);
		g_string_erase(cl->in, 0, (gssize)len + 1);
	}
	if (cl->in->len > CFS_CTL_MAX_LINE) {
		cfs_client_reply(cl, cfs_json_error("request longer than %d bytes", CFS_CTL_MAX_LINE));
		g_string_truncate(cl->in, 0);
		cl->closing = true;
	}
}

static void cfs_on_client(struct pc_loop *loop, int fd, int revents, void *data)
{
	struct cfs_client *cl = data;
	char buf[16384];

	if (revents & POLLIN) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0 && !cl->closing) {
			g_string_append_len(cl->in, buf, n);
			cfs_client_lines(cl);
		} else if (n == 0 && !cl->closing) {
			/* done sending (shutdown, or `printf ... | socat`): a last request without
			 * its newline is still one, and the replies go out before the close */
			if (cl->in->len) {
				g_string_append_c(cl->in, '\n');
				cfs_client_lines(cl);
			}
			cl->closing = true;
		} else if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			cfs_client_close(cl);
			return;
		}
	} else if (revents & (POLLHUP | POLLERR | POLLNVAL)) {
		cfs_client_close(cl);
		return;
	}
	cfs_client_flush(cl);
}

static void cfs_on_accept(struct pc_loop *loop, int fd, int revents, void *data)
{
	struct cfs_control *c = data;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (cfd < 0) {
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
			cfs_accept_pause(c, errno);
		return;
	}
	c->pause_told = false;
	/* the socket is 0600 already; the peer check also covers a socket passed on */
	if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
	    (cred.uid != getuid() && cred.uid != 0)) {
		static const char msg[] = "{\"ok\":false,\"error\":\"permission denied\"}\n";
		c->refused++;
		send(cfd, msg, sizeof(msg) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		close(cfd);
		return;
	}
	struct cfs_client *cl = g_new0(struct cfs_client, 1);
	*cl = (struct cfs_client){.ctl = c, .fd = cfd, .in = g_string_new(NULL),
				  .out = g_string_new(NULL)};
	if (pc_io_add(loop, cfd, POLLIN, cfs_on_client, cl) != 0) {
		cfs_client_free(cl);
		return;
	}
	g_hash_table_insert(c->clients, GINT_TO_POINTER(cfd), cl);
	c->accepted++;
}

/* A socket at PATH from a daemon that died is replaced; one that answers is not ours. */
static int cfs_clear_stale(const char *path, const struct sockaddr_un *addr)
{
	struct stat st;
	int fd, rc;

	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST; /* never remove what is not a socket */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	rc = connect(fd, (const struct sockaddr *)addr, sizeof(*addr));
	close(fd);
	if (rc == 0)
		return -EADDRINUSE;
	return unlink(path) == 0 ? 0 : -errno;
}

int cfs_control_listen(const char *path)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	int fd, err;
	mode_t old;

	if (strlen(path) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	strcpy(addr.sun_path, path);
	err = cfs_clear_stale(path, &addr);
	if (err)
		return err;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	old = umask(0177); /* born 0600: no window where others may connect */
	err = bind(fd, (struct sockaddr *)&addr, sizeof(addr)) ? -errno : 0;
	umask(old);
	if (!err && listen(fd, CFS_CTL_BACKLOG) != 0)
		err = -errno;
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

/* The notifier delivered what some held replies wait for: send those. */
static void cfs_on_delivered(struct pc_loop *loop, int fd, int revents, void *data)
{
	struct cfs_control *c = data;
	GHashTableIter it;
	gpointer key, value;
	GArray *ready = g_array_new(FALSE, FALSE, sizeof(int));
	uint64_t count;

	if (read(fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		g_message("control: reading the notifier's eventfd: %s", strerror(errno));
	g_hash_table_iter_init(&it, c->clients);
	while (g_hash_table_iter_next(&it, &key, &value)) {
		struct cfs_client *cl = value;
		/* those still waiting ask to be woken again */
		if (cl->held && cfs_notify_delivered(c->d->notifier, cl->ticket, true))
			g_array_append_val(ready, cl->fd);
	}
	/* sending may close a client: look each up again, outside the iteration */
	for (guint i = 0; i < ready->len; i++) {
		struct cfs_client *cl = g_hash_table_lookup(
		    c->clients, GINT_TO_POINTER(g_array_index(ready, int, i)));
		if (!cl)
			continue;
		char *reply = cl->held;
		cl->held = NULL;
		cfs_client_reply(cl, reply);
		cfs_client_lines(cl);
		cfs_client_flush(cl);
	}
	g_array_free(ready, TRUE);
}

int cfs_control_start(struct cfs_control **out, struct cfs_daemon *d, struct pc_loop *loop,
		      int fd, const char *path)
{
	struct cfs_control *c;
	int err = 0;

	c = g_new0(struct cfs_control, 1);
	*c = (struct cfs_control){.d = d, .loop = loop, .fd = fd, .path = g_strdup(path),
				  .wake_fd = -1};
	c->clients = g_hash_table_new_full(NULL, NULL, NULL, cfs_client_free);
	pc_timer_init(&c->resume, cfs_on_resume, c);
	if (fd >= 0)
		err = pc_io_add(loop, fd, POLLIN, cfs_on_accept, c);
	if (!err && fd >= 0 && cfs_notify_wake_fd(d->notifier) >= 0) {
		err = pc_io_add(loop, cfs_notify_wake_fd(d->notifier), POLLIN, cfs_on_delivered, c);
		if (!err)
			c->wake_fd = cfs_notify_wake_fd(d->notifier);
	}
	if (err) {
		cfs_control_stop(c);
		return err;
	}
	*out = c;
	return 0;
}

void cfs_control_stop(struct cfs_control *c)
{
	GHashTableIter it;
	gpointer key;

	if (!c)
		return;
	g_hash_table_iter_init(&it, c->clients);
	while (g_hash_table_iter_next(&it, &key, NULL))
		pc_io_del(c->loop, GPOINTER_TO_INT(key));
	g_hash_table_destroy(c->clients);
	pc_timer_stop(c->loop, &c->resume);
	if (c->wake_fd >= 0)
		pc_io_del(c->loop, c->wake_fd);
	if (c->fd >= 0) {
		pc_io_del(c->loop, c->fd);
		close(c->fd);
		unlink(c->path);
	}
	g_free(c->path);
	g_free(c);
}

/* ---- replies ---- */

/*
 * The generated text, made valid JSON whatever the builder was given:
 * - json-glib copies strings as given, and the fault list holds rule globs as the client
 *   sent them (cfs_json_str makes its own strings valid, fault.c does not), so invalid UTF-8
 *   is replaced as cfs_json_str would (outside strings the text is ASCII, and no decoder
 *   takes an ASCII byte into a sequence, so only string contents change);
 * - json-glib (1.6 at least) writes U+001F raw inside a string, which JSON forbids (RFC 8259,
 *   section 7) and strict parsers such as Python's refuse. Without pretty-printing a control
 *   byte can only stand inside a string, so each one left becomes its \u escape.
 */
static char *cfs_json_clean(char *s)
{
	const char *p;
	GString *out;

	if (!g_utf8_validate(s, -1, NULL)) {
		char *valid = g_utf8_make_valid(s, -1);
		g_free(s);
		s = valid;
	}
	for (p = s; *p && (unsigned char)*p >= 0x20; p++)
		;
	if (!*p)
		return s;
	out = g_string_new_len(s, p - s);
	for (; *p; p++) {
		if ((unsigned char)*p < 0x20)
			g_string_append_printf(out, "\\u%04x", (unsigned char)*p);
		else
			g_string_append_c(out, *p);
	}
	g_free(s);
	return g_string_free(out, FALSE);
}

static char *cfs_json_finish(JsonBuilder *b)
{
	JsonGenerator *g = json_generator_new();
	JsonNode *root;
	char *s;

	json_builder_end_object(b);
	root = json_builder_get_root(b);
	json_generator_set_root(g, root);
	s = json_generator_to_data(g, NULL);
	json_node_unref(root);
	g_object_unref(g);
	g_object_unref(b);
	return cfs_json_clean(s);
}

static JsonBuilder *cfs_json_ok(void)
{
	JsonBuilder *b = json_builder_new();

	json_builder_begin_object(b);
	json_builder_set_member_name(b, "ok");
	json_builder_add_boolean_value(b, TRUE);
	return b;
}

/* Text from the tree or the client may hold any bytes; JSON strings must be UTF-8. */
static void cfs_json_str(JsonBuilder *b, const char *key, const char *s, gssize len)
{
	gchar *v = g_utf8_make_valid(s, len);

	json_builder_set_member_name(b, key);
	json_builder_add_string_value(b, v);
	g_free(v);
}

static void cfs_json_int(JsonBuilder *b, const char *key, int64_t v)
{
	json_builder_set_member_name(b, key);
	json_builder_add_int_value(b, v);
}

static char *cfs_json_error(const char *fmt, ...)
{
	JsonBuilder *b = json_builder_new();
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	json_builder_begin_object(b);
	json_builder_set_member_name(b, "ok");
	json_builder_add_boolean_value(b, FALSE);
	cfs_json_str(b, "error", msg, -1);
	g_free(msg);
	return cfs_json_finish(b);
}

static const char *cfs_kind_name(enum rs_kind k)
{
	return k == RS_DIR ? "dir" : k == RS_FILE ? "file" : k == RS_LINK ? "link" : "other";
}

static const char *const cfs_mode_names[] = {"kernel", "collapse", "server"};

/* ---- commands ---- */

static char *cmd_ping(struct cfs_control *c, const char *args)
{
	JsonBuilder *b = cfs_json_ok();

	cfs_json_str(b, "version", CFS_VERSION, -1);
	return cfs_json_finish(b);
}

static void cfs_stats_ops(struct cfs_control *c, JsonBuilder *b)
{
	json_builder_set_member_name(b, "requests");
	json_builder_begin_object(b);
	for (int i = 0; i < CFS_OP_MAX; i++)
		if (c->d->ops[i])
			cfs_json_int(b, cfs_op_names[i], (int64_t)c->d->ops[i]);
	json_builder_end_object(b);
}

/* Our time per request (from its arrival in the loop to the reply's write) and the resolver's
 * time per walk, for the ops that came: log2 histograms (latency.h). */
static void cfs_stats_latency(struct cfs_control *c, JsonBuilder *b)
{
	const struct cfs_daemon *d = c->d;

	json_builder_set_member_name(b, "latency");
	json_builder_begin_object(b);
	for (int i = 0; i <= CFS_OP_MAX; i++)
		if (d->op_ns[i].count)
			cfs_hist_json(b, i < CFS_OP_MAX ? cfs_op_names[i] : "other", &d->op_ns[i]);
	if (d->walk_ns.count)
		cfs_hist_json(b, "walk", &d->walk_ns);
	json_builder_end_object(b);
}

static void cfs_stats_resolver(struct cfs_control *c, JsonBuilder *b)
{
	const struct cfs_walk_stats *w = &c->d->walk;

	json_builder_set_member_name(b, "resolver");
	json_builder_begin_object(b);
	cfs_json_int(b, "walks", (int64_t)w->walks);
	cfs_json_int(b, "links_followed", (int64_t)w->links);
	cfs_json_int(b, "deepest_nesting", w->max_depth);
	cfs_json_int(b, "eloop", (int64_t)w->eloop);
	cfs_json_int(b, "other_errors", (int64_t)w->errors);
	cfs_json_int(b, "heap_frames", (int64_t)w->heap_frames);
	cfs_json_int(b, "heap_allocs", (int64_t)w->allocs);
	json_builder_end_object(b);
}

static void cfs_stats_pollcore(struct cfs_control *c, JsonBuilder *b)
{
	struct pc_stats s;
	uint32_t fds = pc_io_count(c->loop);

	pc_loop_stats(c->loop, &s);
	json_builder_set_member_name(b, "pollcore");
	json_builder_begin_object(b);
	cfs_json_int(b, "waits", (int64_t)(s.waits - c->pc_base.waits));
	cfs_json_int(b, "waits_inline", (int64_t)(s.waits_inline - c->pc_base.waits_inline));
	cfs_json_int(b, "waits_heap", (int64_t)(s.waits_heap - c->pc_base.waits_heap));
	cfs_json_int(b, "heap_allocs", (int64_t)(s.heap_allocs - c->pc_base.heap_allocs));
	cfs_json_int(b, "largest_table", s.largest_table);
	cfs_json_int(b, "spin_us", c->d->opts.spin_us);
	cfs_json_int(b, "spins", (int64_t)(s.spins - c->pc_base.spins));
	cfs_json_int(b, "spin_hits", (int64_t)(s.spin_hits - c->pc_base.spin_hits));
	cfs_json_int(b, "spin_polls", (int64_t)(s.spin_polls - c->pc_base.spin_polls));
	cfs_json_int(b, "spin_skips", (int64_t)(s.spin_skips - c->pc_base.spin_skips));
	cfs_json_int(b, "fds", fds);
	/* outside a pass the table is inline exactly when its entries fit (pc.h) */
	cfs_json_str(b, "table", fds <= PC_INLINE_FDS ? "inline" : "heap", -1);
	json_builder_end_object(b);
}

static void cfs_stats_tree(struct cfs_control *c, JsonBuilder *b)
{
	struct cfs_tree_stats t;
	struct cfs_notify_stats n;
	struct cfs_daemon *d = c->d;

	cfs_tree_stats(d->tree, &t);
	json_builder_set_member_name(b, "tree");
	json_builder_begin_object(b);
	cfs_json_int(b, "nodes", (int64_t)t.nodes);
	cfs_json_int(b, "dirs", (int64_t)t.dirs);
	cfs_json_int(b, "files", (int64_t)t.files);
	cfs_json_int(b, "links", (int64_t)t.links);
	cfs_json_int(b, "bytes", (int64_t)t.bytes);
	cfs_json_int(b, "data_bytes", (int64_t)t.data_bytes);
	json_builder_end_object(b);
	json_builder_set_member_name(b, "kernel");
	json_builder_begin_object(b);
	cfs_json_int(b, "path_nodeids", (int64_t)cfs_paths_count(d->paths));
	cfs_json_int(b, "lookups", (int64_t)(cfs_tree_total_refs(d->tree) -
					     cfs_paths_count(d->paths) +
					     cfs_paths_total_lookups(d->paths)));
	cfs_notifier_stats(d->notifier, &n);
	cfs_json_int(b, "invalidations_sent", (int64_t)n.sent);
	cfs_json_int(b, "invalidations_lost", (int64_t)n.lost);
	cfs_json_int(b, "invalidations_stale", (int64_t)n.stale);
	json_builder_end_object(b);
}

static char *cmd_stats(struct cfs_control *c, const char *args)
{
	JsonBuilder *b;

	if (strcmp(args, "reset") == 0) {
		memset(c->d->ops, 0, sizeof(c->d->ops));
		memset(&c->d->walk, 0, sizeof(c->d->walk));
		memset(c->d->op_ns, 0, sizeof(c->d->op_ns));
		memset(&c->d->walk_ns, 0, sizeof(c->d->walk_ns));
		pc_loop_stats(c->loop, &c->pc_base);
	} else if (*args) {
		return cfs_json_error("usage: stats [reset]");
	}
	b = cfs_json_ok();
	cfs_json_str(b, "mode", cfs_mode_names[c->d->opts.follow], -1);
	cfs_stats_ops(c, b);
	cfs_stats_resolver(c, b);
	cfs_stats_latency(c, b);
	cfs_stats_pollcore(c, b);
	cfs_stats_tree(c, b);
	json_builder_set_member_name(b, "control");
	json_builder_begin_object(b);
	cfs_json_int(b, "clients", g_hash_table_size(c->clients));
	cfs_json_int(b, "accepted", (int64_t)c->accepted);
	cfs_json_int(b, "refused", (int64_t)c->refused);
	cfs_json_int(b, "accept_pauses", (int64_t)c->accept_pauses);
	json_builder_end_object(b);
	return cfs_json_finish(b);
}

static char *cfs_limits_reply(struct cfs_control *c)
{
	JsonBuilder *b = cfs_json_ok();

	cfs_json_int(b, "nest", c->d->opts.limits.max_nest);
	cfs_json_int(b, "total", c->d->opts.limits.max_total);
	return cfs_json_finish(b);
}

static char *cmd_limits(struct cfs_control *c, const char *args)
{
	struct rs_limits l = c->d->opts.limits;
	gchar **words = g_strsplit_set(args, " \t", -1);
	char *bad = NULL;

	for (gchar **w = words; *w && !bad; w++) {
		char *end;
		unsigned long long v;
		uint32_t *into = g_str_has_prefix(*w, "nest=")    ? &l.max_nest
				 : g_str_has_prefix(*w, "total=") ? &l.max_total
								  : NULL;
		if (!**w)
			continue;
		const char *num = into ? strchr(*w, '=') + 1 : "";
		errno = 0;
		v = strtoull(num, &end, 10);
		if (!into || !*num || *end || errno || *num == '-' || v > RS_LIMIT_MAX)
			bad = g_strdup_printf("%s: usage: limits [nest=N] [total=N], N up to %d", *w,
					      RS_LIMIT_MAX);
		else
			*into = (uint32_t)v;
	}
	g_strfreev(words);
	if (bad) {
		char *e = cfs_json_error("%s", bad);
		g_free(bad);
		return e;
	}
	if (l.max_nest != c->d->opts.limits.max_nest || l.max_total != c->d->opts.limits.max_total) {
		c->d->opts.limits = l;
		cfs_coherence_everything(c->d);
	}
	return cfs_limits_reply(c);
}

static char *cmd_mode(struct cfs_control *c, const char *args)
{
	for (int m = 0; m < 3; m++)
		if (strcmp(args, cfs_mode_names[m]) == 0) {
			if (c->d->opts.follow != (enum cfs_follow)m) {
				c->d->opts.follow = (enum cfs_follow)m;
				cfs_coherence_everything(c->d);
			}
			JsonBuilder *b = cfs_json_ok();
			cfs_json_str(b, "mode", cfs_mode_names[m], -1);
			return cfs_json_finish(b);
		}
	return cfs_json_error("usage: mode kernel|collapse|server");
}

struct cfs_trace_ctx {
	JsonBuilder *b;
	struct cfs_daemon *d;
	uint64_t steps; /* taken, kept or not */
};

static void cfs_trace_step(void *data, const struct rs_step *s)
{
	static const char *const names[] = {"component", "link", "root", "dot", "dotdot"};
	struct cfs_trace_ctx *t = data;
	JsonBuilder *b = t->b;

	if (t->steps++ >= CFS_CTL_MAX_STEPS)
		return;
	json_builder_begin_object(b);
	cfs_json_str(b, "step", names[s->kind], -1);
	if (s->name)
		cfs_json_str(b, "name", s->name, (gssize)s->name_len);
	cfs_json_int(b, "node", (int64_t)s->node);
	cfs_json_str(b, "kind", cfs_kind_name(cfs_tree_kind(t->d->tree, (uint32_t)s->node)), -1);
	cfs_json_int(b, "depth", s->depth);
	if (s->target)
		cfs_json_str(b, "target", s->target, (gssize)s->target_len);
	json_builder_end_object(b);
}

static char *cmd_resolve(struct cfs_control *c, const char *args)
{
	unsigned flags = RS_FOLLOW;
	struct rs_result res;
	JsonBuilder *b;

	if (g_str_has_prefix(args, "nofollow ")) {
		flags = 0;
		args += strlen("nofollow ");
	}
	if (!*args)
		return cfs_json_error("usage: resolve [nofollow] PATH");
	/* timed without the trace, which costs more than the walk */
	struct rs_ctx plain = {.ops = &cfs_tree_rs_ops, .tree = c->d->tree, .root = CFS_ROOT,
			       .limits = c->d->opts.limits};
	uint64_t t0 = cfs_now_ns();
	rs_resolve(&plain, CFS_ROOT, args, flags, &res);
	uint64_t ns = cfs_now_ns() - t0;
	b = cfs_json_ok();
	cfs_json_str(b, "path", args, -1);
	cfs_json_int(b, "duration_ns", (int64_t)ns);
	struct cfs_trace_ctx t = {b, c->d, 0};
	struct rs_ctx ctx = {&cfs_tree_rs_ops, c->d->tree, CFS_ROOT, c->d->opts.limits, NULL,
			     cfs_trace_step, &t, NULL, NULL};
	json_builder_set_member_name(b, "steps");
	json_builder_begin_array(b);
	int err = rs_resolve(&ctx, CFS_ROOT, args, flags, &res);
	json_builder_end_array(b);
	if (t.steps > CFS_CTL_MAX_STEPS)
		cfs_json_int(b, "steps_omitted", (int64_t)(t.steps - CFS_CTL_MAX_STEPS));
	if (err) {
		const char *name = cfs_errno_name(-err);
		cfs_json_str(b, "errno", name ? name : strerror(-err), -1);
	} else {
		cfs_json_int(b, "node", (int64_t)res.node);
		cfs_json_str(b, "kind", cfs_kind_name(cfs_tree_kind(c->d->tree, (uint32_t)res.node)),
			     -1);
	}
	cfs_json_int(b, "links", res.links);
	cfs_json_int(b, "deepest_nesting", res.max_depth);
	cfs_json_int(b, "heap_frames", res.heap_frames);
	return cfs_json_finish(b);
}

/* TEXT as the inside of a JSON string, escaped exactly as the builder escapes a whole
 * reply (escapes are per character, and pieces end with a line, so pieces join up). */
static void cfs_json_append_body(GString *out, const char *text, size_t len)
{
	JsonNode *n = json_node_alloc();
	JsonGenerator *g = json_generator_new();
	gchar *v = g_utf8_make_valid(text, (gssize)len);
	char *q;

	json_node_init_string(n, v);
	json_generator_set_root(g, n);
	q = cfs_json_clean(json_generator_to_data(g, NULL));
	g_string_append_len(out, q + 1, (gssize)strlen(q) - 2); /* without the quotes */
	g_free(q);
	g_free(v);
	g_object_unref(g);
	json_node_unref(n);
}

/* The next piece of a dump, into the dump's text; 1 more to come, 0 done, or -errno. */
static int cfs_dump_next(struct cfs_spec_dumper *d, GString *into, size_t want)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int rc;

	if (!f)
		return -errno;
	rc = cfs_spec_dumper_next(d, f, want);
	fclose(f);
	if (rc >= 0)
		cfs_json_append_body(into, text, len);
	free(text);
	return rc;
}

/* A streamed dump's next piece. A failure past the first piece cannot become an error reply
 * (the client has part of an "ok" one): the line is left unfinished and the client closed,
 * and the log says why. */
static void cfs_dump_piece(struct cfs_client *cl)
{
	int rc = cfs_dump_next(cl->dump, cl->out, CFS_CTL_DUMP_PIECE);

	if (rc > 0)
		return;
	cfs_spec_dumper_free(cl->dump);
	cl->dump = NULL;
	if (rc == 0) {
		g_string_append(cl->out, "\"}\n");
		return;
	}
	g_message("control: dump cut short: %s", strerror(-rc));
	cl->closing = true;
}

static char *cmd_dump(struct cfs_control *c, const char *args)
{
	struct cfs_spec_dumper *d = cfs_spec_dumper_new(c->d->tree);
	struct cfs_client *cl = c->asking;
	/* without a client (cfs_control_handle) the whole dump makes one reply */
	size_t want = cl ? CFS_CTL_DUMP_PIECE : SIZE_MAX / 2;
	GString *reply = g_string_new("{\"ok\":true,\"spec\":\"");
	int rc = cfs_dump_next(d, reply, want);

	if (rc < 0) {
		cfs_spec_dumper_free(d);
		g_string_free(reply, TRUE);
		return cfs_json_error("dump: %s", strerror(-rc));
	}
	if (rc == 0) {
		cfs_spec_dumper_free(d);
		g_string_append(reply, "\"}");
		return g_string_free(reply, FALSE);
	}
	/* the rest follows as the socket takes it (cfs_client_flush) */
	g_string_append_len(cl->out, reply->str, (gssize)reply->len);
	g_string_free(reply, TRUE);
	cl->dump = d;
	return NULL;
}

static char *cmd_fault(struct cfs_control *c, const char *args)
{
	JsonBuilder *b;
	char *msg = NULL;

	if (g_str_has_prefix(args, "add ")) {
		if (cfs_fault_add(c->d->faults, args + 4, &msg) != 0) {
			char *e = cfs_json_error("fault %s", msg);
			g_free(msg);
			return e;
		}
	} else if (strcmp(args, "clear") == 0) {
		cfs_fault_clear(c->d->faults);
	} else if (strcmp(args, "list") != 0 && *args) {
		return cfs_json_error("usage: fault add op=OP path=GLOB [errno=E] [prob=P] "
				      "[seed=S] [delay=MS] | fault list | fault clear");
	}
	b = cfs_json_ok();
	json_builder_set_member_name(b, "faults");
	cfs_fault_list(c->d->faults, b);
	return cfs_json_finish(b);
}

static char *cmd_unmount(struct cfs_control *c, const char *args)
{
	/* the loop finishes this pass (the reply is sent), then the session is unmounted */
	c->d->unmount_requested = true;
	pc_stop(c->loop);
	return cfs_json_finish(cfs_json_ok());
}

/* Cold, for experiments: the kernel forgets every name, attribute, link body, listing and
 * page it holds for this mount, and asks again. */
static char *cmd_drop(struct cfs_control *c, const char *args)
{
	struct cfs_daemon *d = c->d;

	if (*args)
		return cfs_json_error("usage: drop");
	cfs_coherence_drop(d);
	return cfs_json_finish(cfs_json_ok());
}

/* A spec line at runtime; the kernel forgets the listings of the directories it touched. */
static char *cmd_generate(struct cfs_control *c, const char *line)
{
	struct cfs_spec_defaults def = {getuid(), getgid(), false, {0, 0}};
	char *msg = NULL;
	JsonBuilder *b;
	struct cfs_tree_stats before, after;

	cfs_tree_stats(c->d->tree, &before);
	if (cfs_spec_apply_line(c->d->tree, line, &def, &msg) != 0) {
		char *e = cfs_json_error("%s", msg ? msg : "failed");
		free(msg);
		return e;
	}
	cfs_tree_stats(c->d->tree, &after);
	b = cfs_json_ok();
	cfs_json_int(b, "nodes_added", (int64_t)(after.nodes - before.nodes));
	return cfs_json_finish(b);
}

struct cfs_cmd {
	const char *name;
	char *(*fn)(struct cfs_control *c, const char *args);
	bool whole_line; /* gets the whole line (spec generators), not what follows the name */
};

static const struct cfs_cmd cfs_cmds[] = {
	{"ping", cmd_ping, false},	   {"stats", cmd_stats, false},
	{"limits", cmd_limits, false},	   {"mode", cmd_mode, false},
	{"resolve", cmd_resolve, false},   {"dump", cmd_dump, false},
	{"fault", cmd_fault, false},	   {"unmount", cmd_unmount, false},
	{"drop", cmd_drop, false},
#define CFS_CTL_SPEC(name, ...) {#name, cmd_generate, true},
	CFS_SPEC_KEYWORDS(CFS_CTL_SPEC) /* every spec keyword, as a line */
#undef CFS_CTL_SPEC
};

char *cfs_control_handle(struct cfs_control *c, const char *line, size_t len)
{
	char *req, *args, *e;

	if (memchr(line, '\0', len))
		return cfs_json_error("request holds a NUL byte");
	while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	req = g_strndup(line, len);
	args = req + strspn(req, " \t");
	size_t n = strcspn(args, " \t");
	for (size_t i = 0; i < G_N_ELEMENTS(cfs_cmds); i++) {
		if (strlen(cfs_cmds[i].name) != n || strncmp(args, cfs_cmds[i].name, n) != 0)
			continue;
		const char *rest = args + n + strspn(args + n, " \t");
		char *reply = cfs_cmds[i].fn(c, cfs_cmds[i].whole_line ? args : rest);
		g_free(req);
		return reply;
	}
	e = n ? cfs_json_error("unknown command: %.*s", (int)(n > 64 ? 64 : n), args)
	      : cfs_json_error("empty request");
	g_free(req);
	return e;
}

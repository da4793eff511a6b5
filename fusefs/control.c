/*
 * The control socket. Clients are non-blocking and served by the daemon's pollcore loop:
 * input is buffered up to one line of CFS_CTL_MAX_LINE, replies up to CFS_CTL_MAX_PENDING
 * unread bytes, so neither a silent nor a flooding client can stall the mount or grow the
 * daemon without bound. Replies are built by control_cmds.c.
 *
 * Two replies are not built at once. A request that queued kernel cache invalidations (mode,
 * limits, generators) is answered once the notifier delivered them, so the next syscall sees
 * the change; a dump streams, a piece each time the socket takes the last one. Meanwhile the
 * loop serves FUSE and other clients, and this client's further requests wait unread.
 */
#include "control_int.h"
#include "json.h"
#include "notify.h"

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
	if (reply && after != before && c->wake_fd >= 0 &&
	    !cfs_notify_delivered(n, CFS_WAIT_CONTROL, after, true)) {
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
		cfs_client_reply(cl,
				 cfs_json_error("request longer than %d bytes", CFS_CTL_MAX_LINE));
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
	*cl = (struct cfs_client){
	    .ctl = c, .fd = cfd, .in = g_string_new(NULL), .out = g_string_new(NULL)};
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
		if (cl->held &&
		    cfs_notify_delivered(c->d->notifier, CFS_WAIT_CONTROL, cl->ticket, true))
			g_array_append_val(ready, cl->fd);
	}
	/* sending may close a client: look each up again, outside the iteration */
	for (guint i = 0; i < ready->len; i++) {
		struct cfs_client *cl =
		    g_hash_table_lookup(c->clients, GINT_TO_POINTER(g_array_index(ready, int, i)));
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

int cfs_control_start(struct cfs_control **out, struct cfs_daemon *d, struct pc_loop *loop, int fd,
		      const char *path)
{
	struct cfs_control *c;
	int err = 0;

	c = g_new0(struct cfs_control, 1);
	*c = (struct cfs_control){
	    .d = d, .loop = loop, .fd = fd, .path = g_strdup(path), .wake_fd = -1};
	c->clients = g_hash_table_new_full(NULL, NULL, NULL, cfs_client_free);
	pc_timer_init(&c->resume, cfs_on_resume, c);
	if (fd >= 0)
		err = pc_io_add(loop, fd, POLLIN, cfs_on_accept, c);
	if (!err && fd >= 0 && cfs_notify_wake_fd(d->notifier, CFS_WAIT_CONTROL) >= 0) {
		err = pc_io_add(loop, cfs_notify_wake_fd(d->notifier, CFS_WAIT_CONTROL), POLLIN,
				cfs_on_delivered, c);
		if (!err)
			c->wake_fd = cfs_notify_wake_fd(d->notifier, CFS_WAIT_CONTROL);
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

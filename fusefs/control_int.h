/* Internal to the control socket: control.c serves clients, control_cmds.c answers them. */
#ifndef CHAINFS_CONTROL_INT_H
#define CHAINFS_CONTROL_INT_H

#include "control.h"
#include "spec.h"

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

struct cfs_client {
	struct cfs_control *ctl;
	int fd;
	GString *in, *out;
	char *held;		      /* a reply waiting for the invalidations its request queued */
	uint64_t ticket;	      /* ... up to this one (notify.h) */
	struct cfs_spec_dumper *dump; /* a dump being streamed */
	bool closing;		      /* send what is pending, then close */
};

struct cfs_control {
	struct cfs_daemon *d;
	struct pc_loop *loop;
	int fd;
	char *path;
	GHashTable *clients;	 /* fd -> struct cfs_client */
	struct pc_stats pc_base; /* `stats reset` subtracts this */
	uint64_t ring_base;	 /* ... and this from the ring's requests */
	uint64_t refused, accepted;
	uint64_t accept_pauses;	   /* times accept ran out of fds and the listener was set aside */
	bool paused;		   /* ... and still is */
	bool pause_told;	   /* logged once until an accept succeeds again */
	struct pc_timer resume;	   /* polls the listener again after CFS_CTL_ACCEPT_RETRY_MS */
	struct cfs_client *asking; /* whose request is being answered (NULL: cfs_control_handle) */
	int wake_fd;		   /* the notifier's: delivered what a held reply waits for */
};

/* The next piece of CL's streamed dump into its output; at the end the dump is freed
 * (control_cmds.c). */
void cfs_dump_piece(struct cfs_client *cl);

#endif

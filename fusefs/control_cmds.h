/*
 * The control socket's commands, in one list for everything that names them: the daemon's
 * dispatch (control_cmds.c, where cmd_NAME answers NAME) and chainfsctl's usage and
 * --commands, which the bash completion reads (tools/completion.bash). The spec keywords
 * are commands too (CFS_SPEC_KEYWORDS, spec.h).
 * X(NAME, USAGE): USAGE is what chainfsctl --help prints after the name.
 */
#ifndef CHAINFS_CONTROL_CMDS_H
#define CHAINFS_CONTROL_CMDS_H

/* clang-format off */
#define CFS_CTL_COMMANDS(X)                                                                 \
	X(ping, "")                                                                         \
	X(stats, "[reset]")                                                                 \
	X(limits, "[nest=N] [total=N]")                                                     \
	X(mode, "[kernel|collapse|server] (no argument: the mode)")                         \
	X(resolve, "[-l] [nofollow] PATH")                                                  \
	X(dump, "")                                                                         \
	X(drop, "(the mount's kernel caches, for cold runs)")                               \
	X(fault, "add|release|remove|list|log|clear (add op=OP path=GLOB errno=E[|E...]|"  \
		 "short=N|nowrite|corrupt=zero|random|flip [bytes=N]|attr=F:V[,F:V...]|"    \
		 "kill=SIG [errno=E]|"                                                      \
		 "delay=MS|hold|hold=MS|change=LINE[;LINE...] [at=OFF,len=N] [prob=P] "     \
		 "[seed=S] [once|every|nth=N|count=N] [after=N] [up=MS down=MS] [to=GLOB] " \
		 "[pid=N] [uid=N] [comm=NAME] "                                             \
		 "[when=before|after] (change= last); release ID; remove ID)")              \
	X(record, "start FILE|replace FILE|stop (no argument: the status)")                 \
	X(unmount, "")
/* clang-format on */

#endif

#!/usr/bin/env python3
"""Kernel cache coherence, as a property (driven by tests/coherence.sh, which mounts MNT).

MNT is mounted with hour-long entry and attribute timeouts, so the kernel answers from its
caches whatever it was not told to forget. Random changes, drawn from one seeded PRNG, go
through the mount (system calls) and through the control socket (spec lines, `mode`,
`limits`). After each change the daemon's own `dump` is mounted fresh on REF in the same
follow mode and limits, and every path (a sample when the tree is large) is asked the same
questions on both: lstat (kind, mode, size, nlink, owner, mtime, ctime, inode class),
readlink, stat -L, the sorted listing of a directory (also through a link to one), the bytes of
a small file. A fresh mount has nothing cached, so any difference is a cache the daemon did
not invalidate (or a dump that does not reproduce the tree). The check's own walk is the warm
walk for the next change: everything it asked stays cached for an hour.

Choices depend only on the seed and on the dumped tree (the truth), so a seed replays exactly.
On a difference: the step, the steps so far, the path and both answers; then `drop` resyncs
the caches (and a recheck tells a stale cache from a wrong tree) and the run goes on.
Last line: "result PASSED FAILED" (steps whose check passed or failed).
"""
import errno
import os
import random
import stat
import subprocess
import sys
import time

SAMPLE = 300  # paths compared per check at most (a seeded sample past that)
MAX_DEPTH = 8
SHOW_STEPS = 60  # steps printed with a failure (the replay command gives them all)
NAMES = ["a", "b", "new2", "x y", "sp ace", 'q"t', "it's", "\u00fc", "back\\sl", "#h", "=eq",
         "-d", "l"]
MODES = ["kernel", "collapse", "server"]
LIMITS = [(40, 40), (1, 2), (2, 3), (3, 5), (0, 0), (5, 1)]


def die(msg):
    print("coherence.py: " + msg, file=sys.stderr)
    sys.exit(2)


# --- the spec language (chainfs-spec(5)): enough to read `dump` and to write lines --------------
def spec_words(line):
    """A spec line's words, quotes and escapes undone (str, surrogateescape)."""
    words, cur, inword, i, b = [], bytearray(), False, 0, os.fsencode(line)
    esc = {ord("\\"): b"\\", ord('"'): b'"', ord("n"): b"\n", ord("t"): b"\t",
           ord("r"): b"\r", ord("0"): b"\0"}
    quoted = False
    while i < len(b):
        c = b[i]
        if quoted:
            if c == ord('"'):
                quoted = False
            elif c == ord("\\"):
                if b[i + 1] == ord("x"):
                    cur.append(int(b[i + 2:i + 4], 16))
                    i += 2
                else:
                    cur += esc[b[i + 1]]
                i += 1
            else:
                cur.append(c)
        elif c in (ord(" "), ord("\t")):
            if inword:
                words.append(os.fsdecode(bytes(cur)))
                cur, inword = bytearray(), False
        elif c == ord('"'):
            quoted, inword = True, True
        elif c == ord("#") and not inword:
            break
        else:
            cur.append(c)
            inword = True
        i += 1
    if inword:
        words.append(os.fsdecode(bytes(cur)))
    return words


def q(s, rng=None):
    """S as one spec word: quoted when it must be (or, given RNG, sometimes anyway)."""
    b = os.fsencode(s)
    plain = all(33 <= c < 127 and c not in b'"\\#=' for c in b) and b
    if plain and (rng is None or rng.random() < 0.5):
        return s
    out = bytearray(b'"')
    for c in b:
        if c in b'"\\':
            out += b"\\" + bytes([c])
        elif c < 32 or c == 127:
            out += b"\\x%02x" % c
        else:
            out.append(c)
    return os.fsdecode(bytes(out + b'"'))


def parse_dump(text):
    """{path: kind} of the dumped tree; kind dir, file, link (a hardlink line: its source's)."""
    kinds = {}
    for line in text.splitlines():
        w = spec_words(line)
        if len(w) < 2:
            continue
        if w[0] == "hardlink":
            kinds[w[1]] = kinds.get(w[2], "file")
        elif w[0] in ("dir", "file", "link", "fifo", "socket", "dev"):
            kinds[w[1]] = w[0]
    return kinds


# --- the questions, asked the same way of both mounts --------------------------------------------
def err_name(e):
    return errno.errorcode.get(e.errno, str(e.errno))


def answers(root, p, classes):
    """[(question, answer)] for tree path P under ROOT; CLASSES maps an inode to its first path."""
    full = root + p if p != "/" else root
    out = []
    try:
        st = os.lstat(full)
    except OSError as e:
        return [("lstat", err_name(e))], None
    cls = classes.setdefault(st.st_ino, p)
    out.append(("lstat", "%s %o size=%d nlink=%d uid=%d gid=%d mtime=%d ctime=%d ino~%s" % (
        stat.filemode(st.st_mode)[0], stat.S_IMODE(st.st_mode), st.st_size, st.st_nlink,
        st.st_uid, st.st_gid, st.st_mtime_ns, st.st_ctime_ns, cls)))
    if stat.S_ISLNK(st.st_mode):
        try:
            t = os.readlink(full)
            if t == root or t.startswith(root + "/"):
                t = "$MNT" + t[len(root):]  # both mountpoints have names of one length
            out.append(("readlink", t))
        except OSError as e:
            out.append(("readlink", err_name(e)))
        try:
            fs = os.stat(full)
            out.append(("stat -L", "%s %o size=%d" % (stat.filemode(fs.st_mode)[0],
                                                     stat.S_IMODE(fs.st_mode), fs.st_size)))
            if stat.S_ISDIR(fs.st_mode):
                out.append(("ls -L", listing(full + "/")))
            elif stat.S_ISREG(fs.st_mode) and fs.st_size <= 4096:
                out.append(("cat -L", content(full)))
        except OSError as e:
            out.append(("stat -L", err_name(e)))
    elif stat.S_ISDIR(st.st_mode):
        out.append(("ls", listing(full)))
    elif stat.S_ISREG(st.st_mode) and st.st_size <= 4096:
        out.append(("cat", content(full)))
    return out, st


def kind_of(e):
    """An entry's kind as the listing gives it (d_type; lstat only when that is unknown)."""
    if e.is_symlink():
        return "l"
    if e.is_dir(follow_symlinks=False):
        return "d"
    return "f" if e.is_file(follow_symlinks=False) else "o"


def listing(d):
    """Names and kinds: in server mode a link's entry has its target's kind, so a kept
    listing can go stale in kinds alone."""
    try:
        with os.scandir(d) as it:
            return " / ".join(sorted(e.name + ":" + kind_of(e) for e in it))
    except OSError as e:
        return err_name(e)


def content(f):
    try:
        with open(f, "rb") as fh:
            return repr(fh.read(4097))
    except OSError as e:
        return err_name(e)


def ref_paths(root):
    """Paths to ask, breadth first from the fresh mount at ROOT: into every directory, and
    once more into a directory already seen (server mode shows a link to one as one)."""
    paths, seen, queue = [], set(), [("/", 0, 0)]
    while queue:
        p, depth, crossed = queue.pop(0)
        paths.append(p)
        try:
            st = os.lstat(root + p if p != "/" else root)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or depth >= MAX_DEPTH:
            continue
        if st.st_ino in seen:
            crossed += 1
            if crossed > 1:
                continue
        seen.add(st.st_ino)
        try:
            names = sorted(os.listdir(root + p if p != "/" else root))
        except OSError:
            continue
        for n in names:
            queue.append(((p if p != "/" else "") + "/" + n, depth + 1, crossed))
        if len(paths) + len(queue) > 20 * SAMPLE:
            break
    return paths


def dir_aliases(root, paths, kinds):
    """{directory: [paths through links that show it]} among PATHS of the fresh mount at ROOT
    (server mode: a link to a directory is one, with the directory's inode)."""
    by_ino = {}
    for p in paths:
        try:
            st = os.lstat(root + p if p != "/" else root)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            by_ino.setdefault(st.st_ino, []).append(p)
    out = {}
    for group in by_ino.values():
        real = [p for p in group if kinds.get(p) == "dir" or p == "/"]
        if len(real) == 1 and len(group) > 1:
            out[real[0]] = sorted(p for p in group if p != real[0])
    return out


# --- the run ---------------------------------------------------------------------------------------
class Run:
    def __init__(self, a):
        self.seed, self.steps = int(a["seed"]), int(a["steps"])
        self.mnt, self.ref, self.sock = a["mnt"], a["ref"], a["sock"]
        self.chainfs, self.ctl, self.tmp = a["chainfs"], a["ctl"], a["tmp"]
        self.replay = a["replay"]
        self.fuse_mount, self.mainopts = a["fuse_mount"], a["mainopts"]
        self.rng = random.Random(self.seed)
        self.mode, self.limits = "kernel", (40, 40)
        self.log = []
        self.passed = self.failed = 0
        self.kinds = {}
        self.aliases = {}  # server mode: directory -> the paths through links that show it
        self.clock = 1_700_000_000

    def ctlcmd(self, *args, check=False):
        r = subprocess.run([self.ctl, "-s", self.sock, *args], capture_output=True, text=True,
                           errors="surrogateescape", timeout=60)
        if check and r.returncode != 0:
            die("chainfsctl %s: %s" % (" ".join(args), r.stderr.strip() or r.stdout.strip()))
        return r

    def dump(self):
        return self.ctlcmd("dump", check=True).stdout

    # fresh mount of SPEC on REF, in the mode and limits MNT has now
    def mount_ref(self, spec):
        nest, total = self.limits
        opts = "follow=%s,max_nest=%d,max_total=%d,ctl=none" % (self.mode, nest, total)
        r = subprocess.run([self.chainfs, "-o", opts, spec, self.ref], capture_output=True,
                           text=True, timeout=30)
        if r.returncode != 0:
            die("mounting the dump: %s" % r.stderr.strip())

    def remount_main(self):
        subprocess.run([self.fuse_mount, "-u", self.mnt], capture_output=True, timeout=60)
        opts = "follow=%s,max_nest=%d,max_total=%d,%s" % (self.mode, *self.limits, self.mainopts)
        r = subprocess.run([self.fuse_mount, "-o", opts, os.path.join(self.tmp, "dump.spec"),
                            self.mnt], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, CHAINFS_LOG=self.mnt + ".log"))
        if r.returncode != 0:
            die("remounting the dump: %s" % r.stderr.strip())

    def unmount_ref(self):
        for _ in range(100):
            if subprocess.run(["umount", self.ref], capture_output=True, timeout=30).returncode == 0:
                return
            time.sleep(0.05)
        die("cannot unmount " + self.ref)

    # --- choices -----------------------------------------------------------------------------
    def of_kind(self, *kinds):
        ps = sorted(p for p, k in self.kinds.items() if k in kinds)
        return self.rng.choice(ps) if ps else None

    def any_path(self):
        ps = sorted(p for p in self.kinds if p != "/")
        return self.rng.choice(ps) if ps else "/a"

    def new_path(self, fresh_dirs=False):
        """A name in a directory: mostly new, sometimes taken (the change then fails)."""
        d = self.of_kind("dir") or "/"
        if fresh_dirs and self.rng.random() < 0.3:  # missing parents, made by a spec line
            d = (d if d != "/" else "") + "/" + self.rng.choice(NAMES) + " d"
        base = (d if d != "/" else "") + "/"
        name = self.rng.choice(NAMES)
        if base + name in self.kinds and self.rng.random() < 0.8:
            name += str(self.rng.randrange(100))
        return base + name

    def link_target(self, at):
        r = self.rng.random()
        p = self.any_path()
        if r < 0.35:  # relative, same directory or below
            d = os.path.dirname(at)
            return os.path.relpath(p, d) if p.startswith(d.rstrip("/") + "/") else os.path.basename(p)
        if r < 0.6:
            return p  # from the tree's root
        if r < 0.8:
            return os.path.relpath(p, os.path.dirname(at))  # with ".."
        return self.rng.choice(["nowhere", "../nowhere", "/a/nowhere", ".", ".."])

    def content(self):
        return "".join(self.rng.choice("abc xyz\n\"\\") for _ in range(self.rng.randrange(40)))

    # --- changes: (description, thunk) ----------------------------------------------------------
    def m(self, p):
        return self.mnt + p

    def change(self):
        rng = self.rng
        r = rng.random()
        if r < 0.55:
            return self.change_syscall(rng.randrange(11))
        if r < 0.90:
            return self.change_spec(rng.randrange(7))
        if rng.random() < 0.6:
            mode = rng.choice([x for x in MODES if x != self.mode])
            return "mode %s" % mode, lambda: self.ctl_mode(mode)
        lim = rng.choice(LIMITS)
        return "limits nest=%d total=%d" % lim, lambda: self.ctl_limits(lim)

    def ctl_mode(self, mode):
        self.ctlcmd("mode", mode, check=True)
        self.mode = mode

    def ctl_limits(self, lim):
        self.ctlcmd("limits", "nest=%d" % lim[0], "total=%d" % lim[1], check=True)
        self.limits = lim

    def via(self, p):
        """P, or in server mode often the same name through a link to its directory (a
        change made through one name must show under every other)."""
        d = os.path.dirname(p) or "/"
        names = self.aliases.get(d)
        if not names or self.rng.random() < 0.4:
            return p
        return self.rng.choice(names).rstrip("/") + "/" + os.path.basename(p)

    def change_syscall(self, k):
        rng, m, v = self.rng, self.m, self.via
        if k == 0:
            p = v(self.new_path())
            return "mkdir %r" % p, lambda: os.mkdir(m(p), rng.choice([0o755, 0o700]))
        if k == 1:
            p = v(self.of_kind("file") if rng.random() < 0.5 else self.new_path())
            data = self.content().encode()
            return "write(O_CREAT|O_TRUNC) %r %r" % (p, data), lambda: write(m(p), data, False)
        if k == 2:
            p = v(self.of_kind("file") or "/nofile")
            data = self.content().encode()
            return "write(O_APPEND) %r %r" % (p, data), lambda: write(m(p), data, True)
        if k == 3:
            p = v(self.of_kind("file") or "/nofile")
            n = rng.choice([0, 1, 7, 100, 5000])
            return "truncate %r %d" % (p, n), lambda: os.truncate(m(p), n)
        if k == 4:
            p = self.new_path()
            t = self.link_target(p)
            p = v(p)
            return "symlink %r -> %r" % (p, t), lambda: os.symlink(t, m(p))
        if k == 5:
            src, p = v(self.of_kind("file", "link") or "/nofile"), v(self.new_path())
            return "link %r %r" % (src, p), lambda: os.link(m(src), m(p), follow_symlinks=False)
        if k == 6:
            src = self.any_path()
            same = self.of_kind(self.kinds.get(src, "file"))
            dst = same if same and same != src and rng.random() < 0.5 else self.new_path()
            src, dst = v(src), v(dst)
            return "rename %r %r" % (src, dst), lambda: os.rename(m(src), m(dst))
        if k == 7:
            p = v(self.of_kind("file", "link") or "/nofile")
            return "unlink %r" % p, lambda: os.unlink(m(p))
        if k == 8:
            p = v(self.of_kind("dir") or "/nodir")
            return "rmdir %r" % p, lambda: os.rmdir(m(p))
        if k == 9:
            p = v(self.of_kind("dir", "file") or "/")
            mode = rng.choice([0o755, 0o700, 0o644, 0o600, 0o555, 0o4755, 0o2775])
            return "chmod %r %o" % (p, mode), lambda: os.chmod(m(p), mode)
        p = v(self.any_path())
        self.clock += rng.randrange(1, 1000)
        t = self.clock if rng.random() < 0.7 else None
        return "touch -h %r %s" % (p, t), lambda: os.utime(
            m(p), None if t is None else (t, t), follow_symlinks=False)

    def change_spec(self, k):
        rng = self.rng
        if k == 0:
            p = self.new_path(True)
            extra = [q(self.content())] if rng.random() < 0.7 else []
            if rng.random() < 0.3:
                extra.append("mode=0%o" % rng.choice([0o600, 0o640, 0o755]))
            line = " ".join(["file", q(p, rng)] + extra)
        elif k == 1:
            line = "dir " + q(self.new_path(True), rng)
        elif k == 2:
            p = self.new_path(True)
            line = "link %s %s" % (q(p, rng), q(self.link_target(p)))
        elif k == 3:
            src = self.of_kind("file", "link") or "/nofile"
            line = "hardlink %s %s" % (q(self.new_path(True), rng), q(src, rng))
        elif k == 4:
            p = self.of_kind("file") or "/nofile"
            line = "append %s %s" % (q(p, rng), q(self.content() or "x"))
        elif k == 5:
            p = self.new_path(True)
            line = rng.choice(["chain %s %d %s" % (q(p, rng), rng.randrange(1, 5),
                                                   q(self.any_path())),
                               "loop %s %d" % (q(p, rng), rng.randrange(1, 3))])
        else:
            self.clock += rng.randrange(1, 1000)
            line = "dir / mode=0%o mtime=%d" % (rng.choice([0o755, 0o775, 0o711]), self.clock)
        return "ctl %s" % line, lambda: self.ctl_line(line)

    def ctl_line(self, line):
        r = self.ctlcmd(line)
        if r.returncode != 0:
            raise OSError(0, (r.stdout + r.stderr).strip())

    # --- the check ------------------------------------------------------------------------------
    def reference(self, step):
        spec = os.path.join(self.tmp, "dump.spec")
        text = self.dump()
        with open(spec, "w", errors="surrogateescape") as f:
            f.write(text)
        self.kinds = parse_dump(text)
        self.mount_ref(spec)
        try:
            paths = ref_paths(self.ref)
            self.aliases = dir_aliases(self.ref, paths, self.kinds) if self.mode == "server" else {}
            if len(paths) > SAMPLE:
                paths = sorted(random.Random(self.seed * 1000003 + step).sample(paths, SAMPLE))
            rc, ref = {}, {}
            for p in paths:
                ref[p] = answers(self.ref, p, rc)[0]
        finally:
            self.unmount_ref()
        return paths, ref

    def compare(self, paths, ref):
        mc, diffs = {}, []
        for p in paths:
            got = answers(self.mnt, p, mc)[0]
            if got != ref[p]:
                g, w = dict(got), dict(ref[p])
                for key in sorted(set(g) | set(w)):
                    if g.get(key) != w.get(key):
                        diffs.append((p, key, g.get(key, "-"), w.get(key, "-")))
        return diffs

    def report(self, step, diffs):
        print("FAIL: step %d (seed=%d, mode %s, limits nest=%d total=%d): %d differences" % (
            step, self.seed, self.mode, self.limits[0], self.limits[1], len(diffs)))
        if self.failed <= 3:
            first = max(0, len(self.log) - SHOW_STEPS)
            print("  steps so far%s:" % (" (the last %d)" % SHOW_STEPS if first else ""))
            for i, s in enumerate(self.log[first:], first + 1):
                print("   %4d %s" % (i, s))
        for p, key, got, want in diffs[:8]:
            print("  path %r, %s:\n    mount:      %s\n    fresh dump: %s" % (p, key, got, want))
        print("  replay: %s" % self.replay.replace("@STEPS@", str(step)))

    def run(self):
        paths, ref = self.reference(0)
        diffs = self.compare(paths, ref)
        if diffs:  # the start: nothing is stale yet, so the dump does not reproduce the tree
            self.failed += 1
            self.report(0, diffs)
            print("result %d %d" % (self.passed, self.failed))
            return
        for step in range(1, self.steps + 1):
            what, thunk = self.change()
            try:
                thunk()
                res = "ok"
            except OSError as e:
                res = err_name(e) if e.errno else "error: " + e.strerror
            self.log.append("%s: %s" % (what, res))
            paths, ref = self.reference(step)
            diffs = self.compare(paths, ref)
            if not diffs:
                self.passed += 1
                continue
            self.failed += 1
            self.report(step, diffs)
            self.ctlcmd("drop", check=True)  # resync, and tell a stale cache from a wrong tree
            after = self.compare(paths, ref)
            if not after:
                print("  after `drop`: the mount answers as the fresh dump (a stale kernel cache)")
                continue
            # the daemon answers cold otherwise than its dump: the dump does not reproduce
            # the tree. Go on from the dump, so that this difference is counted once.
            print("  after `drop`: %d differences remain (not a cache: the daemon's tree and "
                  "its dump differ); remounted from the dump" % len(after))
            self.remount_main()
        print("result %d %d" % (self.passed, self.failed))


def write(path, data, append):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC), 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


if __name__ == "__main__":
    args = dict(a.split("=", 1) for a in sys.argv[1:])
    sys.stdout.reconfigure(line_buffering=True, errors="backslashreplace")
    Run(args).run()

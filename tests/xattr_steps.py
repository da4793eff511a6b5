"""xattr_steps.py ROOT PHASE [LINKS]: extended-attribute steps on a tree (tests/mount_xattr.sh),
one line per step: the call and its outcome (the value, the names, the length, or the errno's
name), so that two filesystems can be compared line by line. The calls are the raw syscalls
(through ctypes), with the buffer sizes and flags given, so the size edges are the caller's.
PHASE: setup (as root: the nodes), root (every namespace, flag and size edge on every kind),
nobody (the rules for another uid, run as 65534 after root's phase), show (every node's
attributes, a link's own, with their values: for comparing a tree with its copy). LINKS=no leaves out the
steps on a link itself (lsetxattr...), which server mode shows as its target by design."""
import ctypes
import errno
import hashlib
import os
import socket
import stat
import struct
import sys

libc = ctypes.CDLL(None, use_errno=True)
XATTR_CREATE, XATTR_REPLACE = 1, 2
root, phase = sys.argv[1], sys.argv[2]
links = len(sys.argv) < 4 or sys.argv[3] != "no"
os.chdir(root)


def out(what, result):
    print(f"{what} => {result}")


def call(fn, *args):
    r = fn(*args)
    return r if r >= 0 else errno.errorcode[ctypes.get_errno()]


def setx(path, name, value, flags=0, follow=True):
    fn = libc.setxattr if follow else libc.lsetxattr
    v = value.encode() if isinstance(value, str) else value
    r = call(fn, path.encode(), name.encode(), v, len(v), flags)
    out(f"set{'' if follow else ' -h'} {path} {name[:40]} {len(v)}B flags={flags}", r)


def getx(path, name, size=65536, follow=True):
    fn = libc.getxattr if follow else libc.lgetxattr
    buf = ctypes.create_string_buffer(max(size, 1))
    r = call(fn, path.encode(), name.encode(), buf if size else None, size)
    shown = r if isinstance(r, str) or not size else buf.raw[:r][:40]
    out(f"get{'' if follow else ' -h'} {path} {name[:40]} size={size}", shown)


def listx(path, size=65536, follow=True):
    fn = libc.listxattr if follow else libc.llistxattr
    buf = ctypes.create_string_buffer(max(size, 1))
    r = call(fn, path.encode(), buf if size else None, size)
    if isinstance(r, int) and size:
        r = ",".join(n.decode()[:40] for n in buf.raw[:r].split(b"\0")[:-1])
    out(f"list{'' if follow else ' -h'} {path} size={size}", r)


def removex(path, name, follow=True):
    fn = libc.removexattr if follow else libc.lremovexattr
    out(f"remove{'' if follow else ' -h'} {path} {name[:40]}", call(fn, path.encode(), name.encode()))


def setup():
    open("f", "w").close()
    os.mkdir("d")
    os.symlink("f", "l")
    os.mkfifo("p")
    os.mknod("c", 0o644 | stat.S_IFCHR, os.makedev(1, 3))
    socket.socket(socket.AF_UNIX).bind("s")
    os.mkdir("o", 0o777)
    os.chmod("o", 0o777)
    os.mkdir("sd")
    os.chmod("sd", 0o1777)
    os.chmod("d", 0o777)
    for p in ("f", "d"):
        for ns in ("user", "trusted", "security"):
            setx(p, f"{ns}.keep", f"{ns} of {p}")


def namespaces(path, follow):
    for ns in ("user", "trusted", "security", "system", "foo", "user.", ""):
        a = f"{ns}.a" if ns not in ("user.", "") else ns
        setx(path, a, "v1", 0, follow)
        getx(path, a, follow=follow)
        setx(path, a, "v2", XATTR_CREATE, follow)
        setx(path, f"{ns}.b", "v2", XATTR_REPLACE, follow)
        setx(path, a, "v3", XATTR_REPLACE, follow)
        getx(path, a, follow=follow)
        getx(path, a, 0, follow)
        getx(path, a, 1, follow)
        listx(path, follow=follow)
        removex(path, a, follow)
        removex(path, a, follow)
        getx(path, a, follow=follow)
    setx(path, "security.e", "", 0, follow)  # an empty value is a value
    getx(path, "security.e", follow=follow)
    listx(path, 0, follow)
    listx(path, 3, follow)
    removex(path, "security.e", follow)


def edges():
    setx("f", "user." + "n" * 250, "x")  # 255 bytes: the longest name
    setx("f", "user." + "n" * 251, "x")
    setx("f", "user.big", b"\1" * 65536)
    setx("f", "user.big2", b"\1" * 65537)
    getx("f", "user.big", 65536)
    getx("f", "user.big", 65535)
    getx("f", "user.big", 0)
    setx("f", "user.big", b"\2" * 3, XATTR_REPLACE)
    getx("f", "user.big")
    removex("f", "user.big")
    removex("f", "user." + "n" * 250)
    # a listing past XATTR_LIST_MAX (64 KiB): E2BIG, the length alone still answers
    for i in range(300):
        r = call(libc.setxattr, b"d", b"user.%03d" % i + b"x" * 240, b"v", 1, 0)
        if r != 0:
            out(f"set d name {i}", r)
    listx("d", 0)
    listx("d", 65536)
    for i in range(300):
        call(libc.removexattr, b"d", b"user.%03d" % i + b"x" * 240)
    listx("d")


def root_phase():
    kinds = ["f", "d", "p", "c", "s"]
    for k in kinds:
        namespaces(k, True)
    if links:
        namespaces("l", False)
    # a link followed: its target's attributes, in every mode
    getx("l", "user.keep")
    listx("l")
    setx("l", "user.via", "link")
    getx("f", "user.via")
    removex("l", "user.via")
    edges()
    open("o/nf", "w").close()
    os.chown("o/nf", 65534, 65534)
    setx("o/nf", "trusted.root", "r")
    setx("sd", "user.s", "s")
    for p in ("f", "d", "o/nf"):
        listx(p)
    # a file capability goes when the file is chowned or written (the kernel removes it)
    open("cap", "w").close()
    capv = struct.pack("<5I", 0x02000001, 1 << 10, 0, 0, 0)  # VFS_CAP_REVISION_2, effective
    setx("cap", "security.capability", capv)
    listx("cap")
    os.chown("cap", 1, 1)
    listx("cap")
    setx("cap", "security.capability", capv)
    with open("cap", "a") as f:
        f.write("x")
    listx("cap")
    # kept for the dump: a value longer than a dump line's piece, bytes of every value
    setx("d", "user.long", bytes(range(256)) * 40)
    setx("l", "trusted.link", "own", follow=links)


def nobody_phase():
    for p in ("f", "d"):
        getx(p, "user.keep")
        getx(p, "trusted.keep")
        getx(p, "security.keep")
        listx(p)
        setx(p, "user.x", "1")
        setx(p, "trusted.x", "1")
        setx(p, "security.x", "1")
        removex(p, "user.keep")
        removex(p, "trusted.keep")
    setx("o/nf", "user.mine", "1")  # the owner, with write permission
    getx("o/nf", "user.mine")
    getx("o/nf", "trusted.root")
    listx("o/nf")
    setx("o/nf", "trusted.x", "1")
    removex("o/nf", "user.mine")
    setx("sd", "user.x", "1")  # a sticky directory not its own: EPERM
    getx("sd", "user.s")
    setx("p", "user.x", "1")
    getx("p", "user.x")


def show():
    for top, dirs, files in sorted(os.walk(".")):
        for n in sorted(dirs + files) + ([] if top != "." else ["."]):
            p = os.path.normpath(os.path.join(top, n))
            for a in sorted(os.listxattr(p, follow_symlinks=False)):
                v = os.getxattr(p, a, follow_symlinks=False)
                print(p, a, len(v), hashlib.sha1(v).hexdigest())


{"setup": setup, "root": root_phase, "nobody": nobody_phase, "show": show}[phase]()

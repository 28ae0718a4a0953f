"""attacker.py - what another local user tries against the device book
(guarantee_attacks.sh, guarantee.sh), run as that user. One command a line
on stdin, one answer a line ("ok", or "err NAME" with the errno's name);
its locks stay until its input ends (or it is killed).

  lock BOOK START LEN   an OFD read lock (all this user can take on a
                        0644 file: a write lock needs a descriptor open for
                        writing); LEN 0: to the end and beyond
  wlock BOOK START LEN  an OFD write lock (refused: EBADF)
  create PATH           a new file at PATH (O_CREAT | O_EXCL, 0666)
  open-rw PATH          open PATH for writing
  write PATH OFF HEX    overwrite bytes of PATH
  mmap-rw PATH          map PATH writable and shared
  rm PATH               remove PATH
  semop ID N            add N to semaphore 0 of set ID (SEM_UNDO)
  forge PATH UUID CAP MODE  a forged device book: this version's header
                        for UUID (32 hex), the capacity CAP, mode MODE (octal)
  churn BOOK N          N rounds of: lock a random byte of the book and of
                        the board, try to write the book, unlock
"""
import ctypes
import errno
import fcntl
import mmap
import os
import random
import struct
import sys

BOARD_BASE = 1 << 40
BOOK_SIZE = 4096 + 64 * 320
fds = []


def flock(kind, start, length):
    return struct.pack("hhqqi4x", kind, os.SEEK_SET, start, length, 0)


def lock(path, start, length, kind=fcntl.F_RDLCK):
    fd = os.open(path, os.O_RDONLY)
    fds.append(fd)
    fcntl.fcntl(fd, fcntl.F_OFD_SETLK, flock(kind, start, length))


def forge(path, uuid, cap, mode):
    hdr = struct.pack("<QIIQII16sQQ", 0x3242444c54434d56, 2, 4096, BOOK_SIZE, 64, 8,
                      bytes.fromhex(uuid), cap, 0)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, mode)
    os.write(fd, hdr + bytes(BOOK_SIZE - len(hdr)))
    os.fchmod(fd, mode)
    fds.append(fd)


def semop(semid, n):
    libc = ctypes.CDLL(None, use_errno=True)
    buf = struct.pack("HhH", 0, n, 0x1000)  # SEM_UNDO
    if libc.semop(semid, buf, 1) != 0:
        raise OSError(ctypes.get_errno(), "semop")


def churn(book, n):
    rng = random.Random(os.getpid())
    for _ in range(n):
        held = []
        for start in (rng.randrange(0, BOOK_SIZE), BOARD_BASE + rng.randrange(0, 1 << 20)):
            fd = os.open(book, os.O_RDONLY)
            try:
                fcntl.fcntl(fd, fcntl.F_OFD_SETLK, flock(fcntl.F_RDLCK, start, 1))
            except OSError:
                pass
            held.append(fd)
        try:
            os.close(os.open(book, os.O_RDWR))
            return "wrote"  # must never happen
        except OSError:
            pass
        for fd in held:
            os.close(fd)
    return None


def run(words):
    cmd, args = words[0], words[1:]
    if cmd == "lock":
        lock(args[0], int(args[1]), int(args[2]))
    elif cmd == "wlock":
        fd = os.open(args[0], os.O_RDONLY)
        fds.append(fd)
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, flock(fcntl.F_WRLCK, int(args[1]), int(args[2])))
    elif cmd == "create":
        fds.append(os.open(args[0], os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666))
    elif cmd == "open-rw":
        fds.append(os.open(args[0], os.O_RDWR))
    elif cmd == "write":
        fd = os.open(args[0], os.O_RDWR)
        os.pwrite(fd, bytes.fromhex(args[2]), int(args[1]))
        os.close(fd)
    elif cmd == "mmap-rw":
        fd = os.open(args[0], os.O_RDONLY)
        mmap.mmap(fd, 4096, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    elif cmd == "rm":
        os.unlink(args[0])
    elif cmd == "semop":
        semop(int(args[0]), int(args[1]))
    elif cmd == "forge":
        forge(args[0], args[1], int(args[2]), int(args[3], 8))
    elif cmd == "churn":
        bad = churn(args[0], int(args[1]))
        if bad:
            return "bad " + bad
    else:
        return "err unknown"
    return "ok"


print("ready %d" % os.getpid(), flush=True)
for line in sys.stdin:
    words = line.split()
    if not words:
        continue
    try:
        out = run(words)
    except OSError as e:
        out = "err " + errno.errorcode.get(e.errno, str(e.errno))
    print(out, flush=True)

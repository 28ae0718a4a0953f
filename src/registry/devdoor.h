/*
 * devdoor.h - the layout of a device book (devbook.h: one book per GPU,
 * shared by every capped process of every user on the machine) and the
 * steps its writer (devbook.c) and its reader (devbook_read.c) share:
 * the door's one check, attaching the segment checked, checking what the
 * segment holds, asking who is alive (devdoor.c).
 *
 *   door     <dir>/vramctl-dev-<32 hex of the UUID>, mode 0666, exactly
 *            VR_DEVDOOR_SIZE bytes: a struct vr_devhdr (the identity, the
 *            segment's id and key), read and written with pread/pwrite
 *            only. Its bytes carry the locks: byte 0 the door's own lock
 *            (held while a segment is found or made), byte 1 the book's
 *            lock, byte VR_DEVDOOR_SIZE + i line i's liveness (OFD read
 *            locks, past the end of the file).
 *   segment  a System V segment of VR_DEVSEG_SIZE bytes, mode 0666: the
 *            header (the same identity, and the guaranteed word), then
 *            VR_DEVBOOK_GROUPS entries, then VR_DEVBOOK_LINES lines.
 */
#ifndef VRAMCTL_REGISTRY_DEVDOOR_H
#define VRAMCTL_REGISTRY_DEVDOOR_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define VR_DEVBOOK_GROUPS 64
#define VR_DEVBOOK_LINES  1024

#define VR_DEVBOOK_MAGIC   0x3142444c54434d56ull /* "VMCTLDB1" */
#define VR_DEVBOOK_VERSION 1u
#define VR_DEVDOOR_SIZE    4096u
#define VR_DEVDOOR_PREFIX  "vramctl-dev-"
/* The door's lock bytes. */
#define VR_DEVDOOR_MAKER_BYTE   0
#define VR_DEVDOOR_LOCK_BYTE    1
#define VR_DEVDOOR_LINE_BYTE(i) ((long long)VR_DEVDOOR_SIZE + (long long)(i))

/* The door's bytes and the segment's header alike. */
struct vr_devhdr {
	uint64_t magic; /* VR_DEVBOOK_MAGIC, stored last at creation */
	uint32_t version;
	uint32_t hdr_size;   /* sizeof(struct vr_devhdr) */
	uint64_t total_size; /* VR_DEVSEG_SIZE */
	uint32_t groups;     /* VR_DEVBOOK_GROUPS */
	uint32_t lines;      /* VR_DEVBOOK_LINES */
	unsigned char uuid[16];
	uint64_t capacity; /* the device's bytes, as its first opener saw them */
	uint64_t shm_key;  /* random, the segment's identity (the door names it) */
	int32_t shm_id;    /* the door's: the segment; -1 before it has one */
	uint32_t creator_uid;
	uint64_t created; /* time(NULL) at creation */
	/* Segment only, written under the book's lock. */
	_Atomic uint64_t guaranteed; /* sum of the used entries' guarantees */
	uint32_t lines_hw;           /* lines ever used are below it */
	uint32_t pad;
	unsigned char spare[32];
};

/* A group that holds a guarantee on the device (128 bytes). */
struct vr_deventry {
	uint32_t used; /* 0 free, 1 used: written last when used, first when freed */
	uint32_t uid;
	int32_t pid; /* the process that admitted it (host PID) */
	uint32_t pad;
	uint64_t group_key;
	uint64_t guarantee;
	char group[72];
	unsigned char spare[24];
};

/* A process using the book (one cache line: its held word is its own). */
struct vr_devline {
	uint32_t used; /* 0 free, 1 used */
	int32_t pid;   /* host PID */
	uint32_t uid;
	int32_t entry;         /* its group's entry, or -1 */
	_Atomic uint64_t held; /* bytes on the card counted against the entry's guarantee */
	/* Bytes its process was granted to borrow and has not placed on the
	 * card yet, and when (CLOCK_MONOTONIC ns) it last asked: what the
	 * card's free memory does not show yet (vr_devbook_pending). */
	_Atomic uint64_t pending;
	_Atomic uint64_t pending_ns;
	unsigned char spare[24];
};

#define VR_DEVSEG_HDR_SIZE 4096u
#define VR_DEVSEG_ENTRIES  VR_DEVSEG_HDR_SIZE
#define VR_DEVSEG_LINES    (VR_DEVSEG_ENTRIES + VR_DEVBOOK_GROUPS * sizeof(struct vr_deventry))
#define VR_DEVSEG_SIZE     (VR_DEVSEG_LINES + VR_DEVBOOK_LINES * sizeof(struct vr_devline))

/* The segment as a whole. */
struct vr_devseg {
	struct vr_devhdr h;
	unsigned char hpad[VR_DEVSEG_HDR_SIZE - sizeof(struct vr_devhdr)];
	struct vr_deventry e[VR_DEVBOOK_GROUPS];
	struct vr_devline l[VR_DEVBOOK_LINES];
};

/* The door's name for a UUID: VR_DEVDOOR_PREFIX and 32 lowercase hex
 * digits; buf holds at least VR_DEVDOOR_NAME_MAX bytes. */
#define VR_DEVDOOR_NAME_MAX 48
void vr__devdoor_name(const unsigned char uuid[16], char *buf);
/* The UUID a door's name stands for: 0, or -EINVAL for another name. */
int vr__devdoor_uuid(const char *name, unsigned char uuid[16]);

/*
 * The one check of a door, for the writer and the reader: a regular file
 * of exactly VR_DEVDOOR_SIZE bytes, readable and writable by all (0666:
 * every user's processes share it), whose header is this version's and
 * names this uuid. Reads the header into *h and fills *st. Returns 0, or a
 * negative errno (-EBADMSG damage, -EPERM mode) with what is wrong in *why.
 */
int vr__devdoor_check(int fd, const unsigned char uuid[16], struct stat *st, struct vr_devhdr *h,
                      const char **why);

/* Attaches the segment the door's header names, checked (size, mode 0666,
 * header, key, uuid), read-only or read-write. NULL: none that can be
 * used (gone, reused, another IPC namespace's, or damaged), with why. */
struct vr_devseg *vr__devseg_attach(const struct vr_devhdr *door, int rdonly, const char **why);

/*
 * What a segment holds, checked before anything in it is trusted: the
 * header (magic, version, sizes, uuid and capacity those of the door), the
 * entries (each flag 0 or 1, a used one's guarantee 1..capacity and its
 * name terminated, the sum at most the capacity) and the lines below the
 * high-water mark (each flag 0 or 1, a used line's entry -1 or a used
 * entry, its held bytes at most the capacity). 0, or -EBADMSG with what
 * is wrong in *why.
 */
int vr__devseg_check(const struct vr_devseg *s, const struct vr_devhdr *door, const char **why);

/* 1 if an open file description other than fd's holds line i's liveness
 * byte, 0 if none does, 1 as well when the kernel cannot say (never
 * reclaim on doubt). */
int vr__devline_alive(int fd, uint32_t i);
/* 1 if an open file description other than fd's holds any line's byte. */
int vr__devlines_any_alive(int fd);

/* The longest wait for the door's lock or the book's lock. */
#define VR_DEVBOOK_LOCK_BOUND_NS 2000000000ull
/* Takes (lock 1: OFD write lock, retried with short sleeps up to the bound,
 * then -ETIMEDOUT) or drops (0) the door's lock byte `byte`. */
int vr__devdoor_lock(int fd, long long byte, int lock);

/*
 * The writer's open: opens the door of uuid in dir (dfd) for writing, or
 * creates it with this capacity (0666), then, under the door's lock,
 * attaches the segment it names or, when there is none that can be used
 * and nobody is alive in the book, makes one (0666). Fills *fd, *door (its
 * header) and *seg. 0, or a negative errno with one line in err:
 * -ELOOP (a symlink), -EPERM (mode), -EBADMSG (damage, or a segment that
 * cannot be reached while processes use the book), -ETIMEDOUT.
 */
int vr__devdoor_attach(int dfd, const char *dir, const unsigned char uuid[16], uint64_t capacity,
                       int *fd, struct vr_devhdr *door, struct vr_devseg **seg, char *err,
                       size_t errlen);

/* Saturating a + b. */
static inline uint64_t vr__sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

#endif /* VRAMCTL_REGISTRY_DEVDOOR_H */

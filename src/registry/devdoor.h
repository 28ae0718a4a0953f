/*
 * devdoor.h - the layout of a device book (devbook.h: one book per GPU)
 * and the steps its readers and its writer share: the book's name, the
 * one check of its directory and file, a stable copy of its entries
 * (seqlock), who holds an entry (devdoor.c); the held words of a group
 * (devheld.c) and the borrow board (devboard.c).
 *
 *   book   <dir>/vramctl-dev-<32 hex of the UUID>, owned by root, mode
 *          0644 (writable by nobody else), exactly VR_DEVBOOK_SIZE bytes:
 *          a header (the identity, the capacity the driver gave root, a
 *          seqlock counter, the sum of the live guarantees) and
 *          VR_DEVBOOK_GROUPS entries. Root writes it, under the writers'
 *          lock (<dir>/vramctl-dev.lock, 0600 root: no one else can open
 *          it); everyone else maps it read-only and copies it without a
 *          lock.
 *   held   per entry, a System V semaphore set created by root, owned by
 *          the group's user (0644): each member adds the bytes it has on
 *          the card, in units, with SEM_UNDO, so the kernel takes a dead
 *          member's bytes back; readers read the sum (devheld.c).
 *   board  the byte range [VR_BOARD_BASE, VR_BOARD_END) of the book, past
 *          its end: a borrower's pending bytes are the length of an OFD
 *          read lock it holds at the start of a region of its own; readers
 *          add up every lock there (devboard.c). Nobody ever waits for a
 *          lock on the book.
 */
#ifndef VRAMCTL_REGISTRY_DEVDOOR_H
#define VRAMCTL_REGISTRY_DEVDOOR_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define VR_DEVBOOK_GROUPS  64
#define VR_DEVBOOK_HOLDERS 8

#define VR_DEVBOOK_MAGIC    0x3242444c54434d56ull /* "VMCTLDB2" */
#define VR_DEVBOOK_VERSION  2u
#define VR_DEVBOOK_PREFIX   "vramctl-dev-"
#define VR_DEVBOOK_LOCKNAME "vramctl-dev.lock"
#define VR_DEVBOOK_HDR_SIZE 4096u

/* The held words: semaphores per entry, each at most VR_HELD_MAX units
 * (SEMVMX), a unit a power of two at least VR_HELD_UNIT_MIN bytes chosen
 * so that half the semaphores hold the whole card. */
#define VR_HELD_SEMS     8
#define VR_HELD_MAX      32767
#define VR_HELD_UNIT_MIN (64u << 10)

/* The borrow board: regions of VR_BOARD_REGION bytes from VR_BOARD_BASE. */
#define VR_BOARD_BASE    (1ll << 40)
#define VR_BOARD_REGION  (1ll << 40)
#define VR_BOARD_REGIONS (1ll << 21)
#define VR_BOARD_END     (VR_BOARD_BASE + VR_BOARD_REGION * VR_BOARD_REGIONS)

struct vr_devhdr {
	uint64_t magic; /* VR_DEVBOOK_MAGIC, stored last at creation */
	uint32_t version;
	uint32_t hdr_size;   /* VR_DEVBOOK_HDR_SIZE */
	uint64_t total_size; /* VR_DEVBOOK_SIZE */
	uint32_t groups;     /* VR_DEVBOOK_GROUPS */
	uint32_t holders;    /* VR_DEVBOOK_HOLDERS */
	unsigned char uuid[16];
	/* The card's usable bytes as the driver told root (NVML's total). */
	uint64_t capacity;
	uint64_t created; /* time(NULL) */
	/* Odd while root changes the entries: readers copy again. */
	_Atomic uint64_t seq;
	/* The sum of the used entries' guarantees: 0, nobody holds one and
	 * an allocation asks nothing else (one relaxed load). */
	_Atomic uint64_t guaranteed;
	_Atomic uint64_t used_mask; /* bit e: entry e used */
};

/* A process an entry lives for: host PID and start time (clock ticks
 * since boot, /proc/PID/stat), pid 0 for none. */
struct vr_devholder {
	int32_t pid;
	uint32_t pad;
	uint64_t start;
};

/* A group that holds a guarantee on the device (320 bytes). */
struct vr_deventry {
	uint32_t used; /* 0 free, 1 used */
	uint32_t uid;  /* the group's user, as root was told by the kernel */
	/* The group's name for its members: the hash of its secret
	 * (vr_devbook_ident), never the secret. */
	uint64_t ident;
	uint64_t guarantee;
	uint64_t gen; /* bumped each time the entry is taken */
	/* The group's held words (devheld.c). */
	int32_t semid;
	uint32_t semkey;
	uint32_t nsems;
	uint32_t pad;
	uint64_t unit;
	/* The service that keeps the entry (pid 0: none); while it lives it
	 * ends the entry when the last holder goes. */
	struct vr_devholder manager;
	/* The processes it lives for: it ends when none is alive (and no
	 * manager is). */
	struct vr_devholder holder[VR_DEVBOOK_HOLDERS];
	uint64_t admitted; /* time(NULL) */
	char group[72];    /* the name its admitter gave, for the views */
	unsigned char spare[40];
};

#define VR_DEVBOOK_SIZE (VR_DEVBOOK_HDR_SIZE + VR_DEVBOOK_GROUPS * sizeof(struct vr_deventry))

/* The book as a whole. */
struct vr_devfile {
	struct vr_devhdr h;
	unsigned char hpad[VR_DEVBOOK_HDR_SIZE - sizeof(struct vr_devhdr)];
	struct vr_deventry e[VR_DEVBOOK_GROUPS];
};

/* The book's name for a UUID: VR_DEVBOOK_PREFIX and 32 lowercase hex
 * digits; buf holds at least VR_DEVBOOK_NAME_MAX bytes. */
#define VR_DEVBOOK_NAME_MAX 48
void vr__devbook_name(const unsigned char uuid[16], char *buf);
/* The UUID a book's name stands for: 0, or -EINVAL for another name. */
int vr__devbook_uuid(const char *name, unsigned char uuid[16]);

/* The directory's one check: a directory (not a symlink) owned by root,
 * writable by nobody else. dfd from open(O_DIRECTORY|O_NOFOLLOW). 0, or
 * -EPERM with what is wrong in *why. */
int vr__devdir_check(int dfd, const char **why);

/*
 * Opens the book of uuid in dir read-only (dfd: the directory, checked),
 * checked: a regular file owned by root, writable by nobody else, of
 * VR_DEVBOOK_SIZE bytes, and maps it read-only. 0 with *fd and *map, or
 * -ENOENT (none), -EPERM (not root's, or writable by another: not used),
 * -EBADMSG (not a book of this version and device), with a line in err
 * naming the file.
 */
int vr__devbook_map(int dfd, const char *dir, const unsigned char uuid[16], int *fd,
                    const struct vr_devfile **map, char *err, size_t errlen);

/* A copy of the used entries, taken without a lock (the seqlock). */
struct vr_devsnap {
	uint64_t capacity;
	int n;
	int idx[VR_DEVBOOK_GROUPS]; /* the entry's index in the book */
	struct vr_deventry e[VR_DEVBOOK_GROUPS];
};
/* 0, or -EAGAIN when the book kept changing (a writer stopped inside a
 * change), -EBADMSG when what was copied is out of range. */
int vr__devbook_snap(const struct vr_devfile *f, struct vr_devsnap *s);

/* 1 when this process sees host PIDs (the initial PID namespace): the
 * PIDs in the book are host PIDs (what SO_PEERCRED tells the service). */
int vr_devbook_host_pids(void);

/* 1 when a holder is alive: kill(pid, 0) finds it (a reused PID counts
 * as alive), and with exact its start time is the recorded one; 1 as well
 * when this process cannot tell (a PID namespace of its own, where host
 * PIDs mean nothing). */
int vr__devholder_alive(const struct vr_devholder *h, int exact);
/* 1 when an entry (copied) still lives: its manager or one of its holders
 * is alive (vr__devholder_alive). */
int vr__deventry_alive(const struct vr_deventry *e, int exact);

/* Saturating a + b. */
static inline uint64_t vr__sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

#endif /* VRAMCTL_REGISTRY_DEVDOOR_H */

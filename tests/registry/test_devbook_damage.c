/*
 * test_devbook_damage.c - a device book someone tampered with (any user
 * can: the door and the segment are 0666) gives a clean error, never a
 * crash or a hang; the caller then fails closed (devbook.h):
 *
 *   numbers in the segment out of range (a guarantee past the capacity,
 *     guarantees that add up past it, a flag, a line's entry, held bytes
 *     wrapped, the line count, the capacity): lock, join, the reader say
 *     -EBADMSG, unused_others UINT64_MAX (no borrowing)
 *   random bytes past the header: the same
 *   a guaranteed word set by hand: put right by the next holder
 *   garbage over the header, members alive: not replaced (-EBADMSG);
 *     nobody left: a new segment for the next opener
 *   at the door's path: a symlink (-ELOOP, nothing followed), a FIFO, a
 *     door of the wrong size, magic or device, one naming another book's
 *     segment or key while members live (-EBADMSG), a mode not 0666
 *     (-EPERM)
 */
#include "tests/registry/devtest.h"

/* The segment of u's book, attached read-write as a stray process could. */
static struct vr_devseg *seg_of(const unsigned char u[16])
{
	char name[VR_DEVDOOR_NAME_MAX], path[8200];
	vr__devdoor_name(u, name);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_RDONLY);
	ASSERT(fd >= 0);
	struct vr_devhdr h;
	ASSERT_EQ(pread(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
	close(fd);
	void *p = shmat(h.shm_id, NULL, 0);
	ASSERT(p != (void *)-1);
	return p;
}

/* The book must be refused as damaged by lock, join, unused_others and
 * the reader, without a crash; then s is put back as it was. */
static void expect_damage(const unsigned char u[16], struct vr_devbook *b, struct vr_devseg *s,
                          const struct vr_devseg *good, const char *what)
{
	struct vr_devbook *j = NULL;
	struct vr_devbook_who w = who_of("late", 0x1a7e, 77, 1);
	char err[512] = "";
	/* Refused at the open (a header that is not the door's) or the join. */
	int rc = vr_devbook_open(dir, u, CAP, &j, err, sizeof(err));
	if (rc == 0)
		rc = vr_devbook_join(j, &w, err, sizeof(err));
	ASSERT_EQ(rc, -EBADMSG);
	printf("%s: %s\n", what, err);
	ASSERT(strstr(err, "device book") != NULL);
	vr_devbook_close(j);
	ASSERT_EQ(vr_devbook_lock(b), -EBADMSG);
	ASSERT(vr_devbook_why(b) != NULL);
	ASSERT_UEQ(vr_devbook_unused_others(b, NULL), UINT64_MAX);
	struct vr_devbook_view v;
	ASSERT_EQ(vr_devbook_read(dir, u, &v), -EBADMSG);
	memcpy(s, good, sizeof(*s));
	ASSERT_EQ(vr_devbook_lock(b), 0);
	vr_devbook_unlock(b);
}

static void test_damage_segment(void)
{
	unsigned char u[16];
	uuid_of(6, u);
	struct vr_devbook *b = member(u, "mu", 0x33, 1, 100);
	struct vr_devbook *o = member(u, "nu", 0x34, 2, 200);
	struct vr_devseg *s = seg_of(u), *good = malloc(sizeof(*good));
	ASSERT(good != NULL);
	memcpy(good, s, sizeof(*s));

	s->e[0].guarantee = CAP + 1;
	expect_damage(u, b, s, good, "guarantee past the capacity");
	s->e[0].guarantee = UINT64_MAX;
	s->e[1].guarantee = 2;
	expect_damage(u, b, s, good, "guarantees that wrap");
	s->e[5].used = 1;
	s->e[5].guarantee = CAP - 299;
	snprintf(s->e[5].group, sizeof(s->e[5].group), "x");
	expect_damage(u, b, s, good, "guarantees past the capacity");
	s->e[5].used = 1;
	s->e[5].guarantee = 1;
	memset(s->e[5].group, 'x', sizeof(s->e[5].group));
	expect_damage(u, b, s, good, "a name without its end");
	s->e[0].used = 7;
	expect_damage(u, b, s, good, "entry flag");
	s->l[0].entry = 1000;
	expect_damage(u, b, s, good, "line's entry out of range");
	s->l[1].entry = 9; /* an unused entry */
	expect_damage(u, b, s, good, "line pointing at no entry");
	atomic_store(&s->l[1].held, (uint64_t)-5);
	expect_damage(u, b, s, good, "held bytes wrapped");
	s->h.lines_hw = 5000;
	expect_damage(u, b, s, good, "line count");
	s->h.capacity = 1;
	expect_damage(u, b, s, good, "capacity changed");
	/* Garbage over everything past the header. */
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (size_t i = VR_DEVSEG_HDR_SIZE; i < sizeof(*s); i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		((unsigned char *)s)[i] = (unsigned char)x;
	}
	s->h.lines_hw = VR_DEVBOOK_LINES;
	expect_damage(u, b, s, good, "random bytes");
	/* A guaranteed word set by hand is put right by the next holder. */
	atomic_store(&s->h.guaranteed, 12345);
	ASSERT_UEQ(unused_others(b, NULL), 200);
	ASSERT_UEQ(word(b), 300);

	/* Garbage over the header: the segment is not the book's any more;
	 * with members alive, it is not replaced either. */
	memset(s, 0x5a, 64);
	struct vr_devbook *j = NULL;
	char err[512] = "";
	ASSERT_EQ(vr_devbook_open(dir, u, CAP, &j, err, sizeof(err)), -EBADMSG);
	printf("header garbage, open: %s\n", err);
	ASSERT_EQ(vr_devbook_lock(b), -EBADMSG);
	struct vr_devbook_view v;
	ASSERT_EQ(vr_devbook_read(dir, u, &v), -EBADMSG);
	memcpy(s, good, sizeof(*s));
	shmdt(s);
	free(good);
	vr_devbook_close(o);
	vr_devbook_close(b);
	/* Nobody left: a new segment is made for the next opener. */
	b = member(u, "mu", 0x33, 1, 100);
	ASSERT_UEQ(word(b), 100);
	vr_devbook_close(b);
	printf("damaged segment: ok\n");
}

/* A planted file at u's door path: open and read give rc with word in the
 * message, and nothing crashes. */
static void expect_door(const unsigned char u[16], int rc, const char *word_in_err)
{
	struct vr_devbook *b = NULL;
	char err[512] = "";
	ASSERT_EQ(vr_devbook_open(dir, u, CAP, &b, err, sizeof(err)), rc);
	ASSERT(b == NULL);
	printf("door -> %d: %s\n", rc, err);
	if (!strstr(err, word_in_err))
		TEST_FAILF("message lacks \"%s\": %s", word_in_err, err);
	struct vr_devbook_view v;
	ASSERT_EQ(vr_devbook_read(dir, u, &v), rc);
}

static void test_damage_door(void)
{
	unsigned char u[16], other[16];
	char name[VR_DEVDOOR_NAME_MAX], path[8200], target[8200];
	uuid_of(7, u);
	uuid_of(8, other);
	vr__devdoor_name(u, name);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(target, sizeof(target), "%s/target", dir);

	int fd = open(target, O_CREAT | O_WRONLY, 0666);
	ASSERT(fd >= 0);
	ASSERT_EQ(write(fd, "precious", 8), 8);
	close(fd);
	ASSERT_EQ(symlink(target, path), 0);
	expect_door(u, -ELOOP, "symlink");
	struct stat st;
	ASSERT_EQ(stat(target, &st), 0);
	ASSERT_EQ(st.st_size, 8);
	unlink(path);

	ASSERT_EQ(mkfifo(path, 0666), 0);
	chmod(path, 0666);
	expect_door(u, -EBADMSG, "not a regular file");
	unlink(path);

	fd = open(path, O_CREAT | O_RDWR, 0666);
	fchmod(fd, 0666);
	ASSERT_EQ(ftruncate(fd, 100), 0);
	expect_door(u, -EBADMSG, "size");
	ASSERT_EQ(ftruncate(fd, VR_DEVDOOR_SIZE), 0);
	expect_door(u, -EBADMSG, "bad magic");
	/* Another device's door under this name. */
	struct vr_devbook *ob = open_or_fail(other);
	char oname[VR_DEVDOOR_NAME_MAX], opath[8200], buf[VR_DEVDOOR_SIZE];
	vr__devdoor_name(other, oname);
	snprintf(opath, sizeof(opath), "%s/%s", dir, oname);
	int ofd = open(opath, O_RDONLY);
	ASSERT_EQ(read(ofd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
	close(ofd);
	ASSERT_EQ(pwrite(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	expect_door(u, -EBADMSG, "another device");
	/* The right device, a segment id that is not its own. */
	struct vr_devhdr *h = (struct vr_devhdr *)buf;
	memcpy(h->uuid, u, 16);
	ASSERT_EQ(pwrite(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	/* Nobody in it: the book starts afresh with a segment of its own. */
	struct vr_devbook *b = member(u, "xi", 0x55, 1, 10);
	ASSERT_UEQ(word(b), 10);
	ASSERT_UEQ(word(ob), 0);
	/* With a member alive, a door naming another book's segment is
	 * refused, not replaced. */
	struct vr_devhdr mine;
	ASSERT_EQ(pread(fd, &mine, sizeof(mine), 0), (ssize_t)sizeof(mine));
	ASSERT_EQ(pwrite(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	expect_door(u, -EBADMSG, "another device");
	/* Or naming a segment that is not there (another IPC namespace's id,
	 * or one overwritten): the lines held say a segment exists, so the
	 * message never calls it gone. */
	h->shm_id = 0x7ffffff0;
	ASSERT_EQ(pwrite(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	expect_door(u, -EBADMSG, "processes hold lines in it, but the segment it names cannot");
	{
		struct vr_devbook *j = NULL;
		char e2[512] = "";
		ASSERT_EQ(vr_devbook_open(dir, u, CAP, &j, e2, sizeof(e2)), -EBADMSG);
		if (strstr(e2, "gone"))
			TEST_FAILF("a book whose lines are held is called gone: %s", e2);
	}
	/* Or naming its own segment under another key. */
	h->shm_id = mine.shm_id;
	h->shm_key = mine.shm_key ^ 2;
	ASSERT_EQ(pwrite(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	expect_door(u, -EBADMSG, "key differs");
	vr_devbook_close(b);
	vr_devbook_close(ob);
	/* Not writable by all. */
	ASSERT_EQ(fchmod(fd, 0644), 0);
	expect_door(u, -EPERM, "0666");
	close(fd);
	unlink(path);
	printf("damaged doors: ok\n");
}

int main(void)
{
	devtest_setup();
	test_damage_segment();
	test_damage_door();
	return 0;
}

/*
 * test_damage.c - damage to a group's books never hangs or crashes a member
 * or a reader, and never silently lifts a cap a member joined under
 * (docs/architecture.md, "Failure model"). Each case writes into the live
 * segment (or the door) the way a stray process of the same user could:
 *
 *   lock word naming no live member (garbage, a live non-member's PID):
 *     taken over at once, the books recovered; the reader says so first
 *   lock word naming a live member (held "forever"): every wait ends at
 *     the bound; the waiter says so once and keeps its own books under
 *     the cap it joined with
 *   random bytes over the header: no hang, no crash; every member says so
 *     once and keeps its own books under its cap
 *   a cap raised, an in-use total zeroed, a member's own numbers changed:
 *     seen at the next call; own books under the joined cap
 *   a total forged below the member's own holdings with valid check bits:
 *     seen at the next reserve; own books under the joined cap
 *   random bytes over the slots: a late joiner refuses (and never resets
 *     the books of the live members); the members see it at their audit
 *   numbers in a slot for a device the group does not have yet (the
 *     audit reads only the group's devices): the member that adds the
 *     device sees them, says so once, and keeps its own books
 *   counts out of range: nothing indexes past an array (ASan/UBSan)
 *   the door truncated and regrown, again and again, under members and
 *     readers: no SIGBUS anywhere (the books are in a segment that cannot
 *     shrink; readers never map a file)
 *
 * Bounded: fixed counts, a 300 ms lock bound (VRAMCTL_TEST_LOCK_BOUND_MS);
 * nothing is timed.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry/member.h"
#include "tests/registry/regtest.h"
#include "vramctl/registry.h"

#define CAP 1000

static const char *dir;
static const unsigned char uuid0[VR_UUID_LEN] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6};
static _Atomic int notices;

static void on_notice(const char *line)
{
	printf("notice: %s\n", line);
	ASSERT(strstr(line, "damaged") != NULL);
	atomic_fetch_add(&notices, 1);
}

static vr_member *member(const char *group)
{
	struct vr_join_opts o = {
	    .dir = dir, .group = group, .limit_spec = "1000", .notice = on_notice};
	char err[512];
	vr_member *m = NULL;
	int rc = vr_join(&o, &m, NULL, err, sizeof(err));
	if (rc != 0)
		TEST_FAILF("join %s: %d %s", group, rc, err);
	uint64_t cap = 0;
	ASSERT_EQ(vr_device(m, uuid0, CAP, &cap), 0);
	ASSERT_UEQ(cap, CAP);
	return m;
}

/* Snapshot error lines that contain word. */
static int snapshot_says(const char *word)
{
	struct vramctl_snapshot *s = NULL;
	ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
	int n = 0;
	for (int i = 0; i < s->nerrors; i++) {
		printf("status: %s\n", s->errors[i]);
		n += strstr(s->errors[i], word) != NULL;
	}
	vramctl_snapshot_free(s);
	return n;
}

/* The member holds `held` and can never pass the cap it joined with. */
static void cap_holds(vr_member *m, uint64_t held)
{
	uint64_t in_use = 0;
	ASSERT_EQ(vr_reserve(m, 0, CAP - held + 1, &in_use), -ENOSPC);
	ASSERT_EQ(vr_reserve(m, 0, CAP - held, NULL), 0);
	ASSERT_EQ(vr_reserve(m, 0, 1, NULL), -ENOSPC);
	vr_release(m, 0, CAP - held);
}

static void set_word(vr_member *m, uint32_t w)
{
	atomic_store((_Atomic uint32_t *)&m->hdr->lock.word, w);
}

static void lock_not_a_member(void)
{
	vr_member *m = member("lockgarbage");
	ASSERT_EQ(vr_reserve(m, 0, 100, NULL), 0);
	/* Garbage naming no slot, then the PID of a live process that is not a
	 * member (what a pthread mutex's owner field would hold). */
	pid_t sleeper = fork();
	if (sleeper == 0) {
		pause();
		_exit(0);
	}
	uint32_t words[] = {0xdeadbeefu, (uint32_t)sleeper, 0xffffffffu};
	for (size_t i = 0; i < VR_ARRAY_LEN(words); i++) {
		set_word(m, words[i]);
		if (words[i] == 0xdeadbeefu)
			ASSERT_EQ(snapshot_says("not a live member"), 1);
		ASSERT_EQ(vr_reserve(m, 0, 100, NULL), 0);
		vr_release(m, 0, 100);
		ASSERT(vr_damaged(m) == NULL);
	}
	kill(sleeper, SIGKILL);
	waitpid(sleeper, NULL, 0);
	struct vr_reg_sample s;
	ASSERT_EQ(vr_sample(m, 0, &s), 0);
	ASSERT_UEQ(s.in_use, 100);
	ASSERT_UEQ(s.slots_sum, 100);
	ASSERT_EQ(snapshot_says("not a live member"), 0);
	vr_leave(m);
}

static void lock_held_by_live_member(void)
{
	vr_member *a = member("lockheld");
	vr_member *b = member("lockheld");
	ASSERT_EQ(vr_reserve(a, 0, 300, NULL), 0);
	int before = atomic_load(&notices);
	/* b's slot, with a token that is not b's: b never unlocks it. */
	set_word(a, ((uint32_t)vr_slot_index(b) + 1) | ((b->lock_id ^ 0x7ffff800u) & 0x7ffff800u));
	/* Reserves and releases take no lock: a held one does not stop them. */
	ASSERT_EQ(vr_reserve(a, 0, 100, NULL), 0);
	ASSERT(vr_damaged(a) == NULL);
	/* A denial takes it: waited the bound, then own books. */
	uint64_t in_use = 0;
	ASSERT_EQ(vr_reserve(a, 0, CAP - 400 + 1, &in_use), -ENOSPC);
	ASSERT(vr_damaged(a) != NULL);
	ASSERT_EQ(atomic_load(&notices), before + 1);
	cap_holds(a, 400);
	ASSERT_EQ(atomic_load(&notices), before + 1); /* said once */
	vr_release(a, 0, 400);
	vr_leave(a);
	vr_leave(b);
}

static void random_header(void)
{
	vr_member *a = member("hdr");
	vr_member *b = member("hdr");
	ASSERT_EQ(vr_reserve(a, 0, 300, NULL), 0);
	ASSERT_EQ(vr_reserve(b, 0, 200, NULL), 0);
	uint64_t seed = 0x1234567;
	uint64_t *p = (uint64_t *)(void *)a->hdr;
	for (size_t i = 0; i < VR_HDR_SIZE / 8; i++)
		p[i] = rnd(&seed);
	int before = atomic_load(&notices);
	ASSERT_GE(snapshot_says("cannot be read"), 1); /* live members, no readable books */
	cap_holds(a, 300);
	cap_holds(b, 200);
	ASSERT(vr_damaged(a) && vr_damaged(b));
	ASSERT_EQ(atomic_load(&notices), before + 2);
	/* A newcomer does not join them, and does not start them afresh. */
	struct vr_join_opts o = {.dir = dir, .group = "hdr", .limit_spec = "1000"};
	char err[512];
	vr_member *c = NULL;
	ASSERT_EQ(vr_join(&o, &c, NULL, err, sizeof(err)), -EBADMSG);
	printf("newcomer: %s\n", err);
	vr_leave(a);
	vr_leave(b);
}

/* The books a reader, a member and a newcomer see after one field changed. */
static void one_field(const char *group, int which)
{
	vr_member *a = member(group);
	vr_member *b = member(group);
	ASSERT_EQ(vr_reserve(a, 0, 900, NULL), 0);
	struct vr_hdr_dev *g = &a->hdr->dev[0];
	if (which == 0)
		g->cap = UINT64_MAX; /* the whole card */
	else if (which == 1)
		g->total = 0; /* "nothing is used" */
	else
		vr_counts_at(a->hdr, a->slot_idx, 0)->in_use = 0; /* a's own numbers */
	int before = atomic_load(&notices);
	ASSERT_EQ(snapshot_says("damaged"), 1);
	/* b holds nothing; it may take what its cap allows alone, never more. */
	ASSERT_EQ(vr_reserve(b, 0, 200, NULL), 0);
	ASSERT(vr_damaged(b) != NULL);
	cap_holds(b, 200);
	cap_holds(a, 900);
	ASSERT(vr_damaged(a) != NULL);
	ASSERT_EQ(atomic_load(&notices), before + 2);
	vr_leave(a);
	vr_leave(b);
}

static void random_slots(void)
{
	vr_member *m[4];
	for (int i = 0; i < 4; i++) {
		m[i] = member("slots");
		ASSERT_EQ(vr_reserve(m[i], 0, 100, NULL), 0);
	}
	struct vr_hdr *h = m[0]->hdr;
	uint64_t epoch = h->epoch, in_use = h->dev[0].total;
	uint64_t seed = 0xabcdef;
	uint64_t *p = (uint64_t *)(void *)vr_slot_at(h, 0);
	for (size_t i = 0; i < 4 * sizeof(struct vr_slot) / 8; i++)
		p[i] = rnd(&seed);
	struct vr_join_opts o = {.dir = dir, .group = "slots", .limit_spec = "1000"};
	char err[512];
	vr_member *late = NULL;
	ASSERT_EQ(vr_join(&o, &late, NULL, err, sizeof(err)), -EBADMSG);
	printf("late joiner: %s\n", err);
	ASSERT(strstr(err, "damaged") != NULL);
	ASSERT_UEQ(h->epoch, epoch); /* not started afresh */
	ASSERT_UEQ(h->dev[0].total, in_use);
	ASSERT_UEQ(h->dev[0].cap, CAP);
	/* The members see it (their own slot, or the audit before a denial). */
	for (int i = 0; i < 4; i++) {
		cap_holds(m[i], 100);
		ASSERT(vr_damaged(m[i]) != NULL);
	}
	for (int i = 0; i < 4; i++)
		vr_leave(m[i]);
}

static void unused_device(void)
{
	static const unsigned char uuid1[VR_UUID_LEN] = {1, 1, 1, 1, 1, 1, 1, 1,
	                                                 1, 1, 1, 1, 1, 1, 1, 1};
	vr_member *a = member("unused");
	vr_member *b = member("unused");
	ASSERT_EQ(vr_reserve(a, 0, 100, NULL), 0);
	/* b's numbers for device 1, which the group does not have yet. */
	vr_counts_at(b->hdr, b->slot_idx, 1)->in_use = (uint64_t)500 << VR_W_SHIFT;
	vr_member *c = member("unused"); /* the join's audit reads device 0 only */
	int before = atomic_load(&notices);
	uint64_t cap = 0;
	ASSERT_EQ(vr_device(a, uuid1, CAP, &cap), 1); /* a's own books, a's device 1 */
	ASSERT(vr_damaged(a) != NULL);
	ASSERT_EQ(atomic_load(&notices), before + 1);
	ASSERT_UEQ(a->hdr->ndev, 1); /* not added over the numbers */
	cap_holds(a, 100);
	vr_leave(a);
	vr_leave(b);
	vr_leave(c);
}

static void counts_out_of_range(void)
{
	vr_member *a = member("counts");
	ASSERT_EQ(vr_reserve(a, 0, 100, NULL), 0);
	a->hdr->ndev = 100000;
	a->hdr->slots_hw = 1u << 30;
	a->hdr->slot_count = 0;
	a->hdr->slot_hint = 0xffffffffu;
	ASSERT_GE(snapshot_says(""), 0); /* the reader copes (ASan/UBSan watch) */
	vr_member *b = NULL;
	struct vr_join_opts o = {.dir = dir, .group = "counts", .limit_spec = "1000"};
	char err[512];
	int rc = vr_join(&o, &b, NULL, err, sizeof(err));
	printf("joiner: %d %s\n", rc, err);
	ASSERT_EQ(rc, -EBADMSG);
	/* Member a: the audit before a denial sees it. */
	cap_holds(a, 100);
	ASSERT(vr_damaged(a) != NULL);
	vr_leave(a);
}

static void truncate_door(void)
{
	vr_member *a = member("trunc");
	char path[8300];
	snprintf(path, sizeof(path), "%s/trunc.vrg", dir);
	pid_t cutter = fork();
	if (cutter == 0) {
		static char junk[VR_DOOR_SIZE];
		for (int i = 0; i < 3000; i++) {
			if (truncate(path, 0) != 0)
				_exit(2);
			int fd = open(path, O_WRONLY);
			if (fd < 0 || pwrite(fd, junk, (size_t)(i % 2 ? 100 : sizeof(junk)), 0) < 0)
				_exit(3);
			close(fd);
		}
		_exit(0);
	}
	/* Members keep allocating and readers keep reading meanwhile. */
	for (int i = 0; i < 300; i++) {
		ASSERT_EQ(vr_reserve(a, 0, 10, NULL), 0);
		vr_release(a, 0, 10);
		struct vramctl_snapshot *s = NULL;
		ASSERT_EQ(vramctl_snapshot_take(dir, &s), 0);
		vramctl_snapshot_free(s);
	}
	int st;
	ASSERT_EQ(waitpid(cutter, &st, 0), cutter);
	ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ASSERT(vr_damaged(a) == NULL); /* the books themselves were never touched */
	cap_holds(a, 0);
	vr_leave(a);
}

/* A total forged below this process's own holdings, with valid check bits
 * (anyone who can write the segment can compute them): the next reserve
 * finds it and keeps the cap this process joined with (issue 29). */
static void total_below_own(void)
{
	vr_member *m = member("forgedtotal");
	ASSERT_EQ(vr_reserve(m, 0, 600, NULL), 0);
	vr_dev_set_total(&m->hdr->dev[0], 0);
	uint64_t in_use = 0;
	ASSERT_EQ(vr_reserve(m, 0, 500, &in_use), -ENOSPC);
	ASSERT(vr_damaged(m) != NULL);
	ASSERT_UEQ(in_use, 600);
	cap_holds(m, 600);
	vr_release(m, 0, 600);
	vr_leave(m);
}

int main(void)
{
	dir = getenv("VRAMCTL_REGISTRY_DIR");
	if (!dir)
		SKIP("VRAMCTL_REGISTRY_DIR is not set (run under tests/run)");
	setenv("VRAMCTL_TEST_LOCK_BOUND_MS", "300", 1); /* read at the first join */
	lock_not_a_member();
	lock_held_by_live_member();
	random_header();
	one_field("cap", 0);
	one_field("inuse", 1);
	one_field("own", 2);
	random_slots();
	unused_device();
	counts_out_of_range();
	truncate_door();
	total_below_own();
	printf("ok\n");
	return 0;
}

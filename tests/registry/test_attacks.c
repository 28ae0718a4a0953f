/*
 * test_attacks.c - what vr_join does with a registry someone tampered with.
 * Each case has its own documented outcome: a negative errno and one line
 * naming the file or directory and what is wrong, nothing written to the
 * file, no crash. The snapshot reader lists the same files in errors[].
 *
 *   symlink at the door path          -ELOOP            "symlink"
 *   door owned by another user         -EPERM            "owned by uid"
 *   door readable/writable by others   -EPERM            "mode"
 *   not a regular file (FIFO, dir)     -EINVAL           "not a regular file"
 *   truncated file                     -EBADMSG          "truncated"
 *   garbage / wrong magic              -EBADMSG          "bad magic"
 *   another layout version, in use     -EPROTONOSUPPORT  "version"
 *     (a process holds a lock on it); one nobody holds is a leftover of
 *     a group whose members are gone: it is replaced, the join succeeds
 *   registry dir open to others (0770, 0750, 0755) -EPERM "writable"
 *   registry dir owned by another user -EPERM            "owned by uid"
 *   registry dir is a symlink          -ELOOP            "symlink"
 *   another user (setuid child) pointed at our 0711 directory: -EACCES
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry/layout.h"
#include "registry/registry.h"
#include "tests/test.h"
#include "vramctl/registry.h"

#define NOBODY 65534

static char base[4096];

static void sub(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", base, name);
}

static int try_join(const char *dir, const char *group, char *err, size_t errlen)
{
	struct vr_join_opts o = {.dir = dir, .group = group, .limit_spec = "1G"};
	vr_member *m = NULL;
	int rc = vr_join(&o, &m, NULL, err, errlen);
	if (rc == 0)
		vr_leave(m);
	else
		ASSERT(m == NULL);
	return rc;
}

#define EXPECT_REFUSED(dir, group, code, word)                                                     \
	do {                                                                                       \
		char vr__err[512] = "";                                                            \
		int vr__rc = try_join(dir, group, vr__err, sizeof(vr__err));                       \
		printf("%-10s -> %d: %s\n", group, vr__rc, vr__err);                               \
		ASSERT_EQ(vr__rc, code);                                                           \
		if (!strstr(vr__err, word))                                                        \
			TEST_FAILF("message lacks \"%s\": %s", word, vr__err);                     \
		if (!strchr(vr__err, '/'))                                                         \
			TEST_FAILF("message names no path: %s", vr__err);                          \
		ASSERT(strchr(vr__err, '\n') == NULL);                                             \
	} while (0)

/* Makes a valid door for group in dir and returns its path. */
static void make_door(const char *dir, const char *group, char *path, size_t len)
{
	char err[512];
	ASSERT_EQ(try_join(dir, group, err, sizeof(err)), 0);
	snprintf(path, len, "%s/%s.vrg", dir, group);
}

static void file_digest(const char *path, struct stat *st)
{
	ASSERT_EQ(lstat(path, st), 0);
}

static void patch(const char *path, off_t off, const void *bytes, size_t n)
{
	int fd = open(path, O_WRONLY);
	ASSERT(fd >= 0);
	ASSERT_EQ(pwrite(fd, bytes, n, off), (ssize_t)n);
	close(fd);
}

int main(void)
{
	const char *d = getenv("VRAMCTL_REGISTRY_DIR");
	if (!d)
		SKIP("VRAMCTL_REGISTRY_DIR is not set (run under tests/run)");
	snprintf(base, sizeof(base), "%s", d);
	char path[8200], target[8200], dir2[8200];
	struct stat before, after;

	/* A symlink planted at the door's path, pointing at a file of ours. */
	sub(target, sizeof(target), "target");
	int fd = open(target, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ASSERT(fd >= 0);
	ASSERT_EQ(write(fd, "precious", 8), 8);
	close(fd);
	sub(path, sizeof(path), "link.vrg");
	ASSERT_EQ(symlink(target, path), 0);
	EXPECT_REFUSED(base, "link", -ELOOP, "symlink");
	ASSERT_EQ(stat(target, &after), 0);
	ASSERT_EQ(after.st_size, 8);
	/* A dangling one too: nothing is created through it. */
	sub(path, sizeof(path), "dangle.vrg");
	sub(target, sizeof(target), "created-through-link");
	ASSERT_EQ(symlink(target, path), 0);
	EXPECT_REFUSED(base, "dangle", -ELOOP, "symlink");
	ASSERT_EQ(access(target, F_OK), -1);

	/* Not a regular file. */
	sub(path, sizeof(path), "fifo.vrg");
	ASSERT_EQ(mkfifo(path, 0600), 0);
	EXPECT_REFUSED(base, "fifo", -EINVAL, "not a regular file");
	sub(path, sizeof(path), "adir.vrg");
	ASSERT_EQ(mkdir(path, 0700), 0);
	EXPECT_REFUSED(base, "adir", -EINVAL, "not a regular file");

	/* Truncated: the file is its header (the books are in a segment it
	 * names), cut short by a little or a lot. */
	make_door(base, "trunc1", path, sizeof(path));
	ASSERT_EQ(truncate(path, 100), 0);
	EXPECT_REFUSED(base, "trunc1", -EBADMSG, "truncated");
	make_door(base, "trunc2", path, sizeof(path));
	ASSERT_EQ(truncate(path, 4000), 0);
	EXPECT_REFUSED(base, "trunc2", -EBADMSG, "truncated");
	make_door(base, "empty", path, sizeof(path));
	ASSERT_EQ(truncate(path, 0), 0);
	EXPECT_REFUSED(base, "empty", -EBADMSG, "truncated");

	/* Garbage of the right size. */
	sub(path, sizeof(path), "garbage.vrg");
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ASSERT(fd >= 0);
	static unsigned char junk[65536];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)(i * 131 + 7);
	for (uint64_t off = 0; off < VR_SEGMENT_SIZE; off += sizeof(junk))
		ASSERT_EQ(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	close(fd);
	EXPECT_REFUSED(base, "garbage", -EBADMSG, "bad magic");

	/* A valid door with only its magic, or only its version, changed. */
	make_door(base, "magic", path, sizeof(path));
	uint64_t badmagic = 0x1122334455667788ull;
	patch(path, 0, &badmagic, sizeof(badmagic));
	EXPECT_REFUSED(base, "magic", -EBADMSG, "bad magic");
	make_door(base, "oldver", path, sizeof(path));
	uint32_t v0 = 0;
	patch(path, 8, &v0, sizeof(v0));
	int holder = open(path, O_RDWR); /* a member of that version, alive */
	struct flock live = {
	    .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = vr_slot_live_byte(700), .l_len = 1};
	ASSERT_EQ(fcntl(holder, F_OFD_SETLK, &live), 0);
	EXPECT_REFUSED(base, "oldver", -EPROTONOSUPPORT, "version");
	close(holder); /* gone: the door is a leftover, replaced at the next join */
	char oerr[512] = "";
	ASSERT_EQ(try_join(base, "oldver", oerr, sizeof(oerr)), 0);
	struct vr_hdr now;
	int ofd = open(path, O_RDONLY);
	ASSERT_EQ(pread(ofd, &now, sizeof(now), 0), (ssize_t)sizeof(now));
	close(ofd);
	ASSERT_EQ(now.version, VR_LAYOUT_VERSION);
	make_door(base, "oldver2", path, sizeof(path)); /* left for the reader */
	patch(path, 8, &v0, sizeof(v0));
	/* Sizes that lie, and a device count out of range. */
	make_door(base, "sizes", path, sizeof(path));
	uint32_t bigslots = 1u << 30;
	patch(path, 24, &bigslots, sizeof(bigslots));
	EXPECT_REFUSED(base, "sizes", -EBADMSG, "corrupt");
	make_door(base, "ndev", path, sizeof(path));
	uint32_t ndev = 100000;
	patch(path, 36, &ndev, sizeof(ndev));
	EXPECT_REFUSED(base, "ndev", -EBADMSG, "corrupt");
	/* A door renamed to another group's name. */
	make_door(base, "orig", path, sizeof(path));
	sub(target, sizeof(target), "renamed.vrg");
	ASSERT_EQ(rename(path, target), 0);
	EXPECT_REFUSED(base, "renamed", -EBADMSG, "another group");

	/* A door open to others. */
	make_door(base, "mode", path, sizeof(path));
	ASSERT_EQ(chmod(path, 0666), 0);
	EXPECT_REFUSED(base, "mode", -EPERM, "mode");

	/* The reader lists every bad file and still reads the good ones (a
	 * group is listed while it has a member). */
	struct vr_join_opts go = {.dir = base, .group = "good", .limit_spec = "1G"};
	vr_member *good_member = NULL;
	char gerr[512];
	ASSERT_EQ(vr_join(&go, &good_member, NULL, gerr, sizeof(gerr)), 0);
	struct vramctl_snapshot *s = NULL;
	ASSERT_EQ(vramctl_snapshot_take(base, &s), 0);
	int good = 0;
	for (int i = 0; i < s->ngroups; i++)
		good += !strcmp(s->groups[i].name, "good");
	ASSERT_EQ(good, 1);
	ASSERT_GE(s->nerrors, 12);
	for (int i = 0; i < s->nerrors; i++)
		printf("snapshot error: %s\n", s->errors[i]);
	vramctl_snapshot_free(s);
	vr_leave(good_member);

	/* Directory problems. */
	sub(dir2, sizeof(dir2), "open-dir");
	ASSERT_EQ(mkdir(dir2, 0700), 0);
	ASSERT_EQ(chmod(dir2, 0777), 0);
	EXPECT_REFUSED(dir2, "g", -EPERM, "writable");
	ASSERT_EQ(chmod(dir2, 0770), 0);
	EXPECT_REFUSED(dir2, "g", -EPERM, "writable");
	/* Readable by others is refused too: they could list the group names. */
	ASSERT_EQ(chmod(dir2, 0750), 0);
	EXPECT_REFUSED(dir2, "g", -EPERM, "readable");
	ASSERT_EQ(chmod(dir2, 0755), 0);
	EXPECT_REFUSED(dir2, "g", -EPERM, "readable");
	sub(dir2, sizeof(dir2), "link-dir");
	ASSERT_EQ(symlink(base, dir2), 0);
	EXPECT_REFUSED(dir2, "g", -ELOOP, "symlink");

	if (geteuid() != 0) {
		printf("not root: the other-user cases are not run\n");
		printf("ok\n");
		return 0;
	}
	/* A door owned by another user, in our directory: never opened for
	 * writing, not changed. */
	make_door(base, "foreign", path, sizeof(path));
	ASSERT_EQ(chown(path, NOBODY, NOBODY), 0);
	file_digest(path, &before);
	EXPECT_REFUSED(base, "foreign", -EPERM, "owned by uid 65534");
	file_digest(path, &after);
	ASSERT_EQ(after.st_mtime, before.st_mtime);
	ASSERT_EQ(after.st_uid, NOBODY);

	/* A directory owned by someone else. */
	sub(dir2, sizeof(dir2), "their-dir");
	ASSERT_EQ(mkdir(dir2, 0700), 0);
	ASSERT_EQ(chown(dir2, NOBODY, NOBODY), 0);
	EXPECT_REFUSED(dir2, "g", -EPERM, "owned by uid 65534");

	/* Another user pointed at our directory: refused, no crash. */
	ASSERT_EQ(chmod(base, 0711), 0); /* let nobody reach in, not list or write */
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		if (setgid(NOBODY) != 0 || setuid(NOBODY) != 0)
			_exit(3);
		char err[512] = "";
		int rc = try_join(base, "good", err, sizeof(err));
		printf("as nobody -> %d: %s\n", rc, err);
		fflush(stdout);
		/* The 0711 directory cannot even be listed: EACCES, naming it. */
		_exit(rc == -EACCES && strstr(err, base) ? 0 : 1);
	}
	int st;
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT_EQ(chmod(base, 0700), 0);
	ASSERT(WIFEXITED(st));
	ASSERT_EQ(WEXITSTATUS(st), 0);
	printf("ok\n");
	return 0;
}

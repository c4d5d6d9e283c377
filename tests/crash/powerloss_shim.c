/*
 * powerloss_shim.c - an LD_PRELOAD library for the power-loss test: it
 * records the writes and syncs lockd makes to its data files into a
 * journal (format and meaning in journal.h), from which the test builds
 * the images a power failure could leave.  It changes nothing: every call
 * goes on to the C library and returns what it returned.
 *
 *   LOCKD_PL_JOURNAL  the journal file (appended to); unset: record nothing
 *   LOCKD_PL_MATCH    comma-separated base names of the files to record
 *                     (default "data.mdb,lockd.wal": LMDB's data file and
 *                     the store's redo journal)
 *
 * Every recorded file goes into the one journal, in the order the calls
 * returned, so that a cut at one record is one instant across all of them.
 *
 * LMDB, without MDB_WRITEMAP, writes data pages with pwrite() and
 * lseek()+writev(), syncs them with fdatasync(), and writes its meta page
 * with pwrite() through a second descriptor opened with O_DSYNC (or, with
 * MDB_NOSYNC, through the first one, unsynced).  Data pages are read
 * through a read-only map, so no msync() is involved.  The shim covers
 * these calls and their neighbours (write, pwritev, pwritev2, fsync,
 * ftruncate, sync, syncfs); a call it does not cover on a recorded file is
 * a write the images would miss, so any new one LMDB starts to use must be
 * added here.  The store's journal, lockd.wal, is written with one
 * pwritev() and one fdatasync() per commit (daemon/store_journal.c), which
 * the same wrappers see.
 *
 * An image is the files as the run found them plus the recorded writes, so
 * it cannot follow a recorded name that is replaced or removed: lockd
 * creates lockd.wal at its first start as lockd.wal.tmp and renames it into
 * place.  The test therefore starts every recorded run on a directory that
 * already holds both files, and the shim records a rename onto or from, or
 * an unlink of, a recorded name (PL_REPLACE) so that the test can refuse a
 * run whose images would be wrong, rather than judge them.
 *
 * This file may not use the project's code, and calls the real functions
 * only through the pointers it looked up, never through its own wrappers.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "tests/crash/journal.h"

#define MAX_FDS 4096

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);
typedef int (*close_fn)(int);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*writev_fn)(int, const struct iovec *, int);
typedef ssize_t (*pwritev_fn)(int, const struct iovec *, int, off_t);
typedef ssize_t (*pwritev2_fn)(int, const struct iovec *, int, off_t, int);
typedef int (*sync_fn)(int);
typedef int (*ftruncate_fn)(int, off_t);
typedef off_t (*lseek_fn)(int, off_t, int);
typedef void (*syncall_fn)(void);
typedef int (*rename_fn)(const char *, const char *);
typedef int (*renameat_fn)(int, const char *, int, const char *);
typedef int (*renameat2_fn)(int, const char *, int, const char *,
    unsigned);
typedef int (*unlink_fn)(const char *);
typedef int (*unlinkat_fn)(int, const char *, int);

static struct {
	open_fn open, open64;
	openat_fn openat, openat64;
	close_fn close;
	pwrite_fn pwrite, pwrite64;
	write_fn write;
	writev_fn writev;
	pwritev_fn pwritev;
	pwritev2_fn pwritev2;
	sync_fn fsync, fdatasync, syncfs;
	ftruncate_fn ftruncate, ftruncate64;
	lseek_fn lseek;
	syncall_fn sync;
	rename_fn rename;
	renameat_fn renameat;
	renameat2_fn renameat2;
	unlink_fn unlink;
	unlinkat_fn unlinkat;
} real;

/* What each recorded descriptor refers to: file id + 1; 0: not recorded
 * (so the table needs no initialising before the constructor runs). */
static struct {
	int file1;
	int dsync;
} fds[MAX_FDS];

static struct {
	dev_t dev;
	ino_t ino;
} files[PL_MAX_FILES];
static int nfiles;

static int journal = -1;
/* The base names recorded: LOCKD_PL_MATCH split at its commas. */
static char match[PL_MAX_FILES][64] = { "data.mdb", "lockd.wal" };
static int nmatch = 2;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;

static void *
next(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

static void
parse_match(const char *list)
{
	const char *p = list;

	nmatch = 0;
	while (*p != '\0' && nmatch < PL_MAX_FILES) {
		size_t n = strcspn(p, ",");

		if (n > 0 && n < sizeof(match[0])) {
			memcpy(match[nmatch], p, n);
			match[nmatch++][n] = '\0';
		}
		p += n;
		if (*p == ',')
			p++;
	}
}

static void __attribute__((constructor))
shim_init(void)
{
	const char *path = getenv("LOCKD_PL_JOURNAL");
	const char *m = getenv("LOCKD_PL_MATCH");

	if (real.writev != NULL)
		return;

	real.open = (open_fn)next("open");
	real.open64 = (open_fn)next("open64");
	real.openat = (openat_fn)next("openat");
	real.openat64 = (openat_fn)next("openat64");
	real.close = (close_fn)next("close");
	real.pwrite = (pwrite_fn)next("pwrite");
	real.pwrite64 = (pwrite_fn)next("pwrite64");
	real.write = (write_fn)next("write");
	real.writev = (writev_fn)next("writev");
	real.pwritev = (pwritev_fn)next("pwritev");
	real.pwritev2 = (pwritev2_fn)next("pwritev2");
	real.fsync = (sync_fn)next("fsync");
	real.fdatasync = (sync_fn)next("fdatasync");
	real.syncfs = (sync_fn)next("syncfs");
	real.ftruncate = (ftruncate_fn)next("ftruncate");
	real.ftruncate64 = (ftruncate_fn)next("ftruncate64");
	real.lseek = (lseek_fn)next("lseek");
	real.sync = (syncall_fn)next("sync");
	real.rename = (rename_fn)next("rename");
	real.renameat = (renameat_fn)next("renameat");
	real.renameat2 = (renameat2_fn)next("renameat2");
	real.unlink = (unlink_fn)next("unlink");
	real.unlinkat = (unlinkat_fn)next("unlinkat");
	if (m != NULL && *m != '\0')
		parse_match(m);
	if (path != NULL && *path != '\0' && real.open != NULL)
		journal = real.open(path, O_WRONLY | O_CREAT | O_APPEND |
		    O_CLOEXEC, 0600);
}

/* Other libraries' constructors may run before ours and call in. */
static void
ensure(void)
{
	if (real.writev == NULL)
		shim_init();
}

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Appends one record: a header and the bytes of iov[0..cnt). */
static void
record(enum pl_kind kind, int file, uint64_t offset, uint32_t flags,
    const struct iovec *iov, int cnt, size_t len)
{
	struct iovec parts[1 + 64];
	struct pl_header h;
	int n = 0, i;
	size_t left = len;

	if (journal < 0 || cnt > 64)
		return;
	memset(&h, 0, sizeof(h));
	h.magic = PL_MAGIC;
	h.kind = (uint16_t)kind;
	h.file = (uint16_t)file;
	h.offset = offset;
	h.len = len;
	h.t_ns = now_ns();
	h.flags = flags;
	parts[n].iov_base = &h;
	parts[n++].iov_len = sizeof(h);
	for (i = 0; i < cnt && left > 0; i++) {
		size_t take = iov[i].iov_len < left ? iov[i].iov_len : left;
		parts[n].iov_base = iov[i].iov_base;
		parts[n++].iov_len = take;
		left -= take;
	}
	/* One call per record: a kill tears at most the last one. */
	pthread_mutex_lock(&mutex);
	if (real.writev(journal, parts, n) < 0)
		perror("powerloss_shim: journal");
	pthread_mutex_unlock(&mutex);
}

static int
tracked(int fd)
{
	return fd >= 0 && fd < MAX_FDS && fds[fd].file1 > 0;
}

/* The file id of a recorded descriptor. */
static int
file_of(int fd)
{
	return fds[fd].file1 - 1;
}

/* The recorded name path ends in, or NULL. */
static const char *
matches(const char *path)
{
	const char *base = strrchr(path, '/');
	int i;

	base = base != NULL ? base + 1 : path;
	for (i = 0; i < nmatch; i++)
		if (strcmp(base, match[i]) == 0)
			return match[i];
	return NULL;
}

/* A descriptor was opened on path: record it when it names a data file. */
static void
opened(int fd, const char *path, int flags)
{
	struct stat st;
	struct iovec iov;
	const char *name;
	int i;

	if (journal < 0 || fd < 0 || fd >= MAX_FDS ||
	    (name = matches(path)) == NULL || fstat(fd, &st) != 0)
		return;
	for (i = 0; i < nfiles; i++)
		if (files[i].dev == st.st_dev && files[i].ino == st.st_ino)
			break;
	if (i == nfiles) {
		if (nfiles == PL_MAX_FILES)
			return;
		files[nfiles].dev = st.st_dev;
		files[nfiles].ino = st.st_ino;
		nfiles++;
		iov.iov_base = (void *)name;
		iov.iov_len = strlen(name);
		record(PL_OPEN, i, 0, 0, &iov, 1, iov.iov_len);
	}
	fds[fd].file1 = i + 1;
	fds[fd].dsync = (flags & (O_DSYNC | O_SYNC)) != 0;
	/* An O_TRUNC open empties the file as ftruncate(0) would. */
	if ((flags & O_TRUNC) != 0 && (flags & O_ACCMODE) != O_RDONLY)
		record(PL_TRUNCATE, i, 0, 0, NULL, 0, 0);
}

/* path, a recorded name, was renamed onto, renamed away or removed (rc:
 * the call's). */
static void
replaced(const char *path, int rc)
{
	struct iovec iov;
	const char *name;

	if (rc != 0 || journal < 0 || (name = matches(path)) == NULL)
		return;
	iov.iov_base = (void *)name;
	iov.iov_len = strlen(name);
	record(PL_REPLACE, 0, 0, 0, &iov, 1, iov.iov_len);
}

static void
wrote(int fd, uint64_t offset, const struct iovec *iov, int cnt, ssize_t n)
{
	if (n <= 0 || !tracked(fd))
		return;
	record(PL_WRITE, file_of(fd), offset,
	    fds[fd].dsync ? PL_FLAG_DSYNC : 0, iov, cnt, (size_t)n);
}

static void
synced(int fd, int rc)
{
	if (rc == 0 && tracked(fd))
		record(PL_SYNC, file_of(fd), 0, 0, NULL, 0, 0);
}

static int
mode_of(int flags, va_list ap)
{
	if ((flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE)
		return va_arg(ap, int);
	return 0;
}

int
open(const char *path, int flags, ...)
{
	va_list ap;
	int mode, fd;

	ensure();
	va_start(ap, flags);
	mode = mode_of(flags, ap);
	va_end(ap);
	fd = real.open(path, flags, mode);
	opened(fd, path, flags);
	return fd;
}

int
open64(const char *path, int flags, ...)
{
	va_list ap;
	int mode, fd;

	ensure();
	va_start(ap, flags);
	mode = mode_of(flags, ap);
	va_end(ap);
	fd = (real.open64 != NULL ? real.open64 : real.open)(path, flags, mode);
	opened(fd, path, flags);
	return fd;
}

int
openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	int mode, fd;

	ensure();
	va_start(ap, flags);
	mode = mode_of(flags, ap);
	va_end(ap);
	fd = real.openat(dirfd, path, flags, mode);
	opened(fd, path, flags);
	return fd;
}

int
openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	int mode, fd;

	ensure();
	va_start(ap, flags);
	mode = mode_of(flags, ap);
	va_end(ap);
	fd = (real.openat64 != NULL ? real.openat64 : real.openat)(dirfd,
	    path, flags, mode);
	opened(fd, path, flags);
	return fd;
}

int
close(int fd)
{
	ensure();
	if (fd >= 0 && fd < MAX_FDS)
		fds[fd].file1 = 0;
	return real.close(fd);
}

ssize_t
pwrite(int fd, const void *buf, size_t len, off_t offset)
{
	struct iovec iov = { (void *)buf, len };
	ssize_t n;

	ensure();
	n = real.pwrite(fd, buf, len, offset);
	wrote(fd, (uint64_t)offset, &iov, 1, n);
	return n;
}

ssize_t
pwrite64(int fd, const void *buf, size_t len, off64_t offset)
{
	struct iovec iov = { (void *)buf, len };
	ssize_t n;

	ensure();
	n = (real.pwrite64 != NULL ? real.pwrite64 : real.pwrite)(fd, buf,
	    len, offset);
	wrote(fd, (uint64_t)offset, &iov, 1, n);
	return n;
}

ssize_t
write(int fd, const void *buf, size_t len)
{
	struct iovec iov = { (void *)buf, len };
	off_t at;
	ssize_t n;

	ensure();
	at = tracked(fd) ? real.lseek(fd, 0, SEEK_CUR) : 0;
	n = real.write(fd, buf, len);
	wrote(fd, (uint64_t)at, &iov, 1, n);
	return n;
}

ssize_t
writev(int fd, const struct iovec *iov, int cnt)
{
	off_t at;
	ssize_t n;

	ensure();
	at = tracked(fd) ? real.lseek(fd, 0, SEEK_CUR) : 0;
	n = real.writev(fd, iov, cnt);
	wrote(fd, (uint64_t)at, iov, cnt, n);
	return n;
}

ssize_t
pwritev(int fd, const struct iovec *iov, int cnt, off_t offset)
{
	ssize_t n;

	ensure();
	n = real.pwritev(fd, iov, cnt, offset);
	wrote(fd, (uint64_t)offset, iov, cnt, n);
	return n;
}

ssize_t
pwritev2(int fd, const struct iovec *iov, int cnt, off_t offset, int flags)
{
	off_t at = offset;
	ssize_t n;

	ensure();
	if (offset == -1 && tracked(fd))
		at = real.lseek(fd, 0, SEEK_CUR);
	n = real.pwritev2(fd, iov, cnt, offset, flags);
	/* RWF_DSYNC/RWF_SYNC make this one write durable on return. */
	if (n > 0 && tracked(fd) && (flags & (RWF_DSYNC | RWF_SYNC)) != 0)
		record(PL_WRITE, file_of(fd), (uint64_t)at, PL_FLAG_DSYNC,
		    iov, cnt, (size_t)n);
	else
		wrote(fd, (uint64_t)at, iov, cnt, n);
	return n;
}

int
fsync(int fd)
{
	int rc;

	ensure();
	rc = real.fsync(fd);
	synced(fd, rc);
	return rc;
}

int
fdatasync(int fd)
{
	int rc;

	ensure();
	rc = real.fdatasync(fd);
	synced(fd, rc);
	return rc;
}

int
ftruncate(int fd, off_t len)
{
	int rc;

	ensure();
	rc = real.ftruncate(fd, len);
	if (rc == 0 && tracked(fd))
		record(PL_TRUNCATE, file_of(fd), (uint64_t)len, 0, NULL, 0,
		    0);
	return rc;
}

int
ftruncate64(int fd, off64_t len)
{
	int rc;

	ensure();
	rc = (real.ftruncate64 != NULL ? real.ftruncate64 :
	    real.ftruncate)(fd, len);
	if (rc == 0 && tracked(fd))
		record(PL_TRUNCATE, file_of(fd), (uint64_t)len, 0, NULL, 0,
		    0);
	return rc;
}

/* sync(2) and syncfs(2) make every recorded file durable. */
static void
synced_all(void)
{
	int i;

	for (i = 0; i < nfiles; i++)
		record(PL_SYNC, i, 0, 0, NULL, 0, 0);
}

void
sync(void)
{
	ensure();
	real.sync();
	synced_all();
}

int
syncfs(int fd)
{
	int rc;

	ensure();
	rc = real.syncfs(fd);
	if (rc == 0)
		synced_all();
	return rc;
}

int
rename(const char *from, const char *to)
{
	int rc;

	ensure();
	rc = real.rename(from, to);
	replaced(from, rc);
	replaced(to, rc);
	return rc;
}

int
renameat(int fromfd, const char *from, int tofd, const char *to)
{
	int rc;

	ensure();
	rc = real.renameat(fromfd, from, tofd, to);
	replaced(from, rc);
	replaced(to, rc);
	return rc;
}

int
renameat2(int fromfd, const char *from, int tofd, const char *to,
    unsigned flags)
{
	int rc;

	ensure();
	if (real.renameat2 == NULL) {
		errno = ENOSYS;
		return -1;
	}
	rc = real.renameat2(fromfd, from, tofd, to, flags);
	replaced(from, rc);
	replaced(to, rc);
	return rc;
}

int
unlink(const char *path)
{
	int rc;

	ensure();
	rc = real.unlink(path);
	replaced(path, rc);
	return rc;
}

int
unlinkat(int dirfd, const char *path, int flags)
{
	int rc;

	ensure();
	rc = real.unlinkat(dirfd, path, flags);
	replaced(path, rc);
	return rc;
}

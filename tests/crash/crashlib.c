/*
 * crashlib.c - helpers shared by the crash test programs (crashlib.h).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/crash/crashlib.h"

static char lockd_bin[4096];
static char bin_dir[4096];
static char snapshot[64];

/* The binaries a run starts, copied before it starts anything. */
static const char *const snapshot_files[] = {
	"lockd", "lockd-faulty", "powerloss_shim.so",
};

static int
copy_exec(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out, rc = 0;
	ssize_t n;

	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
	if (out < 0) {
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			rc = -1;
	close(in);
	if (n < 0 || close(out) != 0)
		rc = -1;
	return rc;
}

static void
remove_snapshot(void)
{
	char path[128];
	size_t i;

	if (snapshot[0] == '\0')
		return;
	for (i = 0; i < sizeof(snapshot_files) / sizeof(snapshot_files[0]);
	    i++) {
		snprintf(path, sizeof(path), "%s/%s", snapshot, snapshot_files[i]);
		unlink(path);
	}
	rmdir(snapshot);
	snapshot[0] = '\0';
}

/*
 * Other work may rebuild build/ while a long run restarts lockd a thousand
 * times, and exec fails while the linker writes the file: the run uses
 * copies taken at its start, removed at its exit.
 */
static void
take_snapshot(void)
{
	char from[4096 + 64], to[128];
	size_t i;

	snprintf(snapshot, sizeof(snapshot), "/tmp/lockd-crash-bin-XXXXXX");
	if (mkdtemp(snapshot) == NULL) {
		snapshot[0] = '\0';
		return;
	}
	for (i = 0; i < sizeof(snapshot_files) / sizeof(snapshot_files[0]);
	    i++) {
		if (i == 0)
			snprintf(from, sizeof(from), "%s", lockd_bin);
		else
			snprintf(from, sizeof(from), "%s/%s", bin_dir,
			    snapshot_files[i]);
		snprintf(to, sizeof(to), "%s/%s", snapshot, snapshot_files[i]);
		if (copy_exec(from, to) != 0) {
			fprintf(stderr, "crash: cannot copy %s; using build/ "
			    "as it is\n", from);
			remove_snapshot();
			return;
		}
	}
	snprintf(lockd_bin, sizeof(lockd_bin), "%s/lockd", snapshot);
	snprintf(bin_dir, sizeof(bin_dir), "%s", snapshot);
	atexit(remove_snapshot);
}

void
crash_init(const char *argv0)
{
	const char *bin = getenv("LOCKD_BIN");
	char self[4096];
	ssize_t n;
	char *slash;

	if (bin == NULL || *bin == '\0')
		bin = "build/lockd";
	if (realpath(bin, lockd_bin) == NULL)
		snprintf(lockd_bin, sizeof(lockd_bin), "%s", bin);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0)
		self[n] = '\0';
	else
		snprintf(self, sizeof(self), "%s", argv0);
	snprintf(bin_dir, sizeof(bin_dir), "%s", self);
	if ((slash = strrchr(bin_dir, '/')) != NULL)
		*slash = '\0';
	else
		snprintf(bin_dir, sizeof(bin_dir), ".");
	take_snapshot();
	/* The harness starts LOCKD_BIN: the copy, from now on. */
	setenv("LOCKD_BIN", lockd_bin, 1);
}

void
crash_use_lockd(void)
{
	setenv("LOCKD_BIN", lockd_bin, 1);
	unsetenv("LOCKD_FAULT");
}

void
crash_use_faulty(const char *fault)
{
	setenv("LOCKD_BIN", crash_sibling("lockd-faulty"), 1);
	if (fault != NULL && *fault != '\0')
		setenv("LOCKD_FAULT", fault, 1);
	else
		unsetenv("LOCKD_FAULT");
}

const char *
crash_sibling(const char *name)
{
	static char path[8][4096 + 64];
	static int next;
	char *p = path[next++ % 8];

	snprintf(p, sizeof(path[0]), "%s/%s", bin_dir, name);
	return p;
}

bool
crash_alive(pid_t pid)
{
	char path[64], buf[512], *close_paren;
	FILE *f;
	size_t n;

	if (pid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* "pid (comm) S ...": the state follows the last ')'. */
	if ((close_paren = strrchr(buf, ')')) == NULL || close_paren[1] != ' ')
		return false;
	return close_paren[2] != 'Z' && close_paren[2] != 'X';
}

void
crash_trim_log(const char *path, long max)
{
	struct stat st;

	if (stat(path, &st) == 0 && st.st_size > max &&
	    truncate(path, 0) != 0)
		perror("truncate");
}

void
crash_parse_args(int *argc, char **argv, struct crash_args *args)
{
	int i, out = 1;

	if (!args->seed_given) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		args->seed = ((uint64_t)ts.tv_sec * 1000003u) ^
		    (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
		args->seed %= 1000000007u;
	}
	for (i = 1; i < *argc; i++) {
		if (i + 1 < *argc && strcmp(argv[i], "--seed") == 0) {
			args->seed = strtoull(argv[++i], NULL, 10);
			args->seed_given = true;
		} else if (i + 1 < *argc && strcmp(argv[i], "--cycles") == 0) {
			args->cycles = strtol(argv[++i], NULL, 10);
		} else if (i + 1 < *argc && strcmp(argv[i], "--images") == 0) {
			args->images = strtol(argv[++i], NULL, 10);
		} else if (i + 1 < *argc && strcmp(argv[i], "--seconds") == 0) {
			args->seconds = strtol(argv[++i], NULL, 10);
		} else {
			argv[out++] = argv[i];
		}
	}
	argv[out] = NULL;
	*argc = out;
}

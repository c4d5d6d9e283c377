/*
 * journal.c - reads the power-loss journal and builds crash images from it
 * (see journal.h).  Test code: it touches only the files it is given.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/crash/journal.h"
#include "tests/lib/rng.h"

static int
read_all(const char *path, unsigned char **out, size_t *size)
{
	struct stat st;
	unsigned char *buf;
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*out = NULL;
	*size = 0;
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	if (fstat(fd, &st) != 0 || (buf = malloc((size_t)st.st_size + 1)) ==
	    NULL) {
		close(fd);
		return -1;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	*out = buf;
	*size = got;
	return 0;
}

int
pl_journal_load(const char *path, struct pl_journal *j)
{
	size_t pos = 0, cap = 0;

	memset(j, 0, sizeof(*j));
	if (read_all(path, &j->buf, &j->size) != 0)
		return -1;
	while (pos + sizeof(struct pl_header) <= j->size) {
		struct pl_header h;
		struct pl_op *op;

		memcpy(&h, j->buf + pos, sizeof(h));
		if (h.magic != PL_MAGIC || h.file >= PL_MAX_FILES ||
		    h.len > j->size - pos - sizeof(h))
			break;   /* torn by the kill */
		if (j->count == cap) {
			struct pl_op *p;
			cap = cap ? cap * 2 : 1024;
			if ((p = realloc(j->ops, cap * sizeof(*p))) == NULL) {
				pl_journal_free(j);
				return -1;
			}
			j->ops = p;
		}
		op = &j->ops[j->count++];
		memset(op, 0, sizeof(*op));
		op->kind = (enum pl_kind)h.kind;
		op->file = h.file;
		op->offset = h.offset;
		op->len = h.len;
		op->data = j->buf + pos + sizeof(h);
		op->t_ms = h.t_ns / 1000000;
		op->dsync = (h.flags & PL_FLAG_DSYNC) != 0;
		pos += sizeof(h) + h.len;
		op->end = pos;
		if (op->kind == PL_OPEN) {
			size_t n = h.len < sizeof(j->names[0]) - 1 ? h.len :
			    sizeof(j->names[0]) - 1;
			memcpy(j->names[h.file], op->data, n);
			j->names[h.file][n] = '\0';
		}
	}
	return 0;
}

void
pl_journal_free(struct pl_journal *j)
{
	free(j->buf);
	free(j->ops);
	memset(j, 0, sizeof(*j));
}

int
pl_journal_file(const struct pl_journal *j, const char *name)
{
	int i;

	for (i = 0; i < PL_MAX_FILES; i++)
		if (strcmp(j->names[i], name) == 0)
			return i;
	return -1;
}

/* The image being built: a growable byte array. */
struct image {
	unsigned char *data;
	size_t size, cap;
};

static int
image_resize(struct image *im, size_t size)
{
	if (size > im->cap) {
		size_t cap = im->cap ? im->cap : 65536;
		unsigned char *p;
		while (cap < size)
			cap *= 2;
		if ((p = realloc(im->data, cap)) == NULL)
			return -1;
		im->data = p;
		im->cap = cap;
	}
	if (size > im->size)
		memset(im->data + im->size, 0, size - im->size);
	im->size = size;
	return 0;
}

static int
image_write(struct image *im, uint64_t offset, const unsigned char *src,
    uint64_t len)
{
	if (offset + len > im->size && image_resize(im, offset + len) != 0)
		return -1;
	memcpy(im->data + offset, src, len);
	return 0;
}

/* A write that was not synced may have reached the disk in part: keep a
 * random subset of its 512-byte sectors. */
static int
image_write_torn(struct image *im, uint64_t offset, const unsigned char *src,
    uint64_t len, struct rng *rng)
{
	uint64_t at = offset;

	while (at < offset + len) {
		uint64_t end = (at / PL_SECTOR + 1) * PL_SECTOR;
		if (end > offset + len)
			end = offset + len;
		if (rng_below(rng, 2) == 0 &&
		    image_write(im, at, src + (at - offset), end - at) != 0)
			return -1;
		at = end;
	}
	return 0;
}

int
pl_image_build(const struct pl_journal *j, size_t nops, unsigned file,
    const char *base_path, const char *out_path, struct rng *rng,
    struct pl_image_stats *stats)
{
	struct image im = { NULL, 0, 0 };
	unsigned char *base;
	size_t base_size, i, last_sync = 0;
	bool any_sync = false;
	int fd, rc = -1;

	memset(stats, 0, sizeof(*stats));
	if (nops > j->count)
		nops = j->count;
	if (read_all(base_path, &base, &base_size) != 0)
		return -1;
	if (image_resize(&im, base_size) != 0)
		goto out;
	if (base_size > 0)
		memcpy(im.data, base, base_size);
	/* Everything before the last sync of the file within the cut is on
	 * disk; after it, only what was written with O_DSYNC. */
	for (i = 0; i < nops; i++)
		if (j->ops[i].kind == PL_SYNC && j->ops[i].file == file) {
			last_sync = i;
			any_sync = true;
		}
	for (i = 0; i < nops; i++) {
		const struct pl_op *op = &j->ops[i];
		bool durable = (any_sync && i < last_sync) || op->dsync;

		if (op->file != file)
			continue;
		if (op->kind == PL_TRUNCATE) {
			if (!durable && rng_below(rng, 2) == 0)
				continue;
			if (op->offset < im.size)
				im.size = op->offset;
			else if (image_resize(&im, op->offset) != 0)
				goto out;
			continue;
		}
		if (op->kind != PL_WRITE)
			continue;
		if (durable) {
			stats->durable++;
			if (image_write(&im, op->offset, op->data, op->len) != 0)
				goto out;
			continue;
		}
		switch (rng_below(rng, 4)) {
		case 0:
		case 1:
			stats->volatile_dropped++;
			break;
		case 2:
			stats->volatile_kept++;
			if (image_write(&im, op->offset, op->data, op->len) != 0)
				goto out;
			break;
		default:
			stats->torn++;
			if (image_write_torn(&im, op->offset, op->data, op->len,
			    rng) != 0)
				goto out;
			break;
		}
	}
	fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		goto out;
	rc = 0;
	for (i = 0; i < im.size;) {
		ssize_t n = write(fd, im.data + i, im.size - i);
		if (n <= 0) {
			rc = -1;
			break;
		}
		i += (size_t)n;
	}
	if (close(fd) != 0)
		rc = -1;
out:
	free(base);
	free(im.data);
	return rc;
}

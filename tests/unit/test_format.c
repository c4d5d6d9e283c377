/*
 * test_format.c - the on-disk formats of daemon/format.h and the byte
 * helpers of core/bytes.h: the journal's CRC32C against the standard test
 * vectors (RFC 3720, B.4), a journal header that any changed byte fails,
 * and the lease record and the journal's mark read back as written.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/bytes.h"
#include "daemon/format.h"
#include "daemon/store.h"

static void
test_format_bytes_are_little_endian_whatever_the_machine(void **state)
{
	const unsigned char want[8] = { 8, 7, 6, 5, 4, 3, 2, 1 };
	unsigned char got[8];

	(void)state;
	bytes_put_le64(got, 0x0102030405060708ULL);
	assert_memory_equal(got, want, 8);
	assert_true(bytes_get_le64(want) == 0x0102030405060708ULL);
	bytes_put_le32(got, 0x05060708u);
	assert_memory_equal(got, want, 4);
	assert_true(bytes_get_le32(want + 4) == 0x01020304u);
}

static void
test_format_crc32c_matches_the_standard_vectors(void **state)
{
	unsigned char buf[32];
	int i;

	(void)state;
	assert_true(format_crc32c(0, "123456789", 9) == 0xe3069283u);
	memset(buf, 0, sizeof(buf));
	assert_true(format_crc32c(0, buf, sizeof(buf)) == 0x8a9136aau);
	memset(buf, 0xff, sizeof(buf));
	assert_true(format_crc32c(0, buf, sizeof(buf)) == 0x62a8ab43u);
	for (i = 0; i < 32; i++)
		buf[i] = (unsigned char)i;
	assert_true(format_crc32c(0, buf, sizeof(buf)) == 0x46dd794eu);
	for (i = 0; i < 32; i++)
		buf[i] = (unsigned char)(31 - i);
	assert_true(format_crc32c(0, buf, sizeof(buf)) == 0x113fdb5cu);
	/* Going on from the CRC of the bytes before is the same. */
	assert_true(format_crc32c(format_crc32c(0, "1234", 4), "56789", 5) ==
	    0xe3069283u);
	assert_true(format_crc32c(0, NULL, 0) == 0);
}

static void
test_format_journal_header_fails_its_check_on_any_changed_byte(void **state)
{
	struct format_journal_header h = { 42, true, 7, 5, true }, back;
	unsigned char hdr[FORMAT_JOURNAL_HEADER], ops[5] = "abcde";
	size_t i;

	(void)state;
	format_journal_encode(&h, ops, hdr);
	assert_true(format_journal_decode(hdr, &back));
	assert_true(format_journal_check(hdr, ops, sizeof(ops)));
	assert_true(back.seq == 42 && back.has_hwm && back.hwm == 7 &&
	    back.len == 5);
	for (i = 4; i < FORMAT_JOURNAL_HEADER; i++) {
		hdr[i] ^= 0x10;
		assert_false(format_journal_check(hdr, ops, sizeof(ops)));
		hdr[i] ^= 0x10;
	}
	for (i = 0; i < sizeof(ops); i++) {
		ops[i] ^= 0x10;
		assert_false(format_journal_check(hdr, ops, sizeof(ops)));
		ops[i] ^= 0x10;
	}
	hdr[0] ^= 0x10;           /* not a record at all */
	assert_false(format_journal_decode(hdr, &back));
}

static void
test_format_record_reads_back_and_a_reboot_caps_the_lease(void **state)
{
	const uint8_t boot[16] = "boot-one", other[16] =
	    "boot-two";
	struct core_record rec = { .fence = 9,
	    .secret = 0x1122334455667788ULL, .expiry = 5000, .lease_ms = 4000,
	    .onclose_release = true, .owner_id = 0xabcdef123456ULL }, back;
	unsigned char out[FORMAT_RECORD_SIZE];
	size_t n;

	(void)state;
	n = format_record_encode(&rec, boot, 1000, 1700000000000LL, out);
	assert_int_equal(out[0], FORMAT_RECORD_VERSION);
	/* The same boot: the boot clock's expiry stands. */
	assert_true(format_record_decode(out, n, boot, 300000, 2000,
	    0, &back));
	assert_true(back.fence == 9 && back.secret == rec.secret &&
	    back.expiry == 5000 && back.lease_ms == 4000 &&
	    back.onclose_release && back.owner_id == 0xabcdef123456ULL);
	/* Another boot: the wall clock's, 4 s left, capped at 1 s. */
	assert_true(format_record_decode(out, n, other, 1000, 10,
	    1700000000000LL, &back));
	assert_true(back.expiry == 10 + 1000);
	assert_true(format_record_decode(out, n, other, 300000, 10,
	    1700000000000LL, &back));
	assert_true(back.expiry == 10 + 4000);
	/* Another version or size is unreadable. */
	assert_false(format_record_decode(out, n - 1, boot, 300000,
	    2000, 0, &back));
	out[0] = FORMAT_RECORD_VERSION + 1;
	assert_false(format_record_decode(out, n, boot, 300000,
	    2000, 0, &back));
}

/* A record of another boot written again for this one: this boot's id
 * and boot-clock readings, the wall-clock readings it had - even where a
 * cap at the load shortened the boot-clock ones. */
static void
test_format_record_rebase_keeps_the_walls_of_the_granting_boot(void **state)
{
	const uint8_t boot[16] = "boot-one", other[16] = "boot-two",
	    third[16] = "boot-three";
	const int64_t wall = 1700000000000LL;
	struct core_record rec = { .fence = 3, .secret = 4, .expiry = 61000,
	    .lease_ms = 60000, .delay_ms = 2000 }, back;
	unsigned char out[FORMAT_RECORD_SIZE], again[FORMAT_RECORD_SIZE];
	int64_t walls[2];
	size_t n, m;

	(void)state;
	n = format_record_encode(&rec, boot, 1000, wall, out);
	format_record_walls(out, n, walls);
	assert_true(walls[0] == wall + 60000 && walls[1] == 0);
	/* Read after a reboot with a cap of 20 s, and rebased there. */
	assert_true(format_record_decode(out, n, other, 20000, 500,
	    wall - 86400000LL, &back));
	assert_true(back.expiry == 500 + 20000);
	m = format_record_rebase(&back, other, walls, again);
	assert_true(format_record_of_boot(again, m, other));
	/* That boot reads its boot clock, whatever its wall clock says. */
	assert_true(format_record_decode(again, m, other, 300000, 600,
	    wall + 3600000LL, &back));
	assert_true(back.expiry == 500 + 20000 && back.fence == 3 &&
	    back.delay_ms == 2000);
	/* A third boot reads the first boot's wall-clock end. */
	assert_true(format_record_decode(again, m, third, 300000, 10,
	    wall + 50000, &back));
	assert_true(back.expiry == 10 + 10000);
	/* A free name's lock-delay keeps its wall-clock end as well. */
	memset(&rec, 0, sizeof(rec));
	rec.delay_until = 4000;
	n = format_record_encode(&rec, boot, 1000, wall, out);
	format_record_walls(out, n, walls);
	assert_true(walls[1] == wall + 3000);
	assert_true(format_record_decode(out, n, other, 300000, 10, wall,
	    &back));
	m = format_record_rebase(&back, other, walls, again);
	assert_true(format_record_decode(again, m, third, 300000, 10,
	    wall + 1000, &back));
	assert_true(back.fence == 0 && back.delay_until == 10 + 2000);
}

static void
test_format_record_keeps_owner_and_lock_delay(void **state)
{
	const uint8_t boot[16] = "boot-one", other[16] = "boot-two";
	struct core_record rec = { .fence = 7, .secret = 5, .expiry = 5000,
	    .lease_ms = 4000, .delay_ms = 3000, .delay_until = 0,
	    .label_len = 11, .label = "web-1:12345" }, back;
	unsigned char out[FORMAT_RECORD_SIZE];
	size_t n;

	(void)state;
	n = format_record_encode(&rec, boot, 1000, 1700000000000LL, out);
	assert_true(format_record_decode(out, n, boot, 300000, 2000,
	    0, &back));
	assert_true(back.fence == 7 && back.delay_ms == 3000 &&
	    back.delay_until == 0 && back.label_len == 11 &&
	    memcmp(back.label, "web-1:12345", 11) == 0);
	/* A free name in lock-delay: fence 0, the delay's end kept, on the
	 * boot clock in this boot and on the wall clock after a reboot. */
	memset(&rec, 0, sizeof(rec));
	rec.delay_until = 4000;
	n = format_record_encode(&rec, boot, 1000, 1700000000000LL, out);
	assert_true(format_record_decode(out, n, boot, 300000, 2000,
	    0, &back));
	assert_true(back.fence == 0 && back.delay_until == 4000);
	assert_true(format_record_decode(out, n, other, 300000, 10,
	    1700000000000LL, &back));
	assert_true(back.fence == 0 && back.delay_until == 10 + 3000);
	/* Fence 0 with no delay is no record at all: unreadable. */
	memset(&rec, 0, sizeof(rec));
	n = format_record_encode(&rec, boot, 1000, 1700000000000LL, out);
	assert_false(format_record_decode(out, n, boot, 300000,
	    2000, 0, &back));
}

static void
test_format_record_v3_keeps_rid_mode_and_limit(void **state)
{
	const uint8_t boot[16] = "boot-one";
	struct core_record rec = { .fence = 12, .secret = 77, .expiry = 5000,
	    .lease_ms = 4000, .label_len = 3, .label = "web",
	    .rid_len = 64, .limit = 65535, .shared = true }, back;
	unsigned char out[FORMAT_RECORD_SIZE];

	(void)state;
	memset(rec.rid, 'r', sizeof(rec.rid));
	rec.rid[63] = 'z';
	assert_int_equal(format_record_encode(&rec, boot, 1000,
	    1700000000000LL, out), 96 + 3 + 64);
	assert_int_equal(out[0], 3);
	assert_int_equal(FORMAT_RECORD_SIZE, 224);
	assert_true(format_record_decode(out, 96 + 3 + 64, boot, 300000, 2000,
	    0, &back));
	assert_true(back.fence == 12 && back.rid_len == 64 &&
	    memcmp(back.rid, rec.rid, 64) == 0 && back.limit == 65535 &&
	    back.shared && back.label_len == 3 &&
	    memcmp(back.label, "web", 3) == 0 && !back.onclose_release);
	/* Any other length is not that record. */
	assert_false(format_record_decode(out, 96 + 3 + 63, boot, 300000,
	    2000, 0, &back));
	assert_false(format_record_decode(out, 96 + 3 + 65, boot, 300000,
	    2000, 0, &back));
	/* No label, no rid, a plain lock: 96 bytes, less than version 2's
	 * 160, and all of them read back as absent. */
	memset(&rec, 0, sizeof(rec));
	rec.fence = 3;
	rec.expiry = 5000;
	assert_int_equal(format_record_encode(&rec, boot, 1000,
	    1700000000000LL, out), 96);
	assert_true(format_record_decode(out, 96, boot, 300000, 2000, 0,
	    &back));
	assert_true(back.rid_len == 0 && back.label_len == 0 &&
	    back.limit == 0 && !back.shared);
	/* A rid longer than 64 bytes is not a record lockd wrote. */
	out[89] = 65;
	assert_false(format_record_decode(out, 96 + 65, boot, 300000,
	    2000, 0, &back));
}

/* A version-2 record, as lockd wrote it before rid=, still loads: the
 * hold has no rid and is a plain one. */
static void
test_format_record_v2_still_loads(void **state)
{
	const uint8_t boot[16] = "boot-one";
	unsigned char v2[FORMAT_RECORD_V2_SIZE];
	struct core_record back;

	(void)state;
	memset(v2, 0, sizeof(v2));
	v2[0] = 2;
	v2[1] = 1;   /* onclose=release; bit 1 meant nothing then */
	bytes_put_le64(v2 + 8, 41);
	bytes_put_le64(v2 + 16, 0x8c1f);
	bytes_put_le64(v2 + 24, 30000);
	bytes_put_le64(v2 + 32, 31000);
	memcpy(v2 + 48, boot, 16);
	bytes_put_le64(v2 + 64, 2500);
	v2[88] = 4;
	memcpy(v2 + 96, "cron", 4);
	assert_true(format_record_decode(v2, sizeof(v2), boot, 300000, 1000,
	    0, &back));
	assert_true(back.fence == 41 && back.secret == 0x8c1f &&
	    back.expiry == 31000 && back.delay_ms == 2500 &&
	    back.label_len == 4 && memcmp(back.label, "cron", 4) == 0 &&
	    back.onclose_release && back.rid_len == 0 && back.limit == 0 &&
	    !back.shared);
	/* A version-2 header on a version-3 size, or the reverse: neither. */
	assert_false(format_record_decode(v2, sizeof(v2) - 1, boot, 300000,
	    1000, 0, &back));
	v2[0] = 3;
	assert_false(format_record_decode(v2, sizeof(v2), boot, 300000, 1000,
	    0, &back));
}

/* A version-1 record, as lockd 0.x wrote it, still loads. */
static void
test_format_record_v1_still_loads(void **state)
{
	const uint8_t boot[16] = "boot-one";
	unsigned char v1[FORMAT_RECORD_V1_SIZE];
	struct core_record back;

	(void)state;
	memset(v1, 0, sizeof(v1));
	v1[0] = 1;
	bytes_put_le64(v1 + 8, 41);
	bytes_put_le64(v1 + 16, 0x8c1f);
	bytes_put_le64(v1 + 24, 30000);
	bytes_put_le64(v1 + 32, 31000);
	memcpy(v1 + 48, boot, 16);
	assert_true(format_record_decode(v1, sizeof(v1), boot, 300000, 1000,
	    0, &back));
	assert_true(back.fence == 41 && back.secret == 0x8c1f &&
	    back.expiry == 31000 && back.lease_ms == 30000 &&
	    back.delay_ms == 0 && back.delay_until == 0 &&
	    back.label_len == 0);
	/* A version-1 record with fence 0 was never valid. */
	bytes_put_le64(v1 + 8, 0);
	assert_false(format_record_decode(v1, sizeof(v1), boot, 300000, 1000,
	    0, &back));
}

static void
test_format_mark_reads_back_and_refuses_another_size(void **state)
{
	struct format_mark mark = { 12, 3456, true }, back;
	unsigned char out[FORMAT_META_MARK_SIZE];

	(void)state;
	format_mark_encode(&mark, out);
	assert_true(format_mark_decode(out, sizeof(out), &back));
	assert_true(back.seq == 12 && back.off == 3456 && back.clean);
	assert_false(format_mark_decode(out, sizeof(out) - 8, &back));
	assert_true(back.seq == 0 && back.off == 0 && !back.clean);
}

/* The holder key of fence 0x0102030405060708 on "ab", byte for byte; a
 * name's own key is the name. */
static void
test_format_holder_key_is_name_nul_fence_big_endian(void **state)
{
	static const char want[] = "ab\0\x01\x02\x03\x04\x05\x06\x07\x08";
	char key[FORMAT_KEY_MAX], name[CORE_NAME_MAX];
	size_t name_len;
	uint64_t fence;

	(void)state;
	assert_int_equal(FORMAT_KEY_MAX, 264);
	assert_int_equal(format_key("ab", 2, 0x0102030405060708ULL, key), 11);
	assert_memory_equal(key, want, 11);
	assert_int_equal(format_key_split(key, 11, &name_len, &fence),
	    FORMAT_KEY_HOLDER);
	assert_true(name_len == 2 && fence == 0x0102030405060708ULL);
	assert_int_equal(format_key("ab", 2, 0, key), 2);
	assert_memory_equal(key, "ab", 2);
	assert_int_equal(format_key_split(key, 2, &name_len, &fence),
	    FORMAT_KEY_NAME);
	assert_true(name_len == 2 && fence == 0);
	/* The longest: a 255-byte name's holder, 264 bytes. */
	memset(name, 'n', sizeof(name));
	assert_int_equal(format_key(name, sizeof(name), 1, key), 264);
	assert_memory_equal(key + 255, "\0\0\0\0\0\0\0\0\x01", 9);
	assert_int_equal(format_key_split(key, 264, &name_len, &fence),
	    FORMAT_KEY_HOLDER);
	assert_true(name_len == 255 && fence == 1);
	/* The largest fence, whose bytes hold no NUL. */
	assert_int_equal(format_key("x", 1, CORE_FENCE_MAX, key), 10);
	assert_int_equal(format_key_split(key, 10, &name_len, &fence),
	    FORMAT_KEY_HOLDER);
	assert_true(fence == CORE_FENCE_MAX);
}

/* A key with a NUL that is not exactly name, NUL and a fence, and a name
 * too long, are neither: unreadable. */
static void
test_format_key_split_refuses_what_is_neither_name_nor_holder(void **state)
{
	char key[FORMAT_KEY_MAX + 2];
	size_t name_len = 99;
	uint64_t fence = 99;

	(void)state;
	memset(key, 'k', sizeof(key));
	assert_int_equal(format_key_split(key, 0, &name_len, &fence),
	    FORMAT_KEY_BAD);
	assert_true(name_len == 0 && fence == 0);
	assert_int_equal(format_key_split(key, 255, &name_len, &fence),
	    FORMAT_KEY_NAME);
	/* 256 bytes and no NUL: a name too long. */
	assert_int_equal(format_key_split(key, 256, &name_len, &fence),
	    FORMAT_KEY_BAD);
	/* A NUL with 7 or 9 bytes after it. */
	memcpy(key, "ab\0\0\0\0\0\0\0\x01\x02", 11);
	assert_int_equal(format_key_split(key, 10, &name_len, &fence),
	    FORMAT_KEY_BAD);
	assert_int_equal(format_key_split(key, 12, &name_len, &fence),
	    FORMAT_KEY_BAD);
	/* ...with exactly 8 it is fence 0x0102 (a NUL among them is a byte
	 * of the fence). */
	assert_int_equal(format_key_split(key, 11, &name_len, &fence),
	    FORMAT_KEY_HOLDER);
	assert_true(name_len == 2 && fence == 0x0102);
	/* No name before the NUL; fence 0, which is no holder. */
	assert_int_equal(format_key_split(key + 2, 9, &name_len, &fence),
	    FORMAT_KEY_BAD);
	memcpy(key, "ab\0\0\0\0\0\0\0\0", 11);
	assert_int_equal(format_key_split(key, 11, &name_len, &fence),
	    FORMAT_KEY_BAD);
	/* Past 264 bytes, whatever it holds. */
	memset(key, 'k', sizeof(key));
	key[255] = '\0';
	assert_int_equal(format_key_split(key, 264, &name_len, &fence),
	    FORMAT_KEY_HOLDER);
	assert_int_equal(format_key_split(key, 265, &name_len, &fence),
	    FORMAT_KEY_BAD);
	key[255] = 'k';
	key[256] = '\0';   /* a 256-byte name's holder */
	assert_int_equal(format_key_split(key, 265, &name_len, &fence),
	    FORMAT_KEY_BAD);
}

static int
key_order(const void *a, const void *b)
{
	const char *const *x = a, *const *y = b;
	size_t nx = (unsigned char)(*x)[0], ny = (unsigned char)(*y)[0];

	return format_key_compare(*x + 1, nx, *y + 1, ny);
}

/*
 * In key order (LMDB's, etcd's) a name's holders come right after the
 * name, in fence order, and before every other name it begins: NUL sorts
 * before every other byte.  Each key below is its length, then its bytes,
 * listed in the order they must sort to; they are shuffled and sorted.
 */
static void
test_format_key_order_puts_a_names_holders_right_after_it(void **state)
{
	static const char *const want[] = {
		"\x01" "a",
		"\x0a" "a\0\0\0\0\0\0\0\0\x02",
		"\x0a" "a\0\0\0\0\0\0\0\x01\x00",  /* 256 > 2 */
		"\x0a" "a\0\x01\0\0\0\0\0\0\x00",
		"\x02" "a\x01",
		"\x02" "a0",
		"\x0b" "a0\0\0\0\0\0\0\0\0\x07",
		"\x02" "ab",
		"\x01" "b",
	};
	const char *keys[sizeof(want) / sizeof(want[0])];
	size_t i, n = sizeof(want) / sizeof(want[0]), k;

	(void)state;
	for (i = 0; i < n; i++)
		keys[i] = want[n - 1 - i];
	for (k = 0; k < 3; k++) {
		qsort(keys, n, sizeof(keys[0]), key_order);
		for (i = 0; i < n; i++)
			if (keys[i] != want[i])
				fail_msg("key %zu sorts at %zu", i, k);
		for (i = 0; i + 1 < n; i++) {   /* another shuffle */
			const char *t = keys[i];
			keys[i] = keys[(i * 7 + k) % n];
			keys[(i * 7 + k) % n] = t;
		}
	}
	/* format_key's own keys sort so. */
	{
		char x[FORMAT_KEY_MAX], y[FORMAT_KEY_MAX];
		size_t nx = format_key("lock", 4, 0, x);
		size_t ny = format_key("lock", 4, 1, y);
		assert_true(format_key_compare(x, nx, y, ny) < 0);
		nx = format_key("lock", 4, 255, x);
		ny = format_key("lock", 4, 256, y);
		assert_true(format_key_compare(x, nx, y, ny) < 0);
		nx = format_key("lock", 4, CORE_FENCE_MAX, x);
		assert_true(format_key_compare(x, nx, "lock!", 5) < 0);
		assert_true(format_key_compare("lock", 4, "lock", 4) == 0);
	}
}

/* Which record may stand under which key. */
static void
test_format_key_fits_only_its_kind_of_record(void **state)
{
	struct core_record plain = { .fence = 5 }, delay = { .delay_until = 9 };
	struct core_record sem = { .fence = 5, .limit = 3 };
	struct core_record shared = { .fence = 5, .limit = 1, .shared = true };

	(void)state;
	assert_true(format_key_fits(0, &plain));
	assert_true(format_key_fits(0, &delay));
	assert_false(format_key_fits(0, &sem));
	assert_false(format_key_fits(0, &shared));
	assert_true(format_key_fits(5, &sem));
	assert_true(format_key_fits(5, &shared));
	assert_false(format_key_fits(6, &sem));      /* another fence */
	assert_false(format_key_fits(5, &plain));    /* not MULTI */
	plain.limit = 1;
	assert_false(format_key_fits(5, &plain));
	assert_false(format_key_fits(5, &delay));
}

/*
 * The journal's operations, byte for byte: a plain lock's put is what it
 * was under the old magic (3 bytes, the name, the value), so a plain
 * grant's journal record does not grow; a key of 256 bytes or more sets
 * bit 7 of the op.  A record takes the new magic only with a holder key,
 * and records of either read.
 */
static void
test_format_journal_ops_keep_short_keys_and_carry_long_ones(void **state)
{
	struct format_journal_header h = { 1, false, 0, 0, false }, back;
	unsigned char hdr[FORMAT_JOURNAL_HEADER], val[96];
	char key[FORMAT_KEY_MAX + 1];
	struct store_batch b;
	struct store_batch_op op;
	size_t pos = 0;

	(void)state;
	memset(val, 0xee, sizeof(val));
	memset(key, 'k', sizeof(key));
	store_batch_init(&b);
	assert_int_equal(store_batch_add(&b, STORE_PUT, "name/00000000001",
	    16, val, sizeof(val)), 0);
	assert_int_equal(b.len, 3 + 16 + 96);
	assert_memory_equal(b.ops, "\x01\x10\x60name/00000000001", 19);
	assert_int_equal(store_batch_add(&b, STORE_DEL, key, 255, NULL, 0),
	    0);
	assert_memory_equal(b.ops + 115, "\x02\xff\x00", 3);
	assert_false(b.holder_keys);     /* names only: the old magic */
	format_key(key, 255, 0x1122334455667788ULL, key);
	assert_int_equal(store_batch_add(&b, STORE_PUT, key, 264, val, 96),
	    0);
	assert_memory_equal(b.ops + 115 + 258, "\x81\x08\x60", 3);
	assert_int_equal(store_batch_add(&b, STORE_DEL, key, 256, NULL, 0),
	    0);
	assert_memory_equal(b.ops + 115 + 258 + 363, "\x82\x00\x00", 3);
	assert_int_equal(b.len, 115 + 258 + 363 + 259);
	/* Longer than a holder key: refused, nothing added. */
	assert_int_equal(store_batch_add(&b, STORE_PUT, key, 265, val, 96),
	    -1);
	assert_int_equal(b.count, 4);
	assert_true(store_batch_next(&b, &pos, &op));
	assert_true(op.op == STORE_PUT && op.name_len == 16 &&
	    op.val_len == 96);
	assert_true(store_batch_next(&b, &pos, &op));
	assert_true(op.op == STORE_DEL && op.name_len == 255);
	assert_true(store_batch_next(&b, &pos, &op));
	assert_true(op.op == STORE_PUT && op.name_len == 264 &&
	    op.val_len == 96 && memcmp(op.name, key, 264) == 0 &&
	    memcmp(op.val, val, 96) == 0);
	assert_true(store_batch_next(&b, &pos, &op));
	assert_true(op.op == STORE_DEL && op.name_len == 256 &&
	    op.val_len == 0);
	assert_false(store_batch_next(&b, &pos, &op));
	assert_true(b.holder_keys);
	store_batch_reset(&b);
	assert_false(b.holder_keys);
	store_batch_free(&b);

	/* The magic: "LKW2" with a holder key, "LKWL" (an older lockd's)
	 * without; both read back, and nothing else does. */
	format_journal_encode(&h, NULL, hdr);
	assert_memory_equal(hdr, "LKWL", 4);
	assert_true(format_journal_decode(hdr, &back) && !back.holder_keys);
	h.holder_keys = true;
	format_journal_encode(&h, NULL, hdr);
	assert_memory_equal(hdr, "LKW2", 4);
	assert_true(format_journal_decode(hdr, &back) && back.holder_keys);
	assert_true(format_journal_check(hdr, NULL, 0));
	memcpy(hdr, "LKWL", 4);   /* the CRC does not cover the magic */
	assert_true(format_journal_check(hdr, NULL, 0));
	memcpy(hdr, "LKW3", 4);
	assert_false(format_journal_decode(hdr, &back));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
		    test_format_bytes_are_little_endian_whatever_the_machine),
		cmocka_unit_test(test_format_crc32c_matches_the_standard_vectors),
		cmocka_unit_test(
		    test_format_journal_header_fails_its_check_on_any_changed_byte),
		cmocka_unit_test(
		    test_format_record_reads_back_and_a_reboot_caps_the_lease),
		cmocka_unit_test(
		    test_format_record_keeps_owner_and_lock_delay),
		cmocka_unit_test(
		    test_format_record_v3_keeps_rid_mode_and_limit),
		cmocka_unit_test(
		    test_format_record_rebase_keeps_the_walls_of_the_granting_boot),
		cmocka_unit_test(test_format_record_v2_still_loads),
		cmocka_unit_test(test_format_record_v1_still_loads),
		cmocka_unit_test(
		    test_format_mark_reads_back_and_refuses_another_size),
		cmocka_unit_test(
		    test_format_holder_key_is_name_nul_fence_big_endian),
		cmocka_unit_test(
		    test_format_key_split_refuses_what_is_neither_name_nor_holder),
		cmocka_unit_test(
		    test_format_key_order_puts_a_names_holders_right_after_it),
		cmocka_unit_test(test_format_key_fits_only_its_kind_of_record),
		cmocka_unit_test(
		    test_format_journal_ops_keep_short_keys_and_carry_long_ones),
	};

	return cmocka_run_group_tests_name("format", tests, NULL, NULL);
}

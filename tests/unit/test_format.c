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
#include <string.h>

#include <cmocka.h>

#include "core/bytes.h"
#include "daemon/format.h"

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
	struct format_journal_header h = { 42, true, 7, 5 }, back;
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
		cmocka_unit_test(test_format_record_v2_still_loads),
		cmocka_unit_test(test_format_record_v1_still_loads),
		cmocka_unit_test(
		    test_format_mark_reads_back_and_refuses_another_size),
	};

	return cmocka_run_group_tests_name("format", tests, NULL, NULL);
}

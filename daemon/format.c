/*
 * format.c - encoding and decoding of what format.h lays out, and the
 * journal's CRC32C.  Pure: no I/O, no clock reads (times are passed in).
 */
#include <string.h>

#include "core/bytes.h"
#include "daemon/format.h"

size_t
format_record_encode(const struct core_record *rec, const uint8_t boot_id[16],
    core_time now, int64_t wall_now, unsigned char out[FORMAT_RECORD_SIZE])
{
	size_t label = rec->label_len <= CORE_OWNER_MAX ? rec->label_len : 0;
	size_t rid = rec->rid_len <= CORE_RID_MAX ? rec->rid_len : 0;

	memset(out, 0, FORMAT_RECORD_FIXED);
	out[0] = FORMAT_RECORD_VERSION;
	out[1] = (unsigned char)((rec->onclose_release ? 1 : 0) |
	    (rec->shared ? 2 : 0));
	if (rec->onclose_release) {
		unsigned char id[8];
		bytes_put_le64(id, rec->owner_id);
		memcpy(out + 2, id, 6);
	}
	bytes_put_le64(out + 8, rec->fence);
	bytes_put_le64(out + 16, rec->secret);
	bytes_put_le64(out + 24, (uint64_t)rec->lease_ms);
	bytes_put_le64(out + 32, (uint64_t)rec->expiry);
	bytes_put_le64(out + 40, (uint64_t)(wall_now + (rec->expiry - now)));
	memcpy(out + 48, boot_id, 16);
	bytes_put_le64(out + 64, (uint64_t)rec->delay_ms);
	if (rec->delay_until != 0) {
		bytes_put_le64(out + 72, (uint64_t)rec->delay_until);
		bytes_put_le64(out + 80,
		    (uint64_t)(wall_now + (rec->delay_until - now)));
	}
	out[88] = (unsigned char)label;
	out[89] = (unsigned char)rid;
	bytes_put_le16(out + 90, rec->limit);
	memcpy(out + FORMAT_RECORD_FIXED, rec->label, label);
	memcpy(out + FORMAT_RECORD_FIXED + label, rec->rid, rid);
	return FORMAT_RECORD_FIXED + label + rid;
}

/* An instant of the record at boot-clock offset `at` (wall clock at
 * at + 8) in this boot's terms, capped at now + cap. */
static core_time
instant_decode(const unsigned char *p, size_t at, bool same_boot,
    core_time now, int64_t wall_now, int64_t cap)
{
	core_time t;

	if (same_boot) {
		t = (core_time)bytes_get_le64(p + at);
	} else {
		int64_t left = (int64_t)bytes_get_le64(p + at + 8) - wall_now;
		t = now + (left < 0 ? 0 : left);
	}
	return t > now + cap ? now + cap : t;
}

bool
format_record_decode(const void *val, size_t len, const uint8_t boot_id[16],
    int64_t max_lease_ms, core_time now, int64_t wall_now,
    struct core_record *rec)
{
	const unsigned char *p = val;
	bool same_boot, v2, v3;

	v3 = len >= FORMAT_RECORD_FIXED && p[0] == FORMAT_RECORD_VERSION &&
	    p[88] <= CORE_OWNER_MAX && p[89] <= CORE_RID_MAX &&
	    len == FORMAT_RECORD_FIXED + (size_t)p[88] + p[89];
	v2 = v3 || (len == FORMAT_RECORD_V2_SIZE && p[0] == FORMAT_RECORD_V2);
	if (!v2 && (len != FORMAT_RECORD_V1_SIZE || p[0] != FORMAT_RECORD_V1))
		return false;
	memset(rec, 0, sizeof(*rec));
	same_boot = memcmp(p + 48, boot_id, 16) == 0;
	rec->onclose_release = (p[1] & 1) != 0;
	if (rec->onclose_release) {
		unsigned char id[8] = { 0 };
		memcpy(id, p + 2, 6);
		rec->owner_id = bytes_get_le64(id);
	}
	rec->fence = bytes_get_le64(p + 8);
	rec->secret = bytes_get_le64(p + 16);
	rec->lease_ms = (int64_t)bytes_get_le64(p + 24);
	if (rec->fence > CORE_FENCE_MAX)
		return false;
	if (v2) {
		rec->delay_ms = (int64_t)bytes_get_le64(p + 64);
		if (bytes_get_le64(p + 72) != 0 || bytes_get_le64(p + 80) != 0) {
			rec->delay_until = instant_decode(p, 72, same_boot,
			    now, wall_now, max_lease_ms);
			/* 0 means none: a delay due now ends now + 1. */
			if (rec->delay_until <= 0)
				rec->delay_until = 1;
		}
		if (p[88] > CORE_OWNER_MAX || rec->delay_ms < 0)
			return false;
		rec->label_len = p[88];
		memcpy(rec->label, p + 96, rec->label_len);
	}
	if (v3) {
		rec->rid_len = p[89];
		memcpy(rec->rid, p + FORMAT_RECORD_FIXED + p[88], rec->rid_len);
		rec->limit = bytes_get_le16(p + 90);
		rec->shared = (p[1] & 2) != 0;
	}
	/* No holder: only a name in lock-delay has a record, and it keeps
	 * the name's limit (a semaphore stays one through its delay). */
	if (rec->fence == 0) {
		core_time until = rec->delay_until;
		uint16_t limit = rec->limit;

		memset(rec, 0, sizeof(*rec));
		rec->delay_until = until;
		rec->limit = limit;
		return until != 0;
	}
	rec->expiry = instant_decode(p, 32, same_boot, now, wall_now,
	    max_lease_ms);
	return true;
}

/* ---- store keys -------------------------------------------------------- */

size_t
format_key(const char *name, size_t name_len, uint64_t key_fence,
    char out[FORMAT_KEY_MAX])
{
	int i;

	memcpy(out, name, name_len);
	if (key_fence == 0)
		return name_len;
	out[name_len] = '\0';
	for (i = 0; i < 8; i++)
		out[name_len + 1 + (size_t)i] =
		    (char)(unsigned char)(key_fence >> (56 - 8 * i));
	return name_len + FORMAT_HOLDER_SUFFIX;
}

int
format_key_compare(const void *a, size_t a_len, const void *b, size_t b_len)
{
	int c = memcmp(a, b, a_len < b_len ? a_len : b_len);

	if (c != 0)
		return c;
	return a_len < b_len ? -1 : a_len > b_len;
}

enum format_key_kind
format_key_split(const void *key, size_t len, size_t *name_len,
    uint64_t *key_fence)
{
	const unsigned char *p = key, *nul;
	uint64_t fence = 0;
	size_t n;
	int i;

	*name_len = 0;
	*key_fence = 0;
	if (len == 0 || len > FORMAT_KEY_MAX)
		return FORMAT_KEY_BAD;
	if ((nul = memchr(p, 0, len)) == NULL) {
		if (len > CORE_NAME_MAX)
			return FORMAT_KEY_BAD;
		*name_len = len;
		return FORMAT_KEY_NAME;
	}
	n = (size_t)(nul - p);
	if (n == 0 || len != n + FORMAT_HOLDER_SUFFIX)
		return FORMAT_KEY_BAD;
	for (i = 0; i < 8; i++)
		fence = fence << 8 | nul[1 + i];
	if (fence == 0)
		return FORMAT_KEY_BAD;
	*name_len = n;
	*key_fence = fence;
	return FORMAT_KEY_HOLDER;
}

size_t
format_key_name_len(const void *key, size_t len)
{
	const char *nul = memchr(key, '\0', len);

	return nul != NULL ? (size_t)(nul - (const char *)key) : len;
}

bool
format_key_fits(uint64_t key_fence, const struct core_record *rec)
{
	bool multi = rec->limit > 1 || rec->shared;

	if (key_fence == 0)
		return rec->fence == 0 || !multi;
	return rec->fence == key_fence && multi;
}

bool
format_record_of_boot(const void *val, size_t len, const uint8_t boot_id[16])
{
	/* Every readable version keeps the boot id at 48 (64 bytes at least). */
	return len >= FORMAT_RECORD_V1_SIZE &&
	    memcmp((const unsigned char *)val + 48, boot_id, 16) == 0;
}

void
format_record_walls(const void *val, size_t len, int64_t walls[2])
{
	const unsigned char *p = val;

	walls[0] = len >= FORMAT_RECORD_V1_SIZE ?
	    (int64_t)bytes_get_le64(p + 40) : 0;
	walls[1] = len >= 88 && p[0] != FORMAT_RECORD_V1 ?
	    (int64_t)bytes_get_le64(p + 80) : 0;
}

size_t
format_record_rebase(const struct core_record *rec,
    const uint8_t boot_id[16], const int64_t walls[2],
    unsigned char out[FORMAT_RECORD_SIZE])
{
	size_t n = format_record_encode(rec, boot_id, 0, 0, out);

	bytes_put_le64(out + 40, (uint64_t)walls[0]);
	if (rec->delay_until != 0)
		bytes_put_le64(out + 80, (uint64_t)walls[1]);
	return n;
}

/* ---- the journal ------------------------------------------------------ */

/* The CRC of a header's bytes 8..31 and of the operations after it. */
static uint32_t
journal_crc(const unsigned char *hdr, const void *ops, size_t len)
{
	uint32_t crc = format_crc32c(0, hdr + 8, FORMAT_JOURNAL_HEADER - 8);

	return format_crc32c(crc, ops, len);
}

void
format_journal_encode(const struct format_journal_header *h, const void *ops,
    unsigned char out[FORMAT_JOURNAL_HEADER])
{
	bytes_put_le32(out, h->holder_keys ? FORMAT_JOURNAL_MAGIC :
	    FORMAT_JOURNAL_MAGIC_V1);
	bytes_put_le64(out + 8, h->seq);
	bytes_put_le64(out + 16, h->has_hwm ? h->hwm : 0);
	bytes_put_le32(out + 24, h->len);
	bytes_put_le32(out + 28, h->has_hwm ? FORMAT_JOURNAL_HAS_HWM : 0);
	bytes_put_le32(out + 4, journal_crc(out, ops, h->len));
}

bool
format_journal_decode(const unsigned char in[FORMAT_JOURNAL_HEADER],
    struct format_journal_header *h)
{
	uint32_t magic = bytes_get_le32(in);

	if (magic != FORMAT_JOURNAL_MAGIC && magic != FORMAT_JOURNAL_MAGIC_V1)
		return false;
	h->holder_keys = magic == FORMAT_JOURNAL_MAGIC;
	h->seq = bytes_get_le64(in + 8);
	h->hwm = bytes_get_le64(in + 16);
	h->len = bytes_get_le32(in + 24);
	h->has_hwm = (bytes_get_le32(in + 28) & FORMAT_JOURNAL_HAS_HWM) != 0;
	return true;
}

bool
format_journal_check(const unsigned char in[FORMAT_JOURNAL_HEADER],
    const void *ops, size_t len)
{
	return journal_crc(in, ops, len) == bytes_get_le32(in + 4);
}

/*
 * The table of the reflected polynomial 0x82f63b78, one entry a byte
 * value: entry i is i shifted out through eight rounds of
 * c = c & 1 ? (c >> 1) ^ 0x82f63b78 : c >> 1.  Written out, not built at
 * the first call, so that no thread can see it half made (the commit may
 * run off the loop's thread); test_format checks it against the standard
 * test vectors.
 */
static const uint32_t crc32c_table[256] = {
	0x00000000u, 0xf26b8303u, 0xe13b70f7u, 0x1350f3f4u,
	0xc79a971fu, 0x35f1141cu, 0x26a1e7e8u, 0xd4ca64ebu,
	0x8ad958cfu, 0x78b2dbccu, 0x6be22838u, 0x9989ab3bu,
	0x4d43cfd0u, 0xbf284cd3u, 0xac78bf27u, 0x5e133c24u,
	0x105ec76fu, 0xe235446cu, 0xf165b798u, 0x030e349bu,
	0xd7c45070u, 0x25afd373u, 0x36ff2087u, 0xc494a384u,
	0x9a879fa0u, 0x68ec1ca3u, 0x7bbcef57u, 0x89d76c54u,
	0x5d1d08bfu, 0xaf768bbcu, 0xbc267848u, 0x4e4dfb4bu,
	0x20bd8edeu, 0xd2d60dddu, 0xc186fe29u, 0x33ed7d2au,
	0xe72719c1u, 0x154c9ac2u, 0x061c6936u, 0xf477ea35u,
	0xaa64d611u, 0x580f5512u, 0x4b5fa6e6u, 0xb93425e5u,
	0x6dfe410eu, 0x9f95c20du, 0x8cc531f9u, 0x7eaeb2fau,
	0x30e349b1u, 0xc288cab2u, 0xd1d83946u, 0x23b3ba45u,
	0xf779deaeu, 0x05125dadu, 0x1642ae59u, 0xe4292d5au,
	0xba3a117eu, 0x4851927du, 0x5b016189u, 0xa96ae28au,
	0x7da08661u, 0x8fcb0562u, 0x9c9bf696u, 0x6ef07595u,
	0x417b1dbcu, 0xb3109ebfu, 0xa0406d4bu, 0x522bee48u,
	0x86e18aa3u, 0x748a09a0u, 0x67dafa54u, 0x95b17957u,
	0xcba24573u, 0x39c9c670u, 0x2a993584u, 0xd8f2b687u,
	0x0c38d26cu, 0xfe53516fu, 0xed03a29bu, 0x1f682198u,
	0x5125dad3u, 0xa34e59d0u, 0xb01eaa24u, 0x42752927u,
	0x96bf4dccu, 0x64d4cecfu, 0x77843d3bu, 0x85efbe38u,
	0xdbfc821cu, 0x2997011fu, 0x3ac7f2ebu, 0xc8ac71e8u,
	0x1c661503u, 0xee0d9600u, 0xfd5d65f4u, 0x0f36e6f7u,
	0x61c69362u, 0x93ad1061u, 0x80fde395u, 0x72966096u,
	0xa65c047du, 0x5437877eu, 0x4767748au, 0xb50cf789u,
	0xeb1fcbadu, 0x197448aeu, 0x0a24bb5au, 0xf84f3859u,
	0x2c855cb2u, 0xdeeedfb1u, 0xcdbe2c45u, 0x3fd5af46u,
	0x7198540du, 0x83f3d70eu, 0x90a324fau, 0x62c8a7f9u,
	0xb602c312u, 0x44694011u, 0x5739b3e5u, 0xa55230e6u,
	0xfb410cc2u, 0x092a8fc1u, 0x1a7a7c35u, 0xe811ff36u,
	0x3cdb9bddu, 0xceb018deu, 0xdde0eb2au, 0x2f8b6829u,
	0x82f63b78u, 0x709db87bu, 0x63cd4b8fu, 0x91a6c88cu,
	0x456cac67u, 0xb7072f64u, 0xa457dc90u, 0x563c5f93u,
	0x082f63b7u, 0xfa44e0b4u, 0xe9141340u, 0x1b7f9043u,
	0xcfb5f4a8u, 0x3dde77abu, 0x2e8e845fu, 0xdce5075cu,
	0x92a8fc17u, 0x60c37f14u, 0x73938ce0u, 0x81f80fe3u,
	0x55326b08u, 0xa759e80bu, 0xb4091bffu, 0x466298fcu,
	0x1871a4d8u, 0xea1a27dbu, 0xf94ad42fu, 0x0b21572cu,
	0xdfeb33c7u, 0x2d80b0c4u, 0x3ed04330u, 0xccbbc033u,
	0xa24bb5a6u, 0x502036a5u, 0x4370c551u, 0xb11b4652u,
	0x65d122b9u, 0x97baa1bau, 0x84ea524eu, 0x7681d14du,
	0x2892ed69u, 0xdaf96e6au, 0xc9a99d9eu, 0x3bc21e9du,
	0xef087a76u, 0x1d63f975u, 0x0e330a81u, 0xfc588982u,
	0xb21572c9u, 0x407ef1cau, 0x532e023eu, 0xa145813du,
	0x758fe5d6u, 0x87e466d5u, 0x94b49521u, 0x66df1622u,
	0x38cc2a06u, 0xcaa7a905u, 0xd9f75af1u, 0x2b9cd9f2u,
	0xff56bd19u, 0x0d3d3e1au, 0x1e6dcdeeu, 0xec064eedu,
	0xc38d26c4u, 0x31e6a5c7u, 0x22b65633u, 0xd0ddd530u,
	0x0417b1dbu, 0xf67c32d8u, 0xe52cc12cu, 0x1747422fu,
	0x49547e0bu, 0xbb3ffd08u, 0xa86f0efcu, 0x5a048dffu,
	0x8ecee914u, 0x7ca56a17u, 0x6ff599e3u, 0x9d9e1ae0u,
	0xd3d3e1abu, 0x21b862a8u, 0x32e8915cu, 0xc083125fu,
	0x144976b4u, 0xe622f5b7u, 0xf5720643u, 0x07198540u,
	0x590ab964u, 0xab613a67u, 0xb831c993u, 0x4a5a4a90u,
	0x9e902e7bu, 0x6cfbad78u, 0x7fab5e8cu, 0x8dc0dd8fu,
	0xe330a81au, 0x115b2b19u, 0x020bd8edu, 0xf0605beeu,
	0x24aa3f05u, 0xd6c1bc06u, 0xc5914ff2u, 0x37faccf1u,
	0x69e9f0d5u, 0x9b8273d6u, 0x88d28022u, 0x7ab90321u,
	0xae7367cau, 0x5c18e4c9u, 0x4f48173du, 0xbd23943eu,
	0xf36e6f75u, 0x0105ec76u, 0x12551f82u, 0xe03e9c81u,
	0x34f4f86au, 0xc69f7b69u, 0xd5cf889du, 0x27a40b9eu,
	0x79b737bau, 0x8bdcb4b9u, 0x988c474du, 0x6ae7c44eu,
	0xbe2da0a5u, 0x4c4623a6u, 0x5f16d052u, 0xad7d5351u,
};

uint32_t
format_crc32c(uint32_t crc, const void *data, size_t len)
{
	const unsigned char *p = data;

	crc = ~crc;
	while (len--)
		crc = crc32c_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

/* ---- LMDB's meta keys -------------------------------------------------- */

void
format_mark_encode(const struct format_mark *mark,
    unsigned char out[FORMAT_META_MARK_SIZE])
{
	bytes_put_le64(out, mark->seq);
	bytes_put_le64(out + 8, mark->off);
	bytes_put_le64(out + 16, mark->clean ? 1 : 0);
}

bool
format_mark_decode(const void *val, size_t len, struct format_mark *mark)
{
	const unsigned char *p = val;

	memset(mark, 0, sizeof(*mark));
	if (len != FORMAT_META_MARK_SIZE)
		return false;
	mark->seq = bytes_get_le64(p);
	mark->off = bytes_get_le64(p + 8);
	mark->clean = (bytes_get_le64(p + 16) & 1) != 0;
	return true;
}

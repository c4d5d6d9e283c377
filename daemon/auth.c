/*
 * auth.c - the rules of --auth FILE: parsing them, finding a token's
 * principal, and answering "may this principal do this to this name".
 * It reads the file it is given and nothing else: no sockets, no loop;
 * the service asks it, the server reloads it on SIGHUP.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "daemon/auth.h"
#include "proto/proto.h"

/* The most an auth file may hold: AUTH_RULES_MAX long lines. */
#define AUTH_FILE_MAX ((size_t)64 << 20)
#define AUTH_COLUMNS 4

static const struct {
	const char *word;
	unsigned perm;
} auth_perms[] = {
	{ "lock", AUTH_PERM_LOCK },
	{ "read", AUTH_PERM_READ },
	{ "admin", AUTH_PERM_ADMIN },
};

static bool
is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static int
hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool
auth_valid_principal(const char *s, size_t len)
{
	return len <= AUTH_PRINCIPAL_MAX && proto_valid_name(s, len);
}

static bool
parse_hash(const char *s, size_t len, uint8_t out[AUTH_HASH_BYTES])
{
	size_t i;

	if (len != (size_t)2 * AUTH_HASH_BYTES)
		return false;
	for (i = 0; i < AUTH_HASH_BYTES; i++) {
		int hi = hex_digit(s[2 * i]), lo = hex_digit(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

static bool
parse_perms(const char *s, size_t len, unsigned *out)
{
	size_t start = 0, end, i;
	bool known;

	*out = 0;
	while (start <= len) {
		end = start;
		while (end < len && s[end] != ',')
			end++;
		known = false;
		for (i = 0; i < sizeof(auth_perms) / sizeof(auth_perms[0]);
		    i++) {
			if (strlen(auth_perms[i].word) == end - start &&
			    memcmp(auth_perms[i].word, s + start,
			    end - start) == 0) {
				*out |= auth_perms[i].perm;
				known = true;
			}
		}
		if (!known)
			return false;
		start = end + 1;
	}
	return true;
}

/* Parses one line (no LF); returns NULL and fills *rule and *used, or a
 * sentence saying what is wrong.  *used is false for a blank line. */
static const char *
parse_line(const char *line, size_t n, struct auth_rule *rule, bool *used)
{
	const char *word[AUTH_COLUMNS];
	size_t len[AUTH_COLUMNS], count = 0, i = 0, start;

	*used = false;
	while (i < n) {
		while (i < n && is_blank(line[i]))
			i++;
		if (i == n || line[i] == '#')
			break;
		start = i;
		while (i < n && !is_blank(line[i]))
			i++;
		if (count == AUTH_COLUMNS)
			return "more than 4 columns";
		word[count] = line + start;
		len[count++] = i - start;
	}
	if (count == 0)
		return NULL;
	if (count != AUTH_COLUMNS)
		return "expected <principal> <sha256 hex or -> <permissions> "
		    "<name prefix>";
	memset(rule, 0, sizeof(*rule));
	if (!auth_valid_principal(word[0], len[0]))
		return "principal must be 1 to 64 bytes without control bytes";
	memcpy(rule->principal, word[0], len[0]);
	if (len[1] == 1 && word[1][0] == '-')
		rule->has_hash = false;
	else if (parse_hash(word[1], len[1], rule->hash))
		rule->has_hash = true;
	else
		return "token hash must be 64 hex digits (sha256) or -";
	if (!parse_perms(word[2], len[2], &rule->perms))
		return "permissions must be lock, read and admin, "
		    "comma-separated";
	if (!proto_valid_name(word[3], len[3]))
		return "name prefix must be 1 to 255 bytes";
	memcpy(rule->prefix, word[3], len[3]);
	rule->prefix_len = len[3];
	*used = true;
	return NULL;
}

int
auth_rules_parse(struct auth_rules *out, const char *text, size_t len,
    char *err, size_t err_len)
{
	struct auth_rules rules = { NULL, 0 };
	size_t pos = 0, cap = 0, end, lineno = 0;
	struct auth_rule rule;
	const char *why;
	bool used;

	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);

		end = nl != NULL ? (size_t)(nl - text) : len;
		lineno++;
		if (memchr(text + pos, '\0', end - pos) != NULL)
			why = "line holds a NUL byte";
		else
			why = parse_line(text + pos, end - pos, &rule, &used);
		if (why == NULL && used && rules.count == AUTH_RULES_MAX)
			why = "too many lines";
		if (why != NULL) {
			snprintf(err, err_len, "line %zu: %s", lineno, why);
			auth_rules_free(&rules);
			return -1;
		}
		if (used) {
			if (rules.count == cap) {
				size_t ncap = cap ? cap * 2 : 16;
				struct auth_rule *p = realloc(rules.rule,
				    ncap * sizeof(*p));

				if (p == NULL) {
					snprintf(err, err_len, "out of memory");
					auth_rules_free(&rules);
					return -1;
				}
				rules.rule = p;
				cap = ncap;
			}
			rules.rule[rules.count++] = rule;
		}
		pos = end + 1;
	}
	*out = rules;
	return 0;
}

int
auth_rules_load(struct auth_rules *out, const char *path, char *err,
    size_t err_len)
{
	char why[256], *text = NULL;
	size_t len = 0, cap = 0, n;
	FILE *f = fopen(path, "r");
	int rc;

	if (f == NULL) {
		snprintf(err, err_len, "%s: %s", path, strerror(errno));
		return -1;
	}
	for (;;) {
		if (len == cap) {
			char *p;

			if (cap >= AUTH_FILE_MAX) {
				snprintf(err, err_len, "%s: larger than %zu "
				    "bytes", path, AUTH_FILE_MAX);
				goto fail;
			}
			cap = cap ? cap * 2 : 4096;
			if ((p = realloc(text, cap)) == NULL) {
				snprintf(err, err_len, "%s: out of memory",
				    path);
				goto fail;
			}
			text = p;
		}
		n = fread(text + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		snprintf(err, err_len, "%s: read error", path);
		goto fail;
	}
	fclose(f);
	rc = auth_rules_parse(out, text, len, why, sizeof(why));
	if (rc != 0)
		snprintf(err, err_len, "%s: %s", path, why);
	free(text);
	return rc;
fail:
	fclose(f);
	free(text);
	return -1;
}

void
auth_rules_free(struct auth_rules *rules)
{
	free(rules->rule);
	rules->rule = NULL;
	rules->count = 0;
}

static int
compare_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

long
auth_rules_principals(const struct auth_rules *rules)
{
	const char **names;
	long distinct = 0;
	size_t i;

	if (rules->count == 0)
		return 0;
	if ((names = malloc(rules->count * sizeof(*names))) == NULL)
		return -1;
	for (i = 0; i < rules->count; i++)
		names[i] = rules->rule[i].principal;
	qsort(names, rules->count, sizeof(*names), compare_names);
	for (i = 0; i < rules->count; i++)
		if (i == 0 || strcmp(names[i - 1], names[i]) != 0)
			distinct++;
	free(names);
	return distinct;
}

const char *
auth_token_principal(const struct auth_rules *rules, const char *token,
    size_t len)
{
	uint8_t hash[AUTH_HASH_BYTES];
	unsigned int hash_len = 0;
	const char *found = NULL;
	size_t i;

	if (rules == NULL || EVP_Digest(token, len, hash, &hash_len,
	    EVP_sha256(), NULL) != 1 || hash_len != sizeof(hash))
		return NULL;
	/* No early exit: how long this takes says nothing of which line,
	 * if any, matched. */
	for (i = 0; i < rules->count; i++) {
		const struct auth_rule *r = &rules->rule[i];
		int same = CRYPTO_memcmp(hash, r->hash, sizeof(hash)) == 0;

		if (same && r->has_hash && found == NULL)
			found = r->principal;
	}
	OPENSSL_cleanse(hash, sizeof(hash));
	return found;
}

bool
auth_may(const struct auth_rules *rules, const char *principal,
    unsigned perm, const char *name, size_t name_len)
{
	size_t i;

	if (rules == NULL || principal == NULL || principal[0] == '\0')
		return false;
	for (i = 0; i < rules->count; i++) {
		const struct auth_rule *r = &rules->rule[i];

		if ((r->perms & perm) == perm &&
		    strcmp(r->principal, principal) == 0 &&
		    r->prefix_len <= name_len &&
		    memcmp(r->prefix, name, r->prefix_len) == 0)
			return true;
	}
	return false;
}

static bool
starts_with(const char *s, size_t len, const char *p, size_t p_len)
{
	return p_len <= len && memcmp(s, p, p_len) == 0;
}

/* Bytewise, a prefix before what it prefixes. */
static int
range_compare(const void *a, const void *b)
{
	const struct auth_range *x = a, *y = b;
	int c = memcmp(x->prefix, y->prefix, x->len < y->len ? x->len :
	    y->len);

	if (c != 0)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

long
auth_ranges(const struct auth_rules *rules, const char *principal,
    unsigned perm, const char *prefix, size_t prefix_len,
    struct auth_range **out)
{
	struct auth_range *r;
	size_t i, n = 0, kept = 0;

	*out = NULL;
	if (rules == NULL || principal == NULL || principal[0] == '\0')
		return 0;
	for (i = 0; i < rules->count; i++)
		if ((rules->rule[i].perms & perm) == perm &&
		    strcmp(rules->rule[i].principal, principal) == 0)
			n++;
	if (n == 0)
		return 0;
	if ((r = calloc(n, sizeof(*r))) == NULL)
		return -1;
	n = 0;
	for (i = 0; i < rules->count; i++) {
		const struct auth_rule *u = &rules->rule[i];

		if ((u->perms & perm) != perm ||
		    strcmp(u->principal, principal) != 0)
			continue;
		if (starts_with(prefix, prefix_len, u->prefix, u->prefix_len))
			r[n++] = (struct auth_range){ prefix, prefix_len };
		else if (starts_with(u->prefix, u->prefix_len, prefix,
		    prefix_len))
			r[n++] = (struct auth_range){ u->prefix,
			    u->prefix_len };
	}
	qsort(r, n, sizeof(*r), range_compare);
	/* The names under a prefix sort right after it: a range that
	 * starts with the last one kept is inside it. */
	for (i = 0; i < n; i++)
		if (kept == 0 || !starts_with(r[i].prefix, r[i].len,
		    r[kept - 1].prefix, r[kept - 1].len))
			r[kept++] = r[i];
	if (kept == 0) {
		free(r);
		return 0;
	}
	*out = r;
	return (long)kept;
}

bool
auth_may_any(const struct auth_rules *rules, const char *principal,
    unsigned perm)
{
	size_t i;

	if (rules == NULL || principal == NULL || principal[0] == '\0')
		return false;
	for (i = 0; i < rules->count; i++)
		if ((rules->rule[i].perms & perm) == perm &&
		    strcmp(rules->rule[i].principal, principal) == 0)
			return true;
	return false;
}

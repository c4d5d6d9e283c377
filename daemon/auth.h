/*
 * auth.h - who may do what: the rules of --auth FILE, the principal of a
 * token, and the permission checks the service makes before it runs a
 * command.
 *
 * Each line of the file is
 *   <principal> <sha256 of the token, hex, or -> <permissions> <name prefix>
 * with permissions a comma-separated subset of lock, read and admin.  A
 * principal may have several lines: each grants its own permissions on its
 * own prefix, and they are never pooled (lock on "a/" and read on "b/" is
 * not lock on "b/").  Tokens are never stored, only their SHA-256, and a
 * presented token's hash is compared with every line's in constant time.
 */
#ifndef LOCKD_AUTH_H
#define LOCKD_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes in a principal: a CN, "uid:<n>" or a name from the file.  It is
 * written in AUTHED replies, so it holds what a lock name may hold. */
#define AUTH_PRINCIPAL_MAX 64
/* Bytes in a name prefix (a lock name is at most 255). */
#define AUTH_PREFIX_MAX 255
/* Lines in an auth file. */
#define AUTH_RULES_MAX 65536
/* Failed AUTHs one connection may make; the last is answered and the
 * connection closed, so a token cannot be guessed at line rate. */
#define AUTH_MAX_FAILURES 3
#define AUTH_HASH_BYTES 32

enum auth_perm {
	AUTH_PERM_LOCK = 1u << 0,   /* ACQUIRE, TRY, RENEW, RELEASE */
	AUTH_PERM_READ = 1u << 1,   /* STATUS, LIST, WATCH, CHECK */
	AUTH_PERM_ADMIN = 1u << 2   /* FORCE, STATS */
};

struct auth_rule {
	char principal[AUTH_PRINCIPAL_MAX + 1];
	bool has_hash;                  /* false: the token column was "-" */
	uint8_t hash[AUTH_HASH_BYTES];
	unsigned perms;                 /* AUTH_PERM_* */
	char prefix[AUTH_PREFIX_MAX + 1];
	size_t prefix_len;              /* 0: every name */
};

struct auth_rules {
	struct auth_rule *rule;
	size_t count;
};

/*
 * Parses an auth file's text into *out (freed with auth_rules_free).
 * Returns 0, or -1 with "line N: why" in err and *out untouched.
 */
int auth_rules_parse(struct auth_rules *out, const char *text, size_t len,
    char *err, size_t err_len);

/* Reads and parses path; -1 with "path: why" in err, *out untouched. */
int auth_rules_load(struct auth_rules *out, const char *path, char *err,
    size_t err_len);

void auth_rules_free(struct auth_rules *rules);

/* How many principals the rules name (a principal of several lines counts
 * once); -1 when out of memory. */
long auth_rules_principals(const struct auth_rules *rules);

/*
 * The principal whose line holds the SHA-256 of token[0..len), or NULL.
 * Every line's hash is compared, in constant time, whatever matched.
 */
const char *auth_token_principal(const struct auth_rules *rules,
    const char *token, size_t len);

/* True when some line of principal grants perm on a prefix of name. */
bool auth_may(const struct auth_rules *rules, const char *principal,
    unsigned perm, const char *name, size_t name_len);

/* True when some line of principal grants perm on any prefix (STATS). */
bool auth_may_any(const struct auth_rules *rules, const char *principal,
    unsigned perm);

/*
 * Where in the names under prefix[0..prefix_len) principal may use perm:
 * a list of name prefixes, each meaning "every name that starts with it",
 * none inside another, in bytewise order - so that walking each in turn
 * through the ordered index (LIST) meets every such name once, in order,
 * and no other name.  For each of the principal's lines with perm whose
 * prefix and `prefix` nest (one starts with the other), the longer of the
 * two.  Each item points into rules or into prefix.  Returns how many
 * (0: none, *out NULL), with *out to free(); -1 when out of memory.
 */
struct auth_range {
	const char *prefix;
	size_t len;
};
long auth_ranges(const struct auth_rules *rules, const char *principal,
    unsigned perm, const char *prefix, size_t prefix_len,
    struct auth_range **out);

/* True when s[0..len) can be a principal (as a name, and not too long). */
bool auth_valid_principal(const char *s, size_t len);

#endif

/*
 * test_auth.c - the rules of --auth FILE (daemon/auth.c): what a line may
 * hold and how a bad one is named, a token's principal (a token with one
 * byte changed is nobody), prefixes, several lines of one principal not
 * pooled, and a reload that keeps the old rules on a bad file.  The wire
 * side (AUTH, ERR DENIED, SIGHUP) is in tests/integration/test_auth.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/auth.h"

/* sha256("s3cret") and sha256("t0ken"). */
#define HASH_S3CRET \
	"1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0"
#define HASH_T0KEN \
	"b46c09677343261f0b439a472422225e3a230c9c094d6ab16762e2036b597053"

static const char rules_text[] =
    "# who   token-hash   permissions   prefix\n"
    "alice " HASH_S3CRET " lock,read app/   # alice's own\n"
    "alice - read shared/\n"
    "\n"
    "   # only a comment\n"
    "bob " "B46C09677343261F0B439A472422225E3A230C9C094D6AB16762E2036B597053"
    " admin ops/\n"
    "uid:1000 - lock app/uid/\n";

static void
parse(struct auth_rules *rules, const char *text)
{
	char err[256] = "";

	if (auth_rules_parse(rules, text, strlen(text), err,
	    sizeof(err)) != 0)
		fail_msg("parse failed: %s", err);
}

static void
test_auth_file_parses_comments_blank_lines_and_upper_case_hex(void **state)
{
	struct auth_rules rules;

	(void)state;
	parse(&rules, rules_text);
	assert_int_equal(rules.count, 4);
	assert_string_equal(rules.rule[0].principal, "alice");
	assert_true(rules.rule[0].has_hash);
	assert_int_equal(rules.rule[0].perms, AUTH_PERM_LOCK | AUTH_PERM_READ);
	assert_string_equal(rules.rule[0].prefix, "app/");
	assert_false(rules.rule[1].has_hash);
	assert_int_equal(rules.rule[2].perms, AUTH_PERM_ADMIN);
	auth_rules_free(&rules);
}

static void
test_auth_token_finds_its_principal_and_one_changed_byte_finds_none(
    void **state)
{
	struct auth_rules rules;

	(void)state;
	parse(&rules, rules_text);
	assert_string_equal(auth_token_principal(&rules, "s3cret", 6),
	    "alice");
	assert_string_equal(auth_token_principal(&rules, "t0ken", 5), "bob");
	assert_null(auth_token_principal(&rules, "s3creT", 6));
	assert_null(auth_token_principal(&rules, "s3cre", 5));
	assert_null(auth_token_principal(&rules, "s3cret!", 7));
	/* A line without a hash is never matched by a token. */
	assert_null(auth_token_principal(&rules, "-", 1));
	assert_null(auth_token_principal(NULL, "s3cret", 6));
	auth_rules_free(&rules);
}

static void
test_auth_may_checks_prefix_and_permission_per_line(void **state)
{
	struct auth_rules rules;

	(void)state;
	parse(&rules, rules_text);
	assert_true(auth_may(&rules, "alice", AUTH_PERM_LOCK, "app/x", 5));
	assert_true(auth_may(&rules, "alice", AUTH_PERM_READ, "app/x", 5));
	assert_true(auth_may(&rules, "alice", AUTH_PERM_LOCK, "app/", 4));
	assert_false(auth_may(&rules, "alice", AUTH_PERM_LOCK, "app", 3));
	assert_false(auth_may(&rules, "alice", AUTH_PERM_LOCK, "apx/x", 5));
	assert_false(auth_may(&rules, "alice", AUTH_PERM_ADMIN, "app/x", 5));
	/* Not pooled: read on shared/ does not add lock there. */
	assert_true(auth_may(&rules, "alice", AUTH_PERM_READ, "shared/a", 8));
	assert_false(auth_may(&rules, "alice", AUTH_PERM_LOCK, "shared/a",
	    8));
	assert_false(auth_may(&rules, "bob", AUTH_PERM_LOCK, "app/x", 5));
	assert_false(auth_may(&rules, "", AUTH_PERM_READ, "app/x", 5));
	assert_false(auth_may(&rules, "alic", AUTH_PERM_READ, "app/x", 5));
	assert_true(auth_may_any(&rules, "bob", AUTH_PERM_ADMIN));
	assert_false(auth_may_any(&rules, "alice", AUTH_PERM_ADMIN));
	assert_true(auth_may(&rules, "uid:1000", AUTH_PERM_LOCK, "app/uid/1",
	    9));
	auth_rules_free(&rules);
}

static void
test_auth_bad_lines_are_refused_naming_the_line(void **state)
{
	static const struct {
		const char *text;
		const char *err;
	} cases[] = {
		{ "a - lock\n", "line 1: expected" },
		{ "\na - lock p/ extra\n", "line 2: more than 4 columns" },
		{ "a 1234 lock p/\n", "line 1: token hash" },
		{ "a " HASH_S3CRET "0 lock p/\n", "line 1: token hash" },
		{ "a zz" HASH_S3CRET " lock p/\n", "line 1: token hash" },
		{ "a - write p/\n", "line 1: permissions" },
		{ "a - lock,,read p/\n", "line 1: permissions" },
		{ "a - lock, p/\n", "line 1: permissions" },
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		    " - lock p/\n", "line 1: principal" },
		{ "a - lock p/\x01\n", "line 1: name prefix" },
	};
	struct auth_rules rules = { NULL, 0 };
	char err[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = '\0';
		assert_int_equal(auth_rules_parse(&rules, cases[i].text,
		    strlen(cases[i].text), err, sizeof(err)), -1);
		if (strncmp(err, cases[i].err, strlen(cases[i].err)) != 0)
			fail_msg("case %zu: got '%s', want '%s...'", i, err,
			    cases[i].err);
		assert_null(rules.rule);
	}
}

static void
test_auth_load_of_a_bad_file_leaves_the_rules_untouched(void **state)
{
	char dir[] = "/tmp/test_auth.XXXXXX", path[64], err[512];
	struct auth_rules rules;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/auth", dir);
	assert_non_null(f = fopen(path, "w"));
	fputs(rules_text, f);
	fclose(f);
	assert_int_equal(auth_rules_load(&rules, path, err, sizeof(err)), 0);
	assert_int_equal(rules.count, 4);

	assert_non_null(f = fopen(path, "w"));
	fputs("alice - lock app/\nbroken line\n", f);
	fclose(f);
	assert_int_equal(auth_rules_load(&rules, path, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "line 2"));
	assert_int_equal(rules.count, 4);   /* the old rules stand */
	assert_string_equal(rules.rule[0].principal, "alice");

	unlink(path);
	assert_int_equal(auth_rules_load(&rules, path, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "No such file"));
	assert_int_equal(rules.count, 4);
	auth_rules_free(&rules);
	rmdir(dir);
}

/* ranges as "p1 p2 ...", each prefix once. */
static const char *
ranges_text(const struct auth_rules *rules, const char *principal,
    unsigned perm, const char *prefix)
{
	static char out[512];
	struct auth_range *r;
	long n, i;
	size_t len = 0;

	n = auth_ranges(rules, principal, perm, prefix, strlen(prefix), &r);
	assert_true(n >= 0);
	out[0] = '\0';
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(out + len, sizeof(out) - len, "%s%.*s",
		    i > 0 ? " " : "", (int)r[i].len, r[i].prefix);
	free(r);
	return out;
}

/* The runs of names a principal may read under a LIST's prefix: its own
 * lines with the permission only, each the longer of the two prefixes,
 * none inside another, in bytewise order. */
static void
test_auth_ranges_are_the_readable_runs_in_order_none_nested(void **state)
{
	struct auth_rules rules;

	(void)state;
	parse(&rules, "alice - read x/\n"
	    "alice - read job/c/\n"
	    "alice - lock job/b\n"
	    "alice - read,lock job/a\n"
	    "alice - read job/c/deep/\n"
	    "alice - read job/a\n"
	    "bob - read job/\n");
	assert_string_equal(ranges_text(&rules, "alice", AUTH_PERM_READ, ""),
	    "job/a job/c/ x/");
	assert_string_equal(ranges_text(&rules, "alice", AUTH_PERM_READ,
	    "job/"), "job/a job/c/");
	/* A prefix inside a run is the run; one beside every run, none. */
	assert_string_equal(ranges_text(&rules, "alice", AUTH_PERM_READ,
	    "job/c/d"), "job/c/d");
	assert_string_equal(ranges_text(&rules, "alice", AUTH_PERM_READ,
	    "job/b"), "");
	assert_string_equal(ranges_text(&rules, "alice", AUTH_PERM_LOCK,
	    "job/"), "job/a job/b");
	assert_string_equal(ranges_text(&rules, "bob", AUTH_PERM_READ, "j"),
	    "job/");
	assert_string_equal(ranges_text(&rules, "carol", AUTH_PERM_READ, ""),
	    "");
	assert_string_equal(ranges_text(&rules, "", AUTH_PERM_READ, ""), "");
	auth_rules_free(&rules);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
		    test_auth_file_parses_comments_blank_lines_and_upper_case_hex),
		cmocka_unit_test(
		    test_auth_token_finds_its_principal_and_one_changed_byte_finds_none),
		cmocka_unit_test(
		    test_auth_may_checks_prefix_and_permission_per_line),
		cmocka_unit_test(
		    test_auth_bad_lines_are_refused_naming_the_line),
		cmocka_unit_test(
		    test_auth_load_of_a_bad_file_leaves_the_rules_untouched),
		cmocka_unit_test(
		    test_auth_ranges_are_the_readable_runs_in_order_none_nested),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

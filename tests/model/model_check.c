/*
 * model_check.c - the model checker as a cmocka program: one test runs the
 * standard rules through every scenario and requires every property to
 * hold; one test per broken variant requires the checker to catch it with
 * the property the variant is meant to break.  A checker that lets a
 * broken variant pass fails the build's tests.
 *
 *   model_check              every test
 *   model_check PATTERN      only the tests whose names match (cmocka's
 *                            filter, e.g. '*decide*')
 *   model_check --list       the variants and what each one breaks
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/model/model.h"

static void
print_schedule_counts(const struct model_scenario *sc,
    const struct model_result *r)
{
	printf("model: %-9s %8llu states, %14llu schedules (%llu executed, "
	    "%llu transitions, longest %u steps), %.2f s\n", sc->name,
	    (unsigned long long)r->states, (unsigned long long)r->schedules,
	    (unsigned long long)r->executions,
	    (unsigned long long)r->transitions, r->depth, r->seconds);
}

static void
print_violation(const struct model_result *r, enum model_property p)
{
	printf("         %s: %s\n         schedule: %s\n",
	    model_property_name(p), r->message[p], r->trace[p]);
}

static void
test_model_standard_core_keeps_every_property(void **state)
{
	struct model_result *r = malloc(sizeof(*r));
	uint64_t covered[MODEL_COVERAGE];
	bool clean = true, complete = true;
	size_t i;
	int p, c;

	(void)state;
	assert_non_null(r);
	memset(covered, 0, sizeof(covered));
	for (i = 0; i < model_nscenarios; i++) {
		model_explore(&model_scenarios[i], &core_rules_std,
		    MODEL_HARNESS_RIGHT, MODEL_OK, r);
		print_schedule_counts(&model_scenarios[i], r);
		for (p = 1; p < MODEL_PROPERTIES; p++)
			if (r->found_after[p] != 0) {
				print_violation(r, (enum model_property)p);
				clean = false;
			}
		for (c = 0; c < MODEL_COVERAGE; c++)
			covered[c] += r->covered[c];
	}
	/* A scenario that stops reaching a case proves nothing about it. */
	printf("model: transitions that reached each case:\n");
	for (c = 0; c < MODEL_COVERAGE; c++) {
		printf("         %-36s %10llu\n",
		    model_coverage_name((enum model_coverage)c),
		    (unsigned long long)covered[c]);
		if (covered[c] == 0)
			complete = false;
	}
	free(r);
	assert_true(clean);
	assert_true(complete);
}

/* Every property checker must be able to fail: each has a guard. */
static void
test_model_every_property_has_a_guard_variant(void **state)
{
	int p;
	size_t i;

	(void)state;
	for (p = 1; p < MODEL_PROPERTIES; p++) {
		for (i = 0; i < model_nvariants; i++)
			if (model_variants[i].expected == (enum model_property)p)
				break;
		if (i == model_nvariants)
			fail_msg("no variant guards %s",
			    model_property_name((enum model_property)p));
	}
}

/* The variant is the test's state. */
static void
test_model_catches(void **state)
{
	const struct model_variant *v = *state;
	struct model_result *r = malloc(sizeof(*r));
	uint64_t executed = 0;
	bool caught = false;
	size_t i;

	assert_non_null(r);
	for (i = 0; i < model_nscenarios && !caught; i++) {
		const struct model_scenario *sc = &model_scenarios[i];

		model_explore(sc, v->rules, v->harness, v->expected, r);
		caught = r->found_after[v->expected] != 0;
		if (!caught) {
			executed += r->executions;
			continue;
		}
		printf("model: %s caught by %s in scenario %s after %llu "
		    "executed schedules (%.2f s); first violation: %s\n",
		    v->name,
		    model_property_name(v->expected), sc->name,
		    (unsigned long long)(executed +
		    r->found_after[v->expected]), r->seconds,
		    model_property_name(r->first));
		print_violation(r, v->expected);
	}
	if (!caught) {
		printf("model: %s (%s) was NOT caught by %s\n", v->name,
		    v->what, model_property_name(v->expected));
		for (i = 1; i < MODEL_PROPERTIES; i++)
			if (r->found_after[i] != 0)
				print_violation(r, (enum model_property)i);
	}
	free(r);
	assert_true(caught);
}

int
main(int argc, char **argv)
{
	struct CMUnitTest *tests;
	char (*names)[96];
	size_t i, n = 0;
	int rc;

	if (argc > 1 && strcmp(argv[1], "--list") == 0) {
		for (i = 0; i < model_nvariants; i++)
			printf("%-28s %-24s %s\n", model_variants[i].name,
			    model_property_name(model_variants[i].expected),
			    model_variants[i].what);
		return 0;
	}
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);

	tests = calloc(model_nvariants + 2, sizeof(*tests));
	names = calloc(model_nvariants, sizeof(*names));
	if (tests == NULL || names == NULL)
		return 1;
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(
	    test_model_every_property_has_a_guard_variant);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(
	    test_model_standard_core_keeps_every_property);
	for (i = 0; i < model_nvariants; i++) {
		snprintf(names[i], sizeof(names[i]), "test_model_catches_%s",
		    model_variants[i].name);
		tests[n].name = names[i];
		tests[n].test_func = test_model_catches;
		tests[n].initial_state = (void *)(uintptr_t)&model_variants[i];
		n++;
	}
	rc = _cmocka_run_group_tests("model_check", tests, n, NULL, NULL);
	free(tests);
	free(names);
	return rc;
}

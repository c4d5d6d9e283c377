/*
 * scenarios.c - the bounded worlds the model checker explores.  Each is a
 * few scripted clients, the clock instants it may step to and a crash
 * budget; the checker tries every order of every client's next op, every
 * clock step, every due tick and every crash (after or before a commit).
 * The instants are chosen around the lease boundaries: the instant before
 * an expiry, the expiry itself, and after.  docs/design-core.md explains
 * what each one is for and how big it is.
 */
#include "tests/model/model.h"

#define LEASE 10
#define FOREVER CORE_WAIT_FOREVER

#define ACQ(n, wait, onclose) { MODEL_ACQUIRE, (n), LEASE, (wait), (onclose) }
#define TRY(n) { MODEL_TRY, (n), LEASE, 0, false }
#define RENEW(n) { MODEL_RENEW, (n), LEASE, 0, false }
#define RELEASE(n) { MODEL_RELEASE, (n), 0, 0, false }
#define FORGE_RENEW(n) { MODEL_FORGE_RENEW, (n), LEASE, 0, false }
#define FORGE_RELEASE(n) { MODEL_FORGE_RELEASE, (n), 0, 0, false }
#define DISCONNECT { MODEL_DISCONNECT, 0, 0, 0, false }
#define ACQ_DELAY(n, wait, delay) \
	{ MODEL_ACQUIRE, (n), LEASE, (wait), false, (delay), 0 }
#define FORCE(n, fence) { MODEL_FORCE, (n), 0, 0, false, 0, (fence) }
#define WATCH(n, fence, wait) { MODEL_WATCH, (n), 0, (wait), false, 0, (fence) }
#define ACQ_RID(n, wait, rid) \
	{ MODEL_ACQUIRE, (n), LEASE, (wait), false, 0, 0, (rid) }
#define TRY_RID(n, rid) { MODEL_TRY, (n), LEASE, 0, false, 0, 0, (rid) }
#define ACQ_RID_ONCLOSE(n, rid) \
	{ MODEL_ACQUIRE, (n), LEASE, FOREVER, true, 0, 0, (rid) }
/* Holder sets: mode=shared, and limit= (a counting semaphore). */
#define ACQ_SH(n, wait) \
	{ MODEL_ACQUIRE, (n), LEASE, (wait), false, 0, 0, NULL, 0, true }
#define ACQ_SH_ONCLOSE(n) \
	{ MODEL_ACQUIRE, (n), LEASE, FOREVER, true, 0, 0, NULL, 0, true }
#define TRY_SH(n) { MODEL_TRY, (n), LEASE, 0, false, 0, 0, NULL, 0, true }
#define ACQ_N(n, wait, limit) \
	{ MODEL_ACQUIRE, (n), LEASE, (wait), false, 0, 0, NULL, (limit) }
#define TRY_N(n, limit) \
	{ MODEL_TRY, (n), LEASE, 0, false, 0, 0, NULL, (limit) }
#define ACQ_N_DELAY(n, limit, delay) \
	{ MODEL_ACQUIRE, (n), LEASE, FOREVER, false, (delay), 0, NULL, \
	    (limit) }
#define ACQ_N_RID(n, limit, rid) \
	{ MODEL_ACQUIRE, (n), LEASE, FOREVER, false, 0, 0, (rid), (limit) }

const struct model_scenario model_scenarios[] = {
	{
		.name = "permit-rid",
		.summary = "a semaphore of 2: A takes a permit with rid=a and "
		    "repeats it, B takes one with rid=b: the repeat gets A's "
		    "own grant among the two; one crash",
		.nnames = 1,
		.names = { "L" },
		.nclients = 2,
		.clients = {
			{ 'A', 3, { ACQ_N_RID(0, 2, "a"), ACQ_N_RID(0, 2, "a"),
			    RELEASE(0) } },
			{ 'B', 2, { ACQ_N_RID(0, 2, "b"), RELEASE(0) } },
		},
		.ntimes = 2,
		.times = { 0, 10 },
		.crashes = 1,
	},
	{
		.name = "retry",
		.summary = "A acquires with rid=a and repeats it (after a "
		    "crash that may lose the GRANTED, or not), then "
		    "releases and tries with rid=a again; B queues with "
		    "rid=ab (wait 10), whose prefix is A's rid; D tries; "
		    "one crash",
		.nnames = 1,
		.names = { "L" },
		.nclients = 3,
		.clients = {
			{ 'A', 4, { ACQ_RID(0, FOREVER, "a"),
			    ACQ_RID(0, FOREVER, "a"), RELEASE(0),
			    TRY_RID(0, "a") } },
			{ 'B', 2, { ACQ_RID(0, 10, "ab"), RELEASE(0) } },
			{ 'D', 1, { TRY(0) } },
		},
		.ntimes = 4,
		.times = { 0, 5, 10, 20 },
		.crashes = 1,
	},
	{
		.name = "reconnect",
		.summary = "A acquires with rid=a and onclose=release, then "
		    "its connection closes; E, A reconnected, repeats the "
		    "ACQUIRE (before or after the close) and releases; B "
		    "waits: the repeat takes the binding over, so A's close "
		    "must not free the lock under E",
		.nnames = 1,
		.names = { "L" },
		.nclients = 3,
		.clients = {
			{ 'A', 2, { ACQ_RID_ONCLOSE(0, "a"), DISCONNECT } },
			{ 'E', 2, { ACQ_RID_ONCLOSE(0, "a"), RELEASE(0) } },
			{ 'B', 2, { ACQ(0, FOREVER, false), RELEASE(0) } },
		},
		.ntimes = 2,
		.times = { 0, 10 },
	},
	{
		.name = "readers",
		.summary = "R and S read (S, T try to), W writes with wait 5: "
		    "the readers at the head go together, a reader that "
		    "comes while W waits queues behind it, and when W's wait "
		    "ends the readers behind it join at once; one crash",
		.nnames = 1,
		.names = { "L" },
		.nclients = 4,
		.clients = {
			{ 'R', 2, { ACQ_SH(0, FOREVER), RELEASE(0) } },
			{ 'W', 2, { ACQ(0, 5, false), RELEASE(0) } },
			{ 'S', 2, { ACQ_SH(0, FOREVER), RELEASE(0) } },
			{ 'T', 1, { TRY_SH(0) } },
		},
		.ntimes = 3,
		.times = { 0, 5, 10 },
		.crashes = 1,
	},
	{
		.name = "readers-close",
		.summary = "R and S read with onclose=release; R's connection "
		    "closes, S releases; W waits to write: each reader's "
		    "close or restart ends only its own hold, and W gets the "
		    "lock when both are gone; V watches for the newest "
		    "holder to change (wait 10); one crash",
		.nnames = 1,
		.names = { "L" },
		.nclients = 4,
		.clients = {
			{ 'R', 2, { ACQ_SH_ONCLOSE(0), DISCONNECT } },
			{ 'S', 2, { ACQ_SH_ONCLOSE(0), RELEASE(0) } },
			{ 'W', 2, { ACQ(0, FOREVER, false), RELEASE(0) } },
			{ 'V', 1, { WATCH(0, MODEL_WATCH_ANY, 10) } },
		},
		.ntimes = 2,
		.times = { 0, 10 },
		.crashes = 1,
	},
	{
		.name = "readers-failover",
		.summary = "cluster mode with readers: R and S read (R renews), "
		    "W waits to write; one fail-over, whose take-over rule "
		    "rewrites every reader's record: no writer beside a "
		    "reader the clients still believe in",
		.nnames = 1,
		.names = { "L" },
		.nclients = 3,
		.clients = {
			{ 'R', 3, { ACQ_SH(0, FOREVER), RENEW(0), RELEASE(0) } },
			{ 'S', 2, { ACQ_SH(0, FOREVER), RELEASE(0) } },
			{ 'W', 2, { ACQ(0, FOREVER, false), RELEASE(0) } },
		},
		.ntimes = 3,
		.times = { 0, 10, 15 },
		.failovers = 1,
	},
	{
		.name = "permits-delay",
		.summary = "a semaphore of 2: A holds with lock-delay 5 until "
		    "O forces fence 1 (or it expires), B holds on, C waits: "
		    "C gets the permit only when the delay is over, whatever "
		    "B does; one crash",
		.nnames = 1,
		.names = { "L" },
		.nclients = 4,
		.clients = {
			{ 'A', 1, { ACQ_N_DELAY(0, 2, 5) } },
			{ 'B', 2, { ACQ_N(0, FOREVER, 2), RELEASE(0) } },
			{ 'C', 2, { ACQ_N(0, FOREVER, 2), RELEASE(0) } },
			{ 'O', 1, { FORCE(0, 1) } },
		},
		.ntimes = 3,
		.times = { 0, 5, 10 },
		.crashes = 1,
	},
	{
		.name = "permits",
		.summary = "a semaphore of 2: A, B and C (wait 5) take "
		    "permits, D tries one and then asks without a limit "
		    "(BADARG while the name is busy); a failed commit",
		.nnames = 1,
		.names = { "L" },
		.nclients = 4,
		.clients = {
			{ 'A', 2, { ACQ_N(0, FOREVER, 2), RELEASE(0) } },
			{ 'B', 2, { ACQ_N(0, FOREVER, 2), RELEASE(0) } },
			{ 'C', 2, { ACQ_N(0, 5, 2), RELEASE(0) } },
			{ 'D', 2, { TRY_N(0, 2), TRY(0) } },
		},
		.ntimes = 3,
		.times = { 0, 5, 10 },
		.commit_failures = 1,
	},
	{
		.name = "fallback-limit",
		.summary = "a semaphore of 2 (A, B, C), a writer D and a "
		    "reader E on one name; a failed commit whose batch holds "
		    "up to three actions: the fall-back comes back to no "
		    "record while a permit waits (it keeps limit 2), or to "
		    "A's permit while the reader waits (it gets BADARG)",
		.nnames = 1,
		.names = { "L" },
		.nclients = 5,
		.clients = {
			{ 'A', 2, { ACQ_N(0, FOREVER, 2), RELEASE(0) } },
			{ 'B', 1, { ACQ_N(0, FOREVER, 2) } },
			{ 'C', 1, { ACQ_N(0, FOREVER, 2) } },
			{ 'D', 2, { ACQ(0, FOREVER, false), RELEASE(0) } },
			{ 'E', 1, { ACQ_SH(0, FOREVER) } },
		},
		.ntimes = 1,
		.times = { 0 },
		.commit_failures = 1,
		.batch = 3,
	},
	{
		.name = "fallback-delay",
		.summary = "A holds a permit (limit 2) with lock-delay 5 until "
		    "O forces it; after the delay D and E ask for the plain "
		    "lock, and a failed commit of a batch of two comes back "
		    "to the ended delay's record alone: E keeps waiting "
		    "under limit 1 and gets the lock",
		.nnames = 1,
		.names = { "L" },
		.nclients = 4,
		.clients = {
			{ 'A', 1, { ACQ_N_DELAY(0, 2, 5) } },
			{ 'O', 1, { FORCE(0, 1) } },
			{ 'D', 2, { ACQ(0, FOREVER, false), RELEASE(0) } },
			{ 'E', 1, { ACQ(0, FOREVER, false) } },
		},
		.ntimes = 2,
		.times = { 0, 5 },
		.commit_failures = 1,
		.batch = 2,
	},
	{
		.name = "expiry",
		.summary = "A's lease expires under B (wait 10) and C (forever, "
		    "onclose=release, then disconnects); A renews and "
		    "releases late; F forges A's fence; D tries; one crash",
		.nnames = 1,
		.names = { "L" },
		.nclients = 5,
		.clients = {
			{ 'A', 3, { ACQ(0, FOREVER, false), RENEW(0),
			    RELEASE(0) } },
			{ 'B', 2, { ACQ(0, 10, false), RELEASE(0) } },
			{ 'C', 2, { ACQ(0, FOREVER, true), DISCONNECT } },
			{ 'F', 2, { FORGE_RENEW(0), FORGE_RELEASE(0) } },
			{ 'D', 2, { TRY(0), RELEASE(0) } },
		},
		.ntimes = 5,
		.times = { 0, 9, 10, 19, 20 },
		.crashes = 1,
	},
	{
		.name = "two-locks",
		.summary = "A holds L (onclose=release) and M (keep) and "
		    "disconnects; B waits for L, C for M (wait 5) and they "
		    "release; two crashes and a failed commit, one fence "
		    "counter for both locks",
		.nnames = 2,
		.names = { "L", "M" },
		.nclients = 3,
		.clients = {
			{ 'A', 3, { ACQ(0, FOREVER, true),
			    ACQ(1, FOREVER, false), DISCONNECT } },
			{ 'B', 2, { ACQ(0, FOREVER, false), RELEASE(0) } },
			{ 'C', 2, { ACQ(1, 5, false), RELEASE(1) } },
		},
		.ntimes = 3,
		.times = { 0, 5, 10 },
		.crashes = 2,
		.commit_failures = 1,
	},
	{
		.name = "restarts",
		.summary = "A's lease expires or is renewed across up to two "
		    "crashes and a failed commit; B fails at once (wait=0), "
		    "then queues with wait 5 and onclose=release; D tries",
		.nnames = 1,
		.names = { "L" },
		.nclients = 3,
		.clients = {
			{ 'A', 3, { ACQ(0, FOREVER, false), RENEW(0),
			    RELEASE(0) } },
			{ 'B', 4, { ACQ(0, 0, false), RELEASE(0),
			    ACQ(0, 5, true), RELEASE(0) } },
			{ 'D', 2, { TRY(0), RELEASE(0) } },
		},
		.ntimes = 4,
		.times = { 0, 9, 10, 15 },
		.crashes = 2,
		.commit_failures = 1,
	},
	{
		.name = "failover",
		.summary = "cluster mode: A holds L, renews and releases, B "
		    "waits for it, D tries; one fail-over to a new leader "
		    "that takes the committed state over by the take-over "
		    "rule (leases end at now + lease + leader lease)",
		.nnames = 1,
		.names = { "L" },
		.nclients = 3,
		.clients = {
			{ 'A', 3, { ACQ(0, FOREVER, true), RENEW(0),
			    RELEASE(0) } },
			{ 'B', 2, { ACQ(0, FOREVER, false), RELEASE(0) } },
			{ 'D', 2, { TRY(0), RELEASE(0) } },
		},
		.ntimes = 4,
		.times = { 0, 10, 15, 30 },
		.failovers = 1,
	},
	{
		.name = "permit-watch",
		.summary = "a semaphore of 2: A and B each take a permit and "
		    "release it; W watches for any change (wait 10), so the "
		    "end of either hold answers it, the older one's too",
		.nnames = 1,
		.names = { "L" },
		.nclients = 3,
		.clients = {
			{ 'A', 2, { ACQ_N(0, FOREVER, 2), RELEASE(0) } },
			{ 'B', 2, { ACQ_N(0, FOREVER, 2), RELEASE(0) } },
			{ 'W', 1, { WATCH(0, MODEL_WATCH_ANY, 10) } },
		},
		.ntimes = 3,
		.times = { 0, 10, 20 },
	},
	{
		.name = "operator",
		.summary = "A holds L with lock-delay 5 until it expires or "
		    "is forced; B waits (wait 20) and releases; O forces "
		    "fence 1 then fence 2; W watches for any change (wait 5), then "
		    "for fence 1 to go (wait 15); one crash",
		.nnames = 1,
		.names = { "L" },
		.nclients = 4,
		.clients = {
			{ 'A', 1, { ACQ_DELAY(0, FOREVER, 5) } },
			{ 'B', 2, { ACQ(0, 20, false), RELEASE(0) } },
			{ 'O', 2, { FORCE(0, 1), FORCE(0, 2) } },
			{ 'W', 2, { WATCH(0, MODEL_WATCH_ANY, 5),
			    WATCH(0, 1, 15) } },
		},
		.ntimes = 4,
		.times = { 0, 10, 15, 20 },
		.crashes = 1,
	},
};

const size_t model_nscenarios = sizeof(model_scenarios) /
    sizeof(model_scenarios[0]);

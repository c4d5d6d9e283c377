/*
 * history.h - internal to tests/sim/: the history checker.  It keeps an
 * account of everything the simulated clients were told (grants, renewals,
 * releases, refusals, timeouts) and of what they could not know (requests
 * whose reply was lost with a connection or a crash), and judges the
 * property catalogue from it.  The simulator feeds it, besides the replies,
 * a few observations of the service's table (a fence appeared, a fence
 * disappeared) and of the store (what a commit made durable), so that it
 * can tell when a grant happened and what a crash kept.
 *
 * Times are the simulator's global clock in milliseconds (it never steps,
 * across restarts and reboots alike).  Every action gets a sequence number
 * from hist_next_seq(); sequence numbers order events that share an instant.
 */
#ifndef LOCKD_TESTS_SIM_HISTORY_H
#define LOCKD_TESTS_SIM_HISTORY_H

#include <stdbool.h>
#include <stdint.h>

#include "tests/sim/sim.h"

typedef int64_t sim_time;

struct hist;

/* The outcome of a RENEW or RELEASE as its client learnt it. */
enum hist_outcome {
	HIST_PENDING,
	HIST_OK,            /* RENEWED, RELEASED */
	HIST_REFUSED,       /* CONFLICT, NOTHELD */
	HIST_UNAVAILABLE,   /* the commit failed: nothing changed */
	HIST_UNKNOWN        /* executed, but the reply was lost */
};

enum hist_op_kind { HIST_RENEW, HIST_RELEASE };

/* A RENEW or RELEASE in flight: the grant its handle names, or forged. */
struct hist_op {
	int32_t fence;      /* index of the grant; -1: no such grant */
	uint32_t event;
	uint8_t kind;
};

/* What the store holds for one name (its key <name>), or for one holder
 * of a semaphore or a shared lock (its key <name> NUL <fence>). */
struct hist_store_view {
	int name;
	bool has;
	uint64_t fence;
	sim_time expiry;
	sim_time asof;      /* expiry - lease: when it was granted or renewed */
	bool onclose;
};

struct hist *hist_new(struct sim_result *res, const struct sim_options *opt,
    int names, const char *const *name_text, FILE *out);
void hist_free(struct hist *h);

uint64_t hist_next_seq(struct hist *h);
/* Counts one evaluation of a property. */
void hist_checked(struct hist *h);
void hist_violation(struct hist *h, enum sim_property p, const char *fmt,
    ...) __attribute__((format(printf, 3, 4)));
void hist_cover(struct hist *h, enum sim_coverage c);

/* ---- observations of the service and the store ------------------------ */

/* The table holds `fence` on `name`, granted at g.  Only the first sighting
 * of a fence counts. */
void hist_grant_seen(struct hist *h, int name, uint64_t fence,
    uint64_t secret, uint64_t seq, sim_time g);
/* The table no longer holds `fence` on `name`; the change is durable once
 * batch `batch` is (judged then; undone by a restore or a crash before). */
void hist_dropped(struct hist *h, int name, uint64_t fence, uint64_t seq,
    sim_time t, uint64_t batch);
/* A failed commit gave `name` back its stored state: the drops of its
 * leases not yet durable did not happen. */
void hist_undo_drops(struct hist *h, int name);
/* Every batch up to `durable` is in the store. */
void hist_durable(struct hist *h, uint64_t durable);
/* After a failed commit or a recovery the table holds `fence` again, as
 * the store has it, until `expiry`. */
void hist_restored(struct hist *h, int name, uint64_t fence, sim_time expiry,
    uint64_t seq, sim_time t);
/*
 * The service crashed (or stopped) at t.  Every request in flight must have
 * been settled first (hist_op_result with HIST_UNKNOWN, hist_closed for the
 * onclose leases of the closed connections).  view[0..nview) is every
 * held record the store has, each under its own key (several for a name
 * with holder keys); store_hwm its high-water mark.
 */
void hist_crash(struct hist *h, uint64_t seq, sim_time t,
    const struct hist_store_view *view, size_t nview, uint64_t store_hwm);
uint64_t hist_max_told_fence(const struct hist *h);

/* ---- what the clients did and were told ------------------------------- */

/* A RENEW or RELEASE executed at (seq, t) with the given handle. */
struct hist_op hist_op_begin(struct hist *h, enum hist_op_kind kind, int name,
    uint64_t fence, uint64_t secret, int64_t lease, uint64_t seq, sim_time t);
/* Its outcome; t_exec is when it executed, stored what the store holds
 * for its name as it is told (NULL when it was not told). */
void hist_op_result(struct hist *h, struct hist_op op,
    enum hist_outcome outcome, sim_time t_exec,
    const struct hist_store_view *stored);
/* The kind of a grant: limit 1 (a mutex, or a read/write lock whose
 * holders are shared or not) or above (a semaphore's permit). */
struct hist_kind {
	uint16_t limit;
	bool shared;
};

/* A told ACQUIRE or TRY: GRANTED with (fence, secret, lease) of `kind`,
 * told while the store holds `stored` for it and high-water mark
 * store_hwm.  Returns the grant's index (for hist_closed), or -1. */
int32_t hist_granted(struct hist *h, int name, uint64_t fence,
    uint64_t secret, int64_t lease, bool onclose, struct hist_kind kind,
    uint64_t arrival_seq, sim_time arrival,
    const struct hist_store_view *stored, uint64_t store_hwm);
/* Was the grant of `fence` on `name` told to its client (hist_granted)? */
bool hist_told(const struct hist *h, int name, uint64_t fence);
/* When the table was first seen holding `fence` on `name`, if it was. */
bool hist_seen(const struct hist *h, int name, uint64_t fence,
    uint64_t *seq, sim_time *t);
/* A told ERR TIMEOUT of an ACQUIRE that arrived at arrival_seq and could
 * wait until deadline. */
void hist_timeout(struct hist *h, int name, uint64_t arrival_seq,
    sim_time deadline);
/* The connection holding grant `index` with onclose=release closed. */
void hist_closed(struct hist *h, int32_t index, uint64_t seq, sim_time t);

/* Retries the checks that waited for replies still in flight. */
void hist_settle(struct hist *h);

#endif

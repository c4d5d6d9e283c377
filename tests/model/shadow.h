/*
 * shadow.h - private to the model checker (tests/model/): the system it
 * checks, the production lock table driven by scripted clients, beside the
 * shadow, the checker's own small account of the protocol (who holds each
 * lock until when, who waits in which order, what each client was told,
 * what the disk holds).  shadow.c runs one action at a time on it and
 * checks the properties after each; states.c encodes it; checker.c
 * searches its schedules.
 */
#ifndef LOCKD_TESTS_MODEL_SHADOW_H
#define LOCKD_TESTS_MODEL_SHADOW_H

#include "tests/model/model.h"

#define NOBODY 0xff
#define MODEL_HOLDS MODEL_CLIENTS   /* holders of one name at most */
#define MODEL_KEYS (MODEL_HOLDS + 1)  /* its durable keys: <name>, holders */
#define MAX_LOG 64
#define MAX_ACTIONS (6 * MODEL_CLIENTS + 10)

/* Actions: a client's next op (its index), or one of these. */
enum {
	ACT_CLOCK = 0x40,
	ACT_TICK = 0x41,
	ACT_CRASH = 0x42,
	ACT_FAILOVER = 0x43,
	ACT_UNSENT = 0x20, /* flag: the action, its commit, then a crash
			      before its replies go out */
	ACT_LOST = 0x80,   /* flag: the action, then a crash before commit */
	ACT_FAILED = 0x10, /* flag: the action, then its commit fails */
	ACT_BATCHED = 0x08, /* flag: the action, its changes and replies
			       left for the next action's commit (one
			       batch, whose last commit fails) */
	ACT_FLAGS = ACT_UNSENT | ACT_LOST | ACT_FAILED | ACT_BATCHED
};

/* What a client knows about one lock: its last handle and how long it
 * believes it holds the lock. */
struct knowledge {
	bool has_handle;
	struct core_handle handle;
	bool believes;
	core_time until;
	bool onclose;
	bool shared;              /* a shared grant */
	uint16_t limit;           /* of a semaphore (1: none) */
};

struct client {
	uint8_t pc;               /* its next op */
	bool gone;                /* disconnected for good */
	bool queued;              /* in the shadow queue of req_name */
	uint64_t req_tag;         /* the request awaiting its reply; 0: none */
	uint8_t req_kind, req_name;
	struct core_handle req_handle;
	int64_t req_lease;        /* the effective lease */
	bool req_onclose;
	int64_t req_delay;        /* ACQUIRE's lock-delay */
	uint64_t req_fence;       /* FORCE's fence; WATCH's watched fence */
	bool req_watch_any;       /* a WATCH of the next change */
	uint8_t req_holders;      /* ... and how many held as it queued */
	const char *req_rid;      /* ACQUIRE's or TRY's rid; NULL: none */
	uint16_t req_limit;       /* ACQUIRE's or TRY's limit, 1..; */
	bool req_shared;          /* ... and mode=shared */
	core_time deadline;       /* a queued finite wait ends here */
	uint64_t left_tag;        /* its last request that left the queue */
	struct knowledge know[MODEL_NAMES];
};

/* The checker's account of one holder of a lock. */
struct shold {
	uint8_t holder;           /* a client, or NOBODY */
	bool onclose;
	bool shared;
	uint64_t fence, secret;
	core_time expiry;
	int64_t lease_ms;
	int64_t delay_ms;         /* the holder's lock-delay */
	uint8_t rid_len;          /* the rid the holder was granted with */
	char rid[8];
};

/* The checker's own account of one lock: a set of holders (in the order
 * of their grants) with the name's limit. */
struct shadow {
	uint8_t nheld;
	struct shold h[MODEL_HOLDS];
	uint16_t limit;           /* set by the first request of an idle name */
	core_time delay_until;    /* the name's lock-delay; 0: none */
	uint8_t qlen;
	uint8_t queue[MODEL_CLIENTS];
	uint64_t max_delivered;   /* the largest fence a client was given */
};

/* One durable key of a lock: <name> (key 0) or <name> NUL <fence>. */
struct disk_record {
	bool present;
	uint64_t key;
	uint8_t holder;           /* the model's note, not on the real disk */
	struct core_record rec;
};

/* A durable reply waiting for its commit. */
struct delivery {
	uint8_t client, name;
	uint64_t tag;
	enum core_reply_kind kind;
	struct core_handle handle;
	core_time until;
	bool onclose;
	bool repeat;              /* a rid repeat: the holder's grant again */
	bool shared;
	uint16_t limit;
};

struct logged {
	struct core_reply r;      /* r.status points at status, or NULL */
	struct core_lock_status status;
	uint8_t name;
};

struct sys {
	const struct model_scenario *sc;
	const struct core_rules *rules;
	enum model_harness harness;
	struct core_config config;
	struct core_table table;
	bool live;
	struct core_session sess[MODEL_CLIENTS];
	uint8_t clock;
	core_time now;
	uint8_t crashes, boot, failures, failovers;
	struct client cl[MODEL_CLIENTS];
	struct shadow sh[MODEL_NAMES];
	struct disk_record disk[MODEL_NAMES][MODEL_KEYS];
	uint64_t disk_hwm;
	uint8_t batch_open;       /* actions whose changes and replies wait
				     for the next action's commit */

	/* Within one step. */
	struct logged log[MAX_LOG];
	size_t nlog;
	struct delivery pending[MAX_LOG];
	size_t npending;
	int acting;               /* the client whose op this step runs */
	int closing;              /* the client being disconnected */
	bool restoring;           /* recovery after a crash */
	bool falling_back;        /* core_table_restore after a failed commit */
	bool touched[MODEL_NAMES];
	bool stale_op;            /* the op carried a non-current handle */
	size_t records;           /* reported by the last drain */
	bool hwm_moved;
	uint8_t action;           /* the step's action, without ACT_FLAGS */
	int last_end;             /* the last lease end in the log, or -1 */
	bool delay_ended;         /* a lock-delay ran out in this step */
	bool granted_shared;      /* a shared grant was made in this step */
	uint64_t cov;             /* enum model_coverage bits of the step */
	uint64_t lost_fence;      /* the largest fence lost in a crash; not
				     part of the state, only for coverage */

	enum model_property violated;
	char why[256];
};

/* A fresh system (table, clients, shadow, disk) at the scenario's start. */
void model__sys_init(struct sys *s, const struct model_scenario *sc,
    const struct core_rules *rules, enum model_harness harness);
void model__sys_fini(struct sys *s);
/* Runs one action (a client's next op or an ACT_*, with its flags) and
 * checks every property after it; s->violated names the first broken. */
void model__step(struct sys *s, uint8_t action);
/* With nothing left to do: lets time run until every lease has ended. */
void model__run_out_the_clock(struct sys *s);
/* failover.c: the committed state as a new leader takes it over - every
 * record rewritten by the take-over rule - and the high-water mark it
 * mints from (a stale one in the broken harness). */
void model__takeover_disk(struct sys *s);
uint64_t model__takeover_hwm(const struct sys *s);
/* The actions enabled in s, into acts[MAX_ACTIONS]; returns how many. */
size_t model__enabled(const struct sys *s, uint8_t *acts);
/* The scripts' word for an op: "acquire", "forge-renew", ... */
const char *model__op_word(enum model_op_kind k);
/* splitmix64's finaliser: the model's secrets and its state hash. */
uint64_t model__mix64(uint64_t x);
/* The client whose session this is, or -1. */
int model__client_of(const struct sys *s, const struct core_session *session);

#endif

#!/bin/sh
# valgrind-lockd.sh - stands in for lockd (LOCKD_BIN) in `make valgrind`:
# execs the real lockd ($LOCKD_REAL_BIN) under memcheck.  exec keeps the
# PID: the harness signals and waits for this very process, and socket
# activation's LISTEN_PID still names it.  Each run writes its own report
# to $VALGRIND_LOG_DIR/lockd.<pid>.log; tests/abuse/valgrind-report.sh
# reads them all.  An error or a definite or indirect leak makes lockd
# exit 99, which a test that stops lockd cleanly notices too.
: "${LOCKD_REAL_BIN:?set LOCKD_REAL_BIN to the lockd to run}"
: "${VALGRIND_LOG_DIR:?set VALGRIND_LOG_DIR}"
exec valgrind --tool=memcheck --error-exitcode=99 --leak-check=full \
    --errors-for-leak-kinds=definite,indirect \
    --show-leak-kinds=definite,indirect --track-origins=yes \
    --log-file="$VALGRIND_LOG_DIR/lockd.%p.log" "$LOCKD_REAL_BIN" "$@"

# lockd - one plain GNU Makefile.
#
#   make            build lockd (and the libraries and tools)
#   make run        install build dependencies, build, run lockd in the foreground
#   make test       install test dependencies, build, run every test
#   make fuzz       build the libFuzzer targets with clang and run them (long)
#   make clean
#
# SANITIZE=1 builds everything with ASan and UBSan.

CC       ?= cc
CFLAGS   ?= -O2 -g
WARNINGS := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
            -Wmissing-prototypes -Wformat=2
STD      := -std=c11 -D_GNU_SOURCE
B        := build

ifeq ($(SANITIZE),1)
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer \
            -fno-sanitize-recover=undefined
B        := build-san
endif

# Libraries through pkg-config; LMDB ships no .pc on Debian.
pc_cflags = $(shell pkg-config --cflags $(1) 2>/dev/null)
pc_libs   = $(shell pkg-config --libs $(1) 2>/dev/null || echo $(2))
UV_CFLAGS     := $(call pc_cflags,libuv)
UV_LIBS       := $(call pc_libs,libuv,-luv)
LMDB_CFLAGS   := $(call pc_cflags,lmdb)
LMDB_LIBS     := $(call pc_libs,lmdb,-llmdb)
CMOCKA_CFLAGS := $(call pc_cflags,cmocka)
CMOCKA_LIBS   := $(call pc_libs,cmocka,-lcmocka)
# libsystemd is optional: without it lockd speaks sd_notify's protocol itself.
WITH_SYSTEMD  ?= $(shell pkg-config --exists libsystemd 2>/dev/null && echo 1 || echo 0)
ifeq ($(WITH_SYSTEMD),1)
SYSTEMD_CFLAGS := -DLOCKD_WITH_SYSTEMD $(call pc_cflags,libsystemd)
SYSTEMD_LIBS   := $(call pc_libs,libsystemd,-lsystemd)
endif

ALL_CFLAGS = $(STD) $(WARNINGS) $(CFLAGS) $(SANFLAGS) -I. -MMD -MP
ALL_LDFLAGS = $(LDFLAGS) $(SANFLAGS)

CORE_SRC   := $(wildcard core/*.c)
PROTO_SRC  := $(wildcard proto/*.c)
DAEMON_SRC := $(filter-out daemon/main.c,$(wildcard daemon/*.c))
UNIT_SRC   := $(wildcard tests/unit/test_*.c)
TESTLIB_SRC := $(wildcard tests/lib/*.c)

CORE_OBJ   := $(CORE_SRC:%.c=$(B)/%.o)
PROTO_OBJ  := $(PROTO_SRC:%.c=$(B)/%.o)
DAEMON_OBJ := $(DAEMON_SRC:%.c=$(B)/%.o)
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
TESTLIB_OBJ := $(TESTLIB_SRC:%.c=$(B)/%.o)
MODEL_BIN  := $(B)/tests/model_check
INTEG_SRC  := $(wildcard tests/integration/test_*.c)
INTEG_LIB  := $(filter-out $(INTEG_SRC),$(wildcard tests/integration/*.c))

.PHONY: all run test test-run deps-build deps-test fuzz clean
all: $(B)/lockd

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(UV_CFLAGS) $(LMDB_CFLAGS) $(CMOCKA_CFLAGS) $(SYSTEMD_CFLAGS) -c $< -o $@

$(B)/libcore.a: $(CORE_OBJ)
	$(AR) rcs $@ $^
$(B)/libproto.a: $(PROTO_OBJ)
	$(AR) rcs $@ $^
$(B)/libdaemon.a: $(DAEMON_OBJ)
	$(AR) rcs $@ $^

$(B)/lockd: $(B)/daemon/main.o $(B)/libdaemon.a $(B)/libcore.a $(B)/libproto.a
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(UV_LIBS) $(LMDB_LIBS) $(SYSTEMD_LIBS)

# Unit tests link everything but the daemon's main().
$(B)/tests/test_%: $(B)/tests/unit/test_%.o $(TESTLIB_OBJ) $(B)/libdaemon.a $(B)/libcore.a $(B)/libproto.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(UV_LIBS) $(LMDB_LIBS) $(SYSTEMD_LIBS)

MODEL_SRC := $(wildcard tests/model/*.c)
$(MODEL_BIN): $(MODEL_SRC:%.c=$(B)/%.o) $(B)/libcore.a
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CMOCKA_LIBS)

# Integration tests start the real lockd; they share tests/integration/*.c
# helpers that are not test_*.c.
$(B)/tests/integ_%: $(B)/tests/integration/test_%.o $(INTEG_LIB:%.c=$(B)/%.o) $(B)/libproto.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CMOCKA_LIBS)
INTEG_BIN := $(INTEG_SRC:tests/integration/test_%.c=$(B)/tests/integ_%)

deps-build:
	@tools/deps.sh build
deps-test:
	@tools/deps.sh test

run: deps-build
	@$(MAKE) --no-print-directory $(B)/lockd
	@mkdir -p lockd-data
	exec $(B)/lockd --listen 127.0.0.1:7420 --data-dir ./lockd-data

test: deps-test
	@$(MAKE) --no-print-directory test-run

test-run: $(B)/lockd $(UNIT_BIN) $(MODEL_BIN) $(INTEG_BIN) $(SIM_TEST_BIN)
	@LOCKD_BIN=$(abspath $(B)/lockd) tools/run-tests.sh $(UNIT_BIN) $(MODEL_BIN) $(INTEG_BIN) $(SIM_TEST_BIN) \
	    "tests/systemd/check-units.sh $(abspath $(B)/lockd)"

clean:
	rm -rf build build-san build-fuzz

-include $(shell find $(B) -name '*.d' 2>/dev/null)


# --- deterministic simulation ----------------------------------------------
# build/tests/sim runs the daemon's service layer (not libuv) under simulated
# clients, clock, store failures and crashes; `--seed N` replays a run.
# build/tests/test_sim is the cmocka program make test runs.  Objects go to
# $(B)/tests/sim-obj/ since $(B)/tests/sim is the binary.
SIM_LIB_SRC  := tests/sim/sim.c tests/sim/history.c tests/sim/variants.c
SIM_LIB_OBJ  := $(SIM_LIB_SRC:tests/sim/%.c=$(B)/tests/sim-obj/%.o)
SIM_BIN      := $(B)/tests/sim
SIM_TEST_BIN := $(B)/tests/test_sim
SIM_LINK     := $(B)/libdaemon.a $(B)/libcore.a $(B)/libproto.a

$(B)/tests/sim-obj/%.o: tests/sim/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CMOCKA_CFLAGS) -c $< -o $@

$(SIM_BIN): $(B)/tests/sim-obj/main.o $(SIM_LIB_OBJ) $(TESTLIB_OBJ) $(SIM_LINK)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(UV_LIBS) $(LMDB_LIBS) $(SYSTEMD_LIBS)

# test_sim prints the replay command of $(SIM_BIN), so it comes along.
$(SIM_TEST_BIN): $(B)/tests/sim-obj/test_sim.o $(SIM_LIB_OBJ) $(TESTLIB_OBJ) \
    $(SIM_LINK) | $(SIM_BIN)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(UV_LIBS) $(LMDB_LIBS) \
	    $(SYSTEMD_LIBS)

.PHONY: sim
sim: $(SIM_BIN) $(SIM_TEST_BIN)

# --- fuzzing ---------------------------------------------------------------
# libFuzzer targets, built apart from the rest with clang (ASan + UBSan).
# `make fuzz` runs each for FUZZ_SECONDS on a throwaway copy of its seed
# corpus, so the checked-in seeds stay small; `make fuzz-smoke` is a 20 s run
# for the test suite.  A crash fails the target and leaves its input in
# build-fuzz/ as crash-*.
FUZZ_CC      ?= clang
FUZZ_CFLAGS  := -g -O1 -fsanitize=fuzzer,address,undefined -std=c11 \
                -D_GNU_SOURCE -I.
FUZZ_SECONDS ?= 600
FUZZ_PROTO   := build-fuzz/fuzz_proto

.PHONY: fuzz-smoke

$(FUZZ_PROTO): tests/fuzz/fuzz_proto.c $(PROTO_SRC) proto/proto.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) tests/fuzz/fuzz_proto.c $(PROTO_SRC) -o $@

# $(1): seconds to run.  The corpus copy is removed whatever the outcome.
fuzz_proto_run = corpus=$$(mktemp -d) && \
	cp tests/fuzz/corpus/proto/* "$$corpus"/ && \
	{ $(FUZZ_PROTO) -max_total_time=$(1) -print_final_stats=1 \
	    -artifact_prefix=build-fuzz/ "$$corpus"; rc=$$?; \
	  rm -rf "$$corpus"; exit $$rc; }

fuzz:
	@tools/deps.sh fuzz
	@$(MAKE) --no-print-directory $(FUZZ_PROTO)
	@$(call fuzz_proto_run,$(FUZZ_SECONDS))

fuzz-smoke: $(FUZZ_PROTO)
	@$(call fuzz_proto_run,20)

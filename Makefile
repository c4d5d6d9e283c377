# lockd - one plain GNU Makefile.
#
#   make            build lockd, liblockd and lockctl (nothing else)
#   make run        install build dependencies, build lockd and lockctl, run
#                   lockd in the foreground (ARGS='--listen ...': its flags)
#   make check      the fast tests, after every edit (see "the test tiers")
#   make test       install test dependencies, build the tests, run every one
#   make install    install lockd, liblockd, lockctl, man pages and units
#   make deb        the Debian packages lockd, liblockd0, liblockd-dev, lockctl,
#                   python3-lockd
#   make fuzz       build the libFuzzer targets with clang and run them (long)
#   make bench      lockd against Redis and etcd, side by side (docs/performance.md)
#   make bench-cluster  cluster mode against etcd's lock API, fail-over time
#   make bench-failover leases of every client kind through leader kills
#   make bench-kinds    semaphore and readers-writer against Redis Lua scripts
#   make sizing     memory and data.mdb bytes per held lock (docs/operations.md)
#   make soak       the long crash, power-loss and fencing runs
#   make lint       cppcheck and clang-tidy; make valgrind: memcheck of lockd
#   make clean
#
# SANITIZE=1 builds everything with ASan and UBSan.
#
# The sections follow the layers, each after what it depends on: flags;
# core and proto (pure); the daemon; liblockd and lockctl; running and
# installing; the tests; benchmarks, fuzzing and the other long runs.

# --- flags ------------------------------------------------------------------
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
UV_CFLAGS      := $(call pc_cflags,libuv)
UV_LIBS        := $(call pc_libs,libuv,-luv)
LMDB_CFLAGS    := $(call pc_cflags,lmdb)
LMDB_LIBS      := $(call pc_libs,lmdb,-llmdb)
SYSTEMD_CFLAGS := $(call pc_cflags,libsystemd)
SYSTEMD_LIBS   := $(call pc_libs,libsystemd,-lsystemd)
CMOCKA_CFLAGS  := $(call pc_cflags,cmocka)
CMOCKA_LIBS    := $(call pc_libs,cmocka,-lcmocka)
# Cluster mode: etcd's JSON gateway through libcurl, jansson and OpenSSL.
ETCD_CFLAGS    := $(call pc_cflags,libcurl jansson libcrypto)
ETCD_LIBS      := $(call pc_libs,libcurl jansson libcrypto,-lcurl -ljansson -lcrypto)
OPENSSL_CFLAGS := $(call pc_cflags,libssl libcrypto)
OPENSSL_LIBS   := $(call pc_libs,libssl libcrypto,-lssl -lcrypto)
DAEMON_LIBS    := $(UV_LIBS) $(LMDB_LIBS) $(SYSTEMD_LIBS) $(ETCD_LIBS) $(OPENSSL_LIBS)

ALL_CFLAGS = $(STD) $(WARNINGS) $(CFLAGS) $(SANFLAGS) -I. -MMD -MP
ALL_LDFLAGS = $(LDFLAGS) $(SANFLAGS)

.PHONY: all client run check check-run test test-run deps-build deps-test \
        install uninstall clean
all: $(B)/lockd client

# Everything else under $(B) but the programs themselves is kept, so a
# second run rebuilds nothing.
.SECONDARY:

# --- core and proto: pure ---------------------------------------------------
# Compiled with no library's flags, and checked after each compile: the
# headers an object was built from (system ones included, -MD) must be
# the standard library's and its own layer's, or below it - core/ only
# core/, proto/ only proto/ and core/.  A core file that includes uv.h,
# lmdb.h or anything of daemon/ fails the build.
CORE_SRC  := $(wildcard core/*.c)
PROTO_SRC := $(wildcard proto/*.c)
CORE_OBJ  := $(CORE_SRC:%.c=$(B)/%.o)
PROTO_OBJ := $(PROTO_SRC:%.c=$(B)/%.o)
LAYER_FORBIDDEN := (uv|lmdb|cmocka|sd-daemon)\.h|/uv/|/systemd/|(^| )(daemon|client|tests|bench|examples)/

# $(1): the object; $(2): the layers above it, which it may not include.
layer_check = ! grep -Eq '$(LAYER_FORBIDDEN)$(if $(2),|(^| )($(2))/)' \
	$(1:.o=.d) || { echo "$(1): includes a header above its layer:" >&2; \
	grep -Eo '[^ ]*($(LAYER_FORBIDDEN)$(if $(2),|($(2))/))[^ ]*' \
	$(1:.o=.d) >&2; rm -f $(1); exit 1; }

$(B)/core/%.o: core/%.c
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -MMD,$(ALL_CFLAGS)) -MD -c $< -o $@
	@$(call layer_check,$@,proto)

$(B)/proto/%.o: proto/%.c
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -MMD,$(ALL_CFLAGS)) -MD -c $< -o $@
	@$(call layer_check,$@,)

$(B)/libcore.a: $(CORE_OBJ)
	$(AR) rcs $@ $^
$(B)/libproto.a: $(PROTO_OBJ)
	$(AR) rcs $@ $^

# --- the daemon -------------------------------------------------------------
DAEMON_SRC := $(filter-out daemon/main.c,$(wildcard daemon/*.c))
DAEMON_OBJ := $(DAEMON_SRC:%.c=$(B)/%.o)
# Every library of the daemon and of the test programs that drive it.
SYS_CFLAGS := $(UV_CFLAGS) $(LMDB_CFLAGS) $(SYSTEMD_CFLAGS) $(ETCD_CFLAGS) $(OPENSSL_CFLAGS)

$(B)/daemon/%.o: daemon/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(SYS_CFLAGS) -c $< -o $@

$(B)/libdaemon.a: $(DAEMON_OBJ)
	$(AR) rcs $@ $^

# What a program needs to run the daemon's code: lockd, the unit tests,
# the simulator, lockd-faulty.
DAEMON_LINK := $(B)/libdaemon.a $(B)/libcore.a $(B)/libproto.a

$(B)/lockd: $(B)/daemon/main.o $(DAEMON_LINK)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(DAEMON_LIBS)

# --- liblockd and lockctl ---------------------------------------------------
# liblockd.a holds one relocatable object made of the client and proto
# objects in which only lockd_* symbols stay global, so a program linking it
# statically cannot clash with proto's names; liblockd.so exports the same
# set through client/liblockd.map.  A lockd.pc for the build tree lets the
# examples and the sample programs build the way a user's program does;
# lockd-static.pc is the one for `cc -static`, which needs libuv's static
# library under its own name (libuv-static.pc: -luv_a on Debian).
CLIENT_SRC       := client/lockd.c client/keepalive.c client/request.c \
                    client/uv.c client/endpoint.c
CLIENT_OBJ       := $(CLIENT_SRC:%.c=$(B)/%.o)
CLIENT_PIC_OBJ   := $(CLIENT_SRC:%.c=$(B)/pic/%.o) $(PROTO_SRC:%.c=$(B)/pic/%.o)
CLIENT_VERSION   := $(shell sed -n 's/^\#define LOCKD_VERSION "\(.*\)"/\1/p' daemon/config.h)
CLIENT_SONAME    := liblockd.so.0
CLIENT_PC_DIR    := $(B)/pkgconfig
CLIENT_PKG_CONFIG = PKG_CONFIG_PATH=$(abspath $(CLIENT_PC_DIR)) pkg-config
CLIENT_LIBS      := $(B)/liblockd.a $(B)/$(CLIENT_SONAME) $(B)/liblockd.so
OBJCOPY ?= objcopy

client: $(CLIENT_LIBS) $(B)/lockctl $(CLIENT_PC_DIR)/lockd.pc \
    $(CLIENT_PC_DIR)/lockd-static.pc

# The keep-alive helper runs a thread; the async client (lockd_uv.h) is
# built on libuv, which liblockd.so links and lockd.pc requires.
$(B)/client/%.o: client/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(UV_CFLAGS) -pthread -c $< -o $@

$(B)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(UV_CFLAGS) -pthread -fPIC -c $< -o $@

$(B)/client/liblockd-all.o: $(CLIENT_OBJ) $(PROTO_OBJ)
	$(LD) -r -o $@ $^
	$(OBJCOPY) --wildcard --keep-global-symbol='lockd_[a-z]*' $@

$(B)/liblockd.a: $(B)/client/liblockd-all.o
	rm -f $@
	$(AR) rcs $@ $<

$(B)/$(CLIENT_SONAME): $(CLIENT_PIC_OBJ) client/liblockd.map
	$(CC) $(ALL_LDFLAGS) -pthread -shared -Wl,-soname,$(CLIENT_SONAME) \
	    -Wl,--version-script=client/liblockd.map -o $@ $(CLIENT_PIC_OBJ) \
	    $(UV_LIBS) $(OPENSSL_LIBS)

$(B)/liblockd.so: $(B)/$(CLIENT_SONAME)
	ln -sf $(CLIENT_SONAME) $@

$(B)/lockctl: $(B)/client/lockctl.o $(B)/client/lockctl_run.o $(B)/liblockd.a
	$(CC) $(ALL_LDFLAGS) -pthread -o $@ $^ $(UV_LIBS) $(OPENSSL_LIBS)

# lockd.pc for the build tree: headers from client/, the library from $(B),
# and an rpath so that programs built against it run from the tree.
$(CLIENT_PC_DIR)/%.pc: client/%.pc.in Makefile
	@mkdir -p $(dir $@)
	sed -e 's|@prefix@|$(abspath .)|' -e 's|@libdir@|$(abspath $(B))|' \
	    -e 's|@includedir@|$(abspath client)|' \
	    -e 's|@version@|$(CLIENT_VERSION)|' \
	    -e 's|@rpath@|-Wl,-rpath,$${libdir} |' $< > $@

# --- running and installing -------------------------------------------------
deps-build:
	@tools/deps.sh build
deps-test:
	@tools/deps.sh test

# lockd at its defaults (127.0.0.1:7420, ./lockd-data) unless ARGS, lockd's
# own flags, say otherwise: make run ARGS='--listen 127.0.0.1:7421'.  No flag
# of make's own comes before them, so a --config in ARGS is not overridden.
run: deps-build
	@$(MAKE) --no-print-directory $(B)/lockd $(B)/lockctl
	exec $(B)/lockd $(ARGS)

# The GNU convention: configuration lives in $(PREFIX)/etc (so PREFIX=/opt/lockd
# keeps everything under /opt/lockd, and the default is /usr/local/etc), except
# for PREFIX=/usr, whose configuration is /etc.
PREFIX     ?= /usr/local
ifeq ($(PREFIX),/usr)
SYSCONFDIR ?= /etc
else
SYSCONFDIR ?= $(PREFIX)/etc
endif
# LIBDIR is the libraries' and lockd.pc's; a Debian package sets it to the
# multiarch directory (debian/rules).
LIBDIR     ?= $(PREFIX)/lib
UNITDIR    ?= $(PREFIX)/lib/systemd/system
LDCONFIG   ?= ldconfig
INSTALLED   = $(PREFIX)/bin/lockd $(PREFIX)/bin/lockctl \
              $(LIBDIR)/liblockd.a $(LIBDIR)/$(CLIENT_SONAME) \
              $(LIBDIR)/liblockd.so $(LIBDIR)/pkgconfig/lockd.pc \
              $(LIBDIR)/pkgconfig/lockd-static.pc \
              $(PREFIX)/include/lockd.h $(PREFIX)/include/lockd_uv.h \
              $(PREFIX)/share/man/man1/lockctl.1 \
              $(PREFIX)/share/man/man3/liblockd.3 \
              $(PREFIX)/share/man/man8/lockd.8 \
              $(UNITDIR)/lockd.service $(UNITDIR)/lockd.socket
# The directories install makes, deepest first, which uninstall removes
# when they are left empty: lockd's own always; the prefix's common ones
# (bin, lib, etc...) only under a prefix other than /usr and /usr/local,
# whose common directories the system has before any install.
UNINSTALL_DIRS = $(SYSCONFDIR)/lockd $(LIBDIR)/pkgconfig $(UNITDIR) \
              $(patsubst %/,%,$(dir $(UNITDIR))) \
              $(addprefix $(PREFIX)/share/man/man,1 3 8)
ifeq ($(filter /usr /usr/local,$(PREFIX)),)
UNINSTALL_DIRS += $(PREFIX)/share/man $(PREFIX)/share $(PREFIX)/include \
              $(LIBDIR) $(PREFIX)/lib $(PREFIX)/bin $(SYSCONFDIR) $(PREFIX)
endif
# The sample config as installed: its first line names where it is.
INSTALLED_CONF = sed -e 's|/etc/lockd/lockd.conf|$(SYSCONFDIR)/lockd/lockd.conf|' \
              systemd/lockd.conf

# The sample config is installed only where none exists, and uninstalled
# only while it is still the sample: an edited config is the admin's.  The
# unit is rewritten to run $(PREFIX)/bin/lockd with $(SYSCONFDIR)'s config,
# and the config's header to name that file.
# Into the live system (no DESTDIR; a package runs ldconfig itself) it ends
# with ldconfig, or programs linked against liblockd.so.0 cannot start.
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(LIBDIR)/pkgconfig \
	    $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/share/man/man1 \
	    $(DESTDIR)$(PREFIX)/share/man/man3 \
	    $(DESTDIR)$(PREFIX)/share/man/man8 $(DESTDIR)$(UNITDIR) \
	    $(DESTDIR)$(SYSCONFDIR)/lockd
	install -m 755 $(B)/lockd $(B)/lockctl $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(B)/liblockd.a $(DESTDIR)$(LIBDIR)/
	install -m 755 $(B)/$(CLIENT_SONAME) $(DESTDIR)$(LIBDIR)/
	ln -sf $(CLIENT_SONAME) $(DESTDIR)$(LIBDIR)/liblockd.so
	install -m 644 client/lockd.h client/lockd_uv.h \
	    $(DESTDIR)$(PREFIX)/include/
	for pc in lockd lockd-static; do \
	    sed -e 's|@prefix@|$(PREFIX)|' \
	        -e 's|@libdir@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))|' \
	        -e 's|@includedir@|$${prefix}/include|' \
	        -e 's|@version@|$(CLIENT_VERSION)|' -e 's|@rpath@||' \
	        client/$$pc.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/$$pc.pc || exit 1; \
	done
	install -m 644 docs/lockctl.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 docs/liblockd.3 $(DESTDIR)$(PREFIX)/share/man/man3/
	install -m 644 docs/lockd.8 $(DESTDIR)$(PREFIX)/share/man/man8/
	sed -e 's|/usr/local/bin/lockd|$(PREFIX)/bin/lockd|' \
	    -e 's|/etc/lockd/lockd.conf|$(SYSCONFDIR)/lockd/lockd.conf|' \
	    systemd/lockd.service > $(DESTDIR)$(UNITDIR)/lockd.service
	install -m 644 systemd/lockd.socket $(DESTDIR)$(UNITDIR)/
	test -e $(DESTDIR)$(SYSCONFDIR)/lockd/lockd.conf || \
	    { $(INSTALLED_CONF) > $(DESTDIR)$(SYSCONFDIR)/lockd/lockd.conf && \
	      chmod 644 $(DESTDIR)$(SYSCONFDIR)/lockd/lockd.conf; }
	@if [ -z "$(DESTDIR)" ]; then \
	    echo "$(LDCONFIG)"; \
	    $(LDCONFIG) || echo "make install: $(LDCONFIG) failed; run it as root" >&2; \
	    $(LDCONFIG) -p 2>/dev/null | grep -q '$(LIBDIR)/$(CLIENT_SONAME)' || \
	    echo "make install: $(LIBDIR) is not in the run-time linker's path:" \
	        "add it to /etc/ld.so.conf.d/ and run ldconfig, or link with" \
	        "-Wl,-rpath,$(LIBDIR)" >&2; \
	fi

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	if $(INSTALLED_CONF) | cmp -s - $(DESTDIR)$(SYSCONFDIR)/lockd/lockd.conf; \
	then rm -f $(DESTDIR)$(SYSCONFDIR)/lockd/lockd.conf; fi
	@for d in $(UNINSTALL_DIRS); do \
	    rmdir "$(DESTDIR)$$d" 2>/dev/null || true; done

# make deb: the Debian packages (debian/; docs/operations.md) in build/deb/.
# dpkg-buildpackage builds inside the tree it is given, so it gets a copy:
# the files git knows (tracked, and untracked ones not ignored, as they are
# in the working tree now), or without git everything but the build
# directories.  Always a plain build: this make's variables (SANITIZE=1
# from make test SANITIZE=1, B) must not reach the package's make through
# the environment.  Debian's own tools build it: PATH is the system's,
# so that a python3 first on the user's PATH (pyenv) is not pybuild's.
DEB_DIR     := build/deb
DEB_VERSION  = $(shell dpkg-parsechangelog -l debian/changelog -S Version)

.PHONY: deb deps-deb
deps-deb:
	@tools/deps.sh deb

deb: deps-deb
	@case "$(DEB_VERSION)" in $(CLIENT_VERSION)-*) ;; *) \
	    echo "make deb: debian/changelog says $(DEB_VERSION), daemon/config.h" \
	        "says $(CLIENT_VERSION): add a debian/changelog entry (by hand, or" \
	        "devscripts' dch -v $(CLIENT_VERSION)-1)" >&2; exit 1 ;; esac
	rm -rf $(DEB_DIR)
	mkdir -p $(DEB_DIR)/src
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
	    git ls-files -z --cached --others --exclude-standard | \
	        tar --null --no-recursion --ignore-failed-read -T - -cf -; \
	else \
	    tar --exclude=./.git --exclude=./build --exclude=./build-san \
	        --exclude=./build-fuzz --exclude=./lockd-data -cf - .; \
	fi | tar -C $(DEB_DIR)/src -xf -
	cd $(DEB_DIR)/src && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
	    -u SANITIZE -u B PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	    DEB_BUILD_OPTIONS="nocheck parallel=2 $(DEB_BUILD_OPTIONS)" \
	    dpkg-buildpackage -us -uc -b >../build.log 2>&1 || \
	    { tail -30 ../build.log >&2; echo "make deb: failed; the whole log:" \
	      "$(DEB_DIR)/build.log" >&2; exit 1; }
	@echo "make deb: the packages (log: $(DEB_DIR)/build.log):"
	@ls -1 $(DEB_DIR)/*.deb

clean:
	rm -rf build build-san build-fuzz

# --- the tests --------------------------------------------------------------
# Built by make test only.  Test objects may include every library's
# headers; each program links what it uses of the test library
# (tests/lib/, build/libtests.a).
TEST_CFLAGS := $(SYS_CFLAGS) $(CMOCKA_CFLAGS)

$(B)/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(TEST_CFLAGS) -c $< -o $@

TESTLIB_SRC := $(wildcard tests/lib/*.c)
TESTLIB_OBJ := $(TESTLIB_SRC:%.c=$(B)/%.o)
TESTLIB     := $(B)/libtests.a
$(TESTLIB): $(TESTLIB_OBJ)
	$(AR) rcs $@ $^

# Unit tests link everything but the daemon's main().
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
$(B)/tests/test_%: $(B)/tests/unit/test_%.o $(TESTLIB) $(DAEMON_LINK)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(DAEMON_LIBS)

# The model checker explores the core alone.
MODEL_SRC := $(wildcard tests/model/*.c)
MODEL_BIN := $(B)/tests/model_check
$(MODEL_BIN): $(MODEL_SRC:%.c=$(B)/%.o) $(TESTLIB) $(B)/libcore.a
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CMOCKA_LIBS)

# build/tests/sim runs the daemon's service layer (not libuv) under simulated
# clients, clock, store failures and crashes; `--seed N` replays a run.
# build/tests/test_sim is the cmocka program make test runs.  Objects go to
# $(B)/tests/sim-obj/ since $(B)/tests/sim is the binary.
SIM_LIB_SRC  := tests/sim/sim.c tests/sim/world.c tests/sim/history.c \
                tests/sim/variants.c tests/sim/etcd_sim.c
SIM_LIB_OBJ  := $(SIM_LIB_SRC:tests/sim/%.c=$(B)/tests/sim-obj/%.o)
SIM_BIN      := $(B)/tests/sim
SIM_TEST_BIN := $(B)/tests/test_sim

$(B)/tests/sim-obj/%.o: tests/sim/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(TEST_CFLAGS) -c $< -o $@

$(SIM_BIN): $(B)/tests/sim-obj/main.o $(SIM_LIB_OBJ) $(TESTLIB) $(DAEMON_LINK)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(DAEMON_LIBS)

# test_sim prints the replay command of $(SIM_BIN), so it comes along.
$(SIM_TEST_BIN): $(B)/tests/sim-obj/test_sim.o $(SIM_LIB_OBJ) $(TESTLIB) \
    $(DAEMON_LINK) | $(SIM_BIN)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(DAEMON_LIBS)

.PHONY: sim
sim: $(SIM_BIN) $(SIM_TEST_BIN)

# lockd-faulty is daemon_run() with a fault point chosen by LOCKD_FAULT; the
# shim journals lockd's writes and syncs to build power-loss images.
CRASH_FAULTY := $(B)/tests/lockd-faulty
CRASH_SHIM   := $(B)/tests/powerloss_shim.so

$(CRASH_FAULTY): $(B)/tests/crash/lockd_faulty.o $(DAEMON_LINK)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(DAEMON_LIBS)

# Preloaded into lockd, so built without the sanitizers (an ASan lockd is
# then run with ASAN_OPTIONS=verify_asan_link_order=0).
$(CRASH_SHIM): tests/crash/powerloss_shim.c tests/crash/journal.h
	@mkdir -p $(dir $@)
	$(CC) $(STD) $(WARNINGS) $(CFLAGS) -I. -fPIC -shared -o $@ $< -ldl -lpthread

# Integration tests start the real lockd through the test library's
# process harness (tests/lib/harness.c); their full-map tests, like the
# abuse programs', start lockd-faulty too (LOCKD_FAULT=map_unchecked).
INTEG_SRC := $(wildcard tests/integration/test_*.c)
INTEG_BIN := $(INTEG_SRC:tests/integration/test_%.c=$(B)/tests/integ_%)
$(B)/tests/integ_%: $(B)/tests/integration/test_%.o $(TESTLIB) \
    $(B)/libproto.a | $(B)/lockd $(CRASH_FAULTY)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $(filter %.o %.a,$^) $(CMOCKA_LIBS) \
	    $(INTEG_LIBS)
# The TLS test is a TLS client itself.
$(B)/tests/integ_tls: INTEG_LIBS := $(OPENSSL_LIBS)

# Deliberately broken builds of lockd, for the guards of the cluster
# checkers (tests/integration/cluster-guards.sh): each recompiles the one
# file its LOCKD_BROKEN_* switch is in, to $(B)/broken/VARIANT/, and links
# it with the daemon's other objects to $(B)/broken/lockd-VARIANT.  The
# switches appear nowhere else: $(B)/lockd never has one.
#   skip-leader-compare  a batch not guarded by the leader key
#   keep-expiry          a take-over that keeps the old leader's expiries
#   serve-past-lease     a leader that serves past its leader lease
BROKEN_VARIANTS := skip-leader-compare keep-expiry serve-past-lease
BROKEN_BIN      := $(BROKEN_VARIANTS:%=$(B)/broken/lockd-%)
broken_file_skip-leader-compare := daemon/store_etcd.c
broken_file_keep-expiry         := core/takeover.c
broken_file_serve-past-lease    := daemon/leader.c

define broken_variant
$(B)/broken/$(1)/%.o: %.c
	@mkdir -p $$(dir $$@)
	$$(CC) $$(ALL_CFLAGS) $$(SYS_CFLAGS) \
	    -DLOCKD_BROKEN_$(shell echo $(1) | tr a-z- A-Z_) -c $$< -o $$@
$(B)/broken/lockd-$(1): $(B)/daemon/main.o \
    $(B)/broken/$(1)/$(broken_file_$(1):.c=.o) \
    $(filter-out $(B)/$(broken_file_$(1):.c=.o),$(DAEMON_OBJ) $(CORE_OBJ)) \
    $(B)/libproto.a
	$$(CC) $$(ALL_LDFLAGS) -o $$@ $$^ $$(DAEMON_LIBS)
endef
$(foreach v,$(BROKEN_VARIANTS),$(eval $(call broken_variant,$(v))))

# The examples build the way a user's program does: through pkg-config and
# nothing else (no -I. to the project's internals).  The client tests run
# them, lockd and lockctl.
CLIENT_EXAMPLES := $(patsubst examples/%.c,$(B)/examples/%,$(wildcard examples/*.c))
CLIENT_TEST_SRC := $(wildcard tests/client/test_*.c)
CLIENT_TEST_BIN := $(CLIENT_TEST_SRC:tests/client/test_%.c=$(B)/tests/client_%)

$(B)/examples/%: examples/%.c $(CLIENT_PC_DIR)/lockd.pc $(CLIENT_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -I.,$(ALL_CFLAGS)) \
	    $$($(CLIENT_PKG_CONFIG) --cflags lockd) -o $@ $< \
	    $(ALL_LDFLAGS) $$($(CLIENT_PKG_CONFIG) --libs lockd)

$(B)/tests/client/%.o: ALL_CFLAGS += -pthread
$(B)/tests/client_%: $(B)/tests/client/test_%.o $(TESTLIB) $(B)/liblockd.a \
    $(B)/libproto.a | $(B)/lockd $(B)/lockctl $(CLIENT_EXAMPLES)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -pthread -o $@ $(filter %.o %.a,$^) $(CMOCKA_LIBS) \
	    $(UV_LIBS) $(OPENSSL_LIBS)

# Crash and power-loss tests: make test runs them short; make soak runs the
# long ones (1,000 kill -9 cycles, 900 power-loss images, 30 s of fencing).
# They start build/lockd, lockd-faulty and the shim: they come along.
CRASH_LIB_OBJ  := $(addprefix $(B)/tests/crash/,checker.o workload.o crashlib.o)
CRASH_RUNTIME  := $(B)/lockd $(CRASH_FAULTY) $(CRASH_SHIM)
CRASH_TEST_BIN := $(B)/tests/crash_loop $(B)/tests/crash_faults \
                  $(B)/tests/crash_powerloss $(B)/tests/crash_fencing

$(B)/tests/crash_loop: $(B)/tests/crash/test_crash_loop.o $(CRASH_LIB_OBJ) \
    $(TESTLIB) $(B)/libproto.a | $(CRASH_RUNTIME)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CMOCKA_LIBS)

$(B)/tests/crash_faults: $(B)/tests/crash/test_faults.o $(CRASH_LIB_OBJ) \
    $(TESTLIB) $(B)/libproto.a | $(CRASH_RUNTIME)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CMOCKA_LIBS)

$(B)/tests/crash_powerloss: $(B)/tests/crash/test_powerloss.o \
    $(B)/tests/crash/journal.o $(CRASH_LIB_OBJ) $(TESTLIB) \
    $(DAEMON_LINK) | $(CRASH_RUNTIME)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CMOCKA_LIBS) $(DAEMON_LIBS)

$(B)/tests/crash_fencing: $(B)/tests/crash/test_fencing.o $(CRASH_LIB_OBJ) \
    $(TESTLIB) $(B)/libproto.a | $(CRASH_RUNTIME)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CMOCKA_LIBS)

# The abuse programs: thousands of connections, slowloris, a client that
# never reads, random bytes, a million names, a full map, wall-clock steps.
# They start the real lockd through the harness, like the integration
# tests, and include nothing of daemon/.
ABUSE_SRC      := $(wildcard tests/abuse/test_*.c)
ABUSE_TEST_BIN := $(ABUSE_SRC:tests/abuse/test_%.c=$(B)/tests/abuse_%)
$(B)/tests/abuse_%: $(B)/tests/abuse/test_%.o $(B)/tests/abuse/abuse.o \
    $(TESTLIB) $(B)/libproto.a | $(B)/lockd $(CRASH_FAULTY)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_LDFLAGS) -o $@ $(filter %.o %.a,$^) $(CMOCKA_LIBS)

# libFuzzer targets, built apart from the rest with clang (ASan + UBSan),
# in build-fuzz/: fuzz_proto over the parser; fuzz_service drives
# daemon/service.c (not libuv) over the in-memory store (see the comment at
# its top; UBSan findings are fatal, so they count as crashes); fuzz_tls
# the TLS glue; fuzz_http the metrics endpoint's request head parser.
# tests/fuzz/run-fuzz.sh NAME BINARY CORPUS SECONDS runs one on a throwaway
# copy of its seeds (tests/fuzz/corpus/; make_service_seeds.py writes the
# service's), leaves a crashing input in build-fuzz/ as crash-*, and prints
# one summary line.  make check and make test replay every corpus
# (--replay: each input once); fuzz-smoke-all (25 s each) and make fuzz
# search.
FUZZ_CC      ?= clang
FUZZ_CFLAGS  := -g -O1 -fsanitize=fuzzer,address,undefined -std=c11 \
                -D_GNU_SOURCE -I.
FUZZ_PROTO   := build-fuzz/fuzz_proto
FUZZ_SERVICE := build-fuzz/fuzz_service
FUZZ_SERVICE_SRC := tests/fuzz/fuzz_service.c daemon/service.c \
                    daemon/service_reply.c \
                    daemon/service_commit.c daemon/format.c \
                    daemon/store.c daemon/metrics.c daemon/log.c \
                    daemon/auth.c daemon/quota.c daemon/recovery.c \
                    tests/lib/store_mem.c tests/lib/rng.c $(CORE_SRC) \
                    tests/lib/broken_rules.c $(PROTO_SRC)
FUZZ_TLS     := build-fuzz/fuzz_tls
FUZZ_HTTP    := build-fuzz/fuzz_http
FUZZ_TLS_SRC := tests/fuzz/fuzz_tls.c daemon/tls.c $(filter-out \
                tests/fuzz/fuzz_service.c tests/lib/rng.c \
                tests/lib/broken_rules.c,$(FUZZ_SERVICE_SRC))
FUZZ_SECONDS       ?= 600
FUZZ_SMOKE_SECONDS ?= 25
FUZZ_GUARD_SECONDS ?= 120

$(FUZZ_PROTO): tests/fuzz/fuzz_proto.c proto/proto.c proto/proto.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) tests/fuzz/fuzz_proto.c proto/proto.c -o $@

$(FUZZ_SERVICE): $(FUZZ_SERVICE_SRC) $(wildcard core/*.h proto/*.h \
    daemon/*.h tests/lib/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(WARNINGS) -fno-sanitize-recover=undefined \
	    $(FUZZ_SERVICE_SRC) -o $@ $(OPENSSL_LIBS)

$(FUZZ_HTTP): tests/fuzz/fuzz_http.c daemon/http_parse.c daemon/http_parse.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(WARNINGS) -fno-sanitize-recover=undefined \
	    tests/fuzz/fuzz_http.c daemon/http_parse.c -o $@

$(FUZZ_TLS): $(FUZZ_TLS_SRC) $(wildcard core/*.h proto/*.h daemon/*.h \
    tests/lib/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(WARNINGS) -fno-sanitize-recover=undefined \
	    $(FUZZ_TLS_SRC) -o $@ $(OPENSSL_LIBS)

.PHONY: fuzz fuzz-smoke-all fuzz-guard
fuzz:
	@tools/deps.sh fuzz
	@$(MAKE) --no-print-directory $(FUZZ_PROTO) $(FUZZ_SERVICE) $(FUZZ_TLS) \
	    $(FUZZ_HTTP)
	@tests/fuzz/run-fuzz.sh proto $(FUZZ_PROTO) tests/fuzz/corpus/proto \
	    $(FUZZ_SECONDS) && \
	 tests/fuzz/run-fuzz.sh service $(FUZZ_SERVICE) \
	    tests/fuzz/corpus/service $(FUZZ_SECONDS) && \
	 tests/fuzz/run-fuzz.sh tls $(FUZZ_TLS) tests/fuzz/corpus/tls \
	    $(FUZZ_SECONDS) && \
	 tests/fuzz/run-fuzz.sh http $(FUZZ_HTTP) tests/fuzz/corpus/http \
	    $(FUZZ_SECONDS)

fuzz-smoke-all: $(FUZZ_PROTO) $(FUZZ_SERVICE) $(FUZZ_TLS) $(FUZZ_HTTP)
	@tests/fuzz/run-fuzz.sh proto $(FUZZ_PROTO) tests/fuzz/corpus/proto \
	    $(FUZZ_SMOKE_SECONDS) && \
	 tests/fuzz/run-fuzz.sh service $(FUZZ_SERVICE) \
	    tests/fuzz/corpus/service $(FUZZ_SMOKE_SECONDS) && \
	 tests/fuzz/run-fuzz.sh tls $(FUZZ_TLS) tests/fuzz/corpus/tls \
	    $(FUZZ_SMOKE_SECONDS) && \
	 tests/fuzz/run-fuzz.sh http $(FUZZ_HTTP) tests/fuzz/corpus/http \
	    $(FUZZ_SMOKE_SECONDS)

# The service fuzzer's guard: a broken service must be caught.
fuzz-guard: $(FUZZ_SERVICE)
	@tests/fuzz/run-fuzz.sh --guard service $(FUZZ_SERVICE) \
	    tests/fuzz/corpus/service $(FUZZ_GUARD_SECONDS)

# --- the test tiers ---------------------------------------------------------
# make check, the fast tier (about 2 minutes on 2 cores; run it after every
# edit): the unit tests that need no etcd, the model checker, the short
# simulator run (test_sim), a replay of every fuzz corpus (each input once,
# no timed fuzzing), and the single-node integration and client tests.
# make test (about 7 minutes; README, .ci/run): make check's and the rest:
# etcd's unit tests, the cluster and fail-over tests, crash and power loss,
# abuse, the cluster checkers' and the service fuzzer's guards, the Python
# client, the units, the install, the Debian packages (built, installed
# into this machine, used and purged: it skips where they are installed,
# and two runs take turns), the bench report's layout, the docs and their
# samples.  make soak, make fuzz and make soak-abuse are the long runs.
#
# Adding a test program is one line in one of the four lists below: a
# program and its arguments (quoted when there are any).  CHECK_RUN and
# TEST_RUN run in both passes of .ci/run, the plain one and make test
# SANITIZE=1; CHECK_ONCE and TEST_ONCE only in the plain pass: what the
# sanitizers cannot change (the fuzzers are built with them already; the
# package is a plain build; scripts that read files; the guards, whose
# verdict is the checkers').  "serial:" before an entry runs it alone,
# after the others: what measures time or load.  tools/run-tests.sh runs
# the rest TEST_JOBS at a time: longest first by the last run's times
# ($(B)/test-times), else in the order given, which puts the long first.
UNIT_ETCD_BIN       := $(B)/tests/test_etcd $(B)/tests/test_store_etcd
INTEG_CLUSTER_BIN   := $(filter $(B)/tests/integ_cluster%,$(INTEG_BIN))
CLIENT_FAILOVER_BIN := $(filter %failover,$(CLIENT_TEST_BIN))
FUZZ_BIN            := $(FUZZ_PROTO) $(FUZZ_SERVICE) $(FUZZ_TLS) $(FUZZ_HTTP)

CHECK_RUN = \
    $(MODEL_BIN) \
    $(SIM_TEST_BIN) \
    $(B)/tests/test_journal \
    $(filter-out $(CLIENT_FAILOVER_BIN),$(CLIENT_TEST_BIN)) \
    $(filter-out $(INTEG_CLUSTER_BIN),$(INTEG_BIN)) \
    $(filter-out $(UNIT_ETCD_BIN) $(B)/tests/test_journal,$(UNIT_BIN))
CHECK_ONCE = \
    "tests/fuzz/run-fuzz.sh --replay service $(FUZZ_SERVICE) tests/fuzz/corpus/service" \
    "tests/fuzz/run-fuzz.sh --replay proto $(FUZZ_PROTO) tests/fuzz/corpus/proto" \
    "tests/fuzz/run-fuzz.sh --replay tls $(FUZZ_TLS) tests/fuzz/corpus/tls" \
    "tests/fuzz/run-fuzz.sh --replay http $(FUZZ_HTTP) tests/fuzz/corpus/http"
TEST_RUN = \
    "tests/python/run.sh $(abspath $(B)/lockd)" \
    "tests/docs/run-samples.sh $(B) $(SANFLAGS)" \
    $(B)/tests/crash_loop \
    $(B)/tests/crash_powerloss \
    $(B)/tests/crash_faults \
    $(INTEG_CLUSTER_BIN) \
    $(UNIT_ETCD_BIN) \
    "tests/systemd/check-install.sh $(B) $(SANFLAGS)" \
    "tests/docs/cron-tls.sh $(B)" \
    "tests/docs/security-tls.sh $(B)" \
    "tests/systemd/check-units.sh $(abspath $(B)/lockd)" \
    $(addprefix serial:,$(CLIENT_FAILOVER_BIN)) \
    serial:$(B)/tests/crash_fencing \
    $(addprefix serial:,$(ABUSE_TEST_BIN))
TEST_ONCE = \
    "tests/go/run.sh $(abspath $(B)/lockd)" \
    "tests/packaging/check-deb.sh" \
    "tests/docs/check-docs.sh $(abspath $(B)/lockd)" \
    "tests/integration/cluster-guards.sh $(B)" \
    "tests/fuzz/run-fuzz.sh --guard service $(FUZZ_SERVICE) tests/fuzz/corpus/service $(FUZZ_GUARD_SECONDS)" \
    "tests/bench/check-report.sh" \
    serial:tests/systemd/check-nspawn.sh

# What each tier builds first; the fuzzers and the broken lockds only for
# the plain pass, which runs them.
CHECK_BIN := $(MODEL_BIN) $(SIM_TEST_BIN) $(UNIT_BIN) $(INTEG_BIN) \
             $(CLIENT_TEST_BIN) $(CRASH_FAULTY)
TEST_BIN  := $(CHECK_BIN) $(CRASH_TEST_BIN) $(ABUSE_TEST_BIN)
ifeq ($(SANITIZE),1)
CHECK_ONCE :=
TEST_ONCE  :=
else
CHECK_BIN  += $(FUZZ_BIN)
TEST_BIN   += $(FUZZ_BIN) $(BROKEN_BIN)
endif

TEST_JOBS ?= 3
RUN_TESTS  = LOCKD_BIN=$(abspath $(B)/lockd) tools/run-tests.sh \
             -j $(TEST_JOBS) -t $(B)/test-times
# make check and make test build with a job per CPU unless given -j.
BUILD_JOBS = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(shell nproc))

check: deps-test
	@$(MAKE) --no-print-directory $(BUILD_JOBS) check-run

check-run: all $(CHECK_BIN)
	@$(RUN_TESTS) $(CHECK_RUN) $(CHECK_ONCE)

test: deps-test
	@$(MAKE) --no-print-directory $(BUILD_JOBS) test-run

test-run: all $(TEST_BIN)
	@$(RUN_TESTS) $(TEST_ONCE) $(CHECK_RUN) $(TEST_RUN) $(CHECK_ONCE)

# The packages under a real systemd: a Debian 12 root booted by
# systemd-nspawn (built once into /var/cache/lockd-tests), driven through
# apt, systemctl and journalctl; it reuses build/deb when no file of the
# tree is newer (make test runs it after check-deb.sh has built them:
# alone, at the end).
.PHONY: check-systemd
check-systemd: deps-test
	@tests/systemd/check-nspawn.sh

# --- long runs: soak, abuse, valgrind ---------------------------------------
.PHONY: crash-test soak abuse soak-abuse valgrind
crash-test: $(CRASH_TEST_BIN)
	@LOCKD_BIN=$(abspath $(B)/lockd) tools/run-tests.sh $(CRASH_TEST_BIN)

# 1,000 kill -9 cycles; 60 power-loss runs of 15 images (900 images);
# fencing for 30 s with the check on and up to 90 s off; the simulator
# over 30 million requests with every seed in cluster mode, and 30
# million mixed from seed 1000 (make test's run stops before).
soak: deps-test $(CRASH_TEST_BIN) $(SIM_BIN)
	@LOCKD_BIN=$(abspath $(B)/lockd) tools/run-tests.sh \
	    "$(B)/tests/crash_loop --cycles 1000" \
	    "$(B)/tests/crash_powerloss --cycles 60 --images 15" \
	    "$(B)/tests/crash_fencing --seconds 30" \
	    "$(SIM_BIN) --cluster --requests 30000000 --quiet" \
	    "$(SIM_BIN) --seed 1000 --requests 30000000 --quiet"

abuse: $(B)/lockd $(ABUSE_TEST_BIN)
	@LOCKD_BIN=$(abspath $(B)/lockd) tools/run-tests.sh $(ABUSE_TEST_BIN)

soak-abuse: $(B)/lockd $(ABUSE_TEST_BIN)
	@ABUSE_SCALE=4 LOCKD_BIN=$(abspath $(B)/lockd) \
	    tools/run-tests.sh $(ABUSE_TEST_BIN)

# The integration tests with LOCKD_BIN pointing at a wrapper that execs
# lockd under memcheck (so the PID the harness signals is lockd's).  The
# verdict is memcheck's: every lockd that exits by itself must report no
# error and no definite or indirect leak (tests/abuse/valgrind-report.sh).
# HARNESS_SLOW stretches the harness's time limits and HARNESS_STOP_GENTLY
# ends each test's lockd with SIGTERM, so that it reports.  The tests' own
# results are shown but do not decide: a few time leases of 300 ms, which a
# lockd 20-50 times slower cannot keep.
VALGRIND_LOGS := $(B)/valgrind

valgrind: $(B)/lockd $(INTEG_BIN)
	@command -v valgrind >/dev/null || \
	    { echo "valgrind: apt-get install valgrind" >&2; exit 1; }
	@rm -rf $(VALGRIND_LOGS) && mkdir -p $(VALGRIND_LOGS)
	@VALGRIND_LOG_DIR=$(abspath $(VALGRIND_LOGS)) \
	 LOCKD_REAL_BIN=$(abspath $(B)/lockd) \
	 LOCKD_BIN=$(abspath tests/abuse/valgrind-lockd.sh) HARNESS_SLOW=4 \
	 HARNESS_STOP_GENTLY=1 tools/run-tests.sh $(INTEG_BIN) \
	    >$(VALGRIND_LOGS)/tests.out 2>&1; \
	 grep -E '^(failed programs|programs):' $(VALGRIND_LOGS)/tests.out | \
	    sed 's/^/valgrind: integration tests under memcheck: /'; \
	 tests/abuse/valgrind-report.sh $(VALGRIND_LOGS)

# --- benchmarks -------------------------------------------------------------
# make bench installs the peers (Redis, etcd, hiredis), builds lockd, the load
# generator and the no-op ceiling server, and runs bench/run.sh: lockd, Redis
# (appendfsync always), etcd and the no-op server interleaved, pinned apart
# with taskset.  BENCH_SECONDS, BENCH_ROUNDS and BENCH_QUICK=1 shorten it.
BENCH_LOADGEN := $(B)/bench/loadgen
BENCH_NOOP    := $(B)/bench/noop
BENCH_FLUSH   := $(B)/bench/flushcost
HIREDIS_LIBS   = $(call pc_libs,hiredis,-lhiredis)

.PHONY: bench bench-build deps-bench sizing bench-cluster bench-cluster-run
.PHONY: bench-kinds bench-mem bench-failover bench-failover-run

$(B)/bench/%.o: bench/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LMDB_CFLAGS) -c $< -o $@

$(BENCH_LOADGEN): $(B)/bench/loadgen.o $(B)/libproto.a
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(HIREDIS_LIBS)

$(BENCH_NOOP): $(B)/bench/noop.o
	$(CC) $(ALL_LDFLAGS) -o $@ $^

$(BENCH_FLUSH): $(B)/bench/flushcost.o
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LMDB_LIBS)

deps-bench:
	@tools/deps.sh bench

bench-build: $(B)/lockd $(BENCH_LOADGEN) $(BENCH_NOOP) $(BENCH_FLUSH)

# The packages first, then a recursive make, so that pkg-config sees hiredis.
bench: deps-bench
	@$(MAKE) --no-print-directory bench-build
	LOCKD=$(abspath $(B)/lockd) LOADGEN=$(abspath $(BENCH_LOADGEN)) \
	    NOOP=$(abspath $(BENCH_NOOP)) FLUSHCOST=$(abspath $(BENCH_FLUSH)) \
	    bench/run.sh
	@$(MAKE) --no-print-directory bench-cluster-run

# The lock kinds alone: a 16-permit semaphore and 60 readers with 4 writers
# on one name, lockd against Redis Lua scripts, their overlap checks, and
# bytes per holder (bench/run.sh with BENCH_ONLY=kinds; about 2 minutes,
# BENCH_QUICK=1 about 25 s).
bench-kinds: deps-bench
	@$(MAKE) --no-print-directory bench-build
	BENCH_ONLY=kinds LOCKD=$(abspath $(B)/lockd) \
	    LOADGEN=$(abspath $(BENCH_LOADGEN)) NOOP=$(abspath $(BENCH_NOOP)) \
	    bench/run.sh

# Cluster mode (3-member etcd, 3 lockd nodes) against etcd's own lock API
# on the same etcd, the ceiling and fail-over time (bench/cluster.sh; about
# 3 minutes; BENCH_QUICK=1 about 30 s).
bench-cluster: deps-bench
	@$(MAKE) --no-print-directory bench-cluster-run

bench-cluster-run: $(B)/lockd $(BENCH_LOADGEN)
	LOCKD=$(abspath $(B)/lockd) LOADGEN=$(abspath $(BENCH_LOADGEN)) \
	    bench/cluster.sh

# Leases through kill -9 fail-overs of the leader (issue 25): lockctl run,
# liblockd's and the libuv keep-alive and the Python client each hold a
# 10 s lease while other clients are busy; per kill, the fail-over time,
# the time to each holder's first renewal on the new leader and whether it
# kept its lease (bench/failover-leases.py; about 20 s a kill,
# FAILOVER_KILLS=30).  The holder is built as a user's program is.
BENCH_HOLDER := $(B)/bench/lease_holder
$(BENCH_HOLDER): bench/lease_holder.c $(CLIENT_PC_DIR)/lockd.pc $(CLIENT_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -I.,$(ALL_CFLAGS)) \
	    $$($(CLIENT_PKG_CONFIG) --cflags lockd) -o $@ $< \
	    $(ALL_LDFLAGS) $$($(CLIENT_PKG_CONFIG) --libs lockd)

bench-failover: deps-bench
	@$(MAKE) --no-print-directory bench-failover-run

bench-failover-run: $(B)/lockd $(B)/lockctl $(BENCH_HOLDER)
	LOCKD=$(abspath $(B)/lockd) LOCKCTL=$(abspath $(B)/lockctl) \
	    HOLDER=$(abspath $(BENCH_HOLDER)) \
	    PYTHONPATH=$(abspath client/python) \
	    /usr/bin/python3 bench/failover-leases.py

# Bytes of RSS per held plain lock as make bench's scale step takes them,
# builds alternated (bench/mem.sh; about 20 s per run and build;
# LOCKD_BUILDS="/tmp/lockd-before build/lockd", MEM_RUNS=3).
BENCH_MEMSIZES := $(B)/bench/memsizes
$(BENCH_MEMSIZES): $(B)/bench/memsizes.o
	$(CC) $(ALL_LDFLAGS) -o $@ $^

bench-mem: deps-bench
	@$(MAKE) --no-print-directory $(B)/lockd $(BENCH_LOADGEN) \
	    $(BENCH_MEMSIZES)
	LOADGEN=$(abspath $(BENCH_LOADGEN)) \
	    MEMSIZES=$(abspath $(BENCH_MEMSIZES)) \
	    bench/mem.sh $(or $(LOCKD_BUILDS),$(abspath $(B)/lockd))

# Memory and data.mdb bytes per held lock at 16- and 255-byte names
# (bench/sizing.py; about 30 s; docs/operations.md, Sizing).
sizing: $(B)/lockd
	bench/sizing.py --lockd $(B)/lockd

# --- lint -------------------------------------------------------------------
# cppcheck and clang-tidy with the checked-in configuration: .clang-tidy at
# the top (the checks, and why some are off), tests/abuse/cppcheck.cfg (the
# flags) and tests/abuse/cppcheck-suppressions (false positives, each with
# its reason).  Any finding fails the target.
LINT_DIRS := core proto daemon client
LINT_SRC   = $(wildcard $(addsuffix /*.c,$(LINT_DIRS)))

.PHONY: lint lint-cppcheck lint-clang-tidy
lint: lint-cppcheck lint-clang-tidy
	@echo "lint: cppcheck and clang-tidy clean over $(LINT_DIRS)"

lint-cppcheck:
	cppcheck $(shell grep -v '^\#' tests/abuse/cppcheck.cfg) \
	    --suppressions-list=tests/abuse/cppcheck-suppressions \
	    -I. $(LINT_DIRS)

lint-clang-tidy:
	@mkdir -p $(B)
	@status=0; printf '%s\n' $(LINT_SRC) | xargs -P2 -I{} \
	    clang-tidy --quiet {} -- $(STD) -I. $(SYS_CFLAGS) \
	    >$(B)/clang-tidy.out 2>&1 || status=$$?; \
	 grep -v 'warnings\{0,1\} generated\.$$' $(B)/clang-tidy.out; \
	 echo "clang-tidy: $(words $(LINT_SRC)) files, exit $$status"; \
	 exit $$status

-include $(shell find $(B) -name '*.d' 2>/dev/null)

# paycallback - idempotent payment callback service.
# make run | test | unit | integration | asan | valgrind | bench | lint | test-faults | test-scale | test-console | fuzz | clean
PKGS   := libmicrohttpd libmariadb hiredis libcjson libcrypto libcurl libsystemd
# Goals that compile need the libraries: name a missing one in one line.
ifneq ($(filter-out deps services stop clean lint test test-faults test-scale test-console run asan valgrind bench,$(or $(MAKECMDGOALS),all)),)
  MISSING := $(shell for p in $(PKGS) $(if $(filter-out all,$(or $(MAKECMDGOALS),all)),check); \
                     do pkg-config --exists $$p || echo $$p; done)
  $(if $(MISSING),$(error missing pkg-config package $(MISSING) (make deps installs it)))
endif
WARN   := -Wall -Wextra -Werror -Wstrict-prototypes -Wwrite-strings -Wshadow
CFLAGS ?= -O2 -g
# Asked once per make (:=), not once per compile.
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CFLAGS += -std=c11 -D_DEFAULT_SOURCE $(WARN) $(addprefix -Iinclude/,$(LAYERS)) -I$(BUILD)/gen $(PKG_CFLAGS)
LDLIBS += $(PKG_LIBS) -lpthread
TEST_LDLIBS := $(shell pkg-config --libs check 2>/dev/null)
BUILD  := build
VERSION := 0.1.0
COMMIT  ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
ifeq ($(SANITIZE),1)
  BUILD   := build/asan
  CFLAGS  += -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
  LDFLAGS += -fsanitize=address,undefined
endif
ifeq ($(SANITIZE),fuzz)
  BUILD   := build/fuzz
  CC      := clang
  CFLAGS  += -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
  LDFLAGS += -fsanitize=fuzzer,address,undefined
endif
FUZZ_SECONDS ?= 15
BIN       := $(BUILD)/paycallback
# The layers, bottom to top: a file includes headers of its own layer or below
# (scripts/check-layers.py). A module's header, its contract, is
# include/<layer>/<module>.h; its source is src/<layer>/<module>.c.
LAYERS    := lib config store gateway domain http handlers app
SRCS      := $(foreach l,$(LAYERS),$(wildcard src/$(l)/*.c))
LIB_OBJS  := $(patsubst %.c,$(BUILD)/%.o,$(filter-out src/app/main.c,$(SRCS)))
UNIT      := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/check_*.c))
INTEG     := $(patsubst tests/integration/%.c,$(BUILD)/tests/%,$(wildcard tests/integration/check_*.c))
HARNESS   := $(patsubst %.c,$(BUILD)/%.o,$(wildcard tests/integration/harness/*.c))
FUZZERS   := $(patsubst fuzz/%.c,$(BUILD)/%,$(wildcard fuzz/fuzz_*.c))
CEILING   := $(BUILD)/bench/ceiling
TESTKEYS  := $(BUILD)/tests/testkeys.o
TESTMAIN  := $(BUILD)/tests/check_main.o
ifndef V
  QUIET_CC = @printf '  CC %s\n' $<;
  QUIET_LD = @printf '  LD %s\n' $@;
endif

all: $(BIN)

$(BUILD)/%.o: %.c Makefile
	@mkdir -p $(@D)
	$(QUIET_CC)$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

# Rewritten only when the version or commit changes, so main.o rebuilds then.
.PHONY: FORCE
$(BUILD)/gen/build_info.h: FORCE
	@mkdir -p $(@D)
	@printf '#define PAYCALLBACK_VERSION "%s"\n#define PAYCALLBACK_COMMIT "%s"\n' \
		'$(VERSION)' '$(COMMIT)' >$@.tmp
	@cmp -s $@.tmp $@ && rm $@.tmp || mv $@.tmp $@
$(BUILD)/src/app/main.o: $(BUILD)/gen/build_info.h

# The numbered migrations of sql/migrations/, embedded in the binary.
MIGRATIONS := sql/schema_migrations.sql $(sort $(wildcard sql/migrations/*.sql))
$(BUILD)/gen/migrations.h: $(MIGRATIONS) scripts/gen-migrations.sh
	@mkdir -p $(@D)
	@scripts/gen-migrations.sh sql $@
$(BUILD)/src/store/migrate.o: $(BUILD)/gen/migrations.h

$(BIN): $(BUILD)/src/app/main.o $(LIB_OBJS)
	$(QUIET_LD)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/check_%: $(BUILD)/tests/unit/check_%.o $(TESTMAIN) $(TESTKEYS) $(LIB_OBJS)
	$(QUIET_LD)$(CC) $(LDFLAGS) -o $@ $^ $(TEST_LDLIBS) $(LDLIBS)

$(BUILD)/tests/check_%: $(BUILD)/tests/integration/check_%.o $(TESTMAIN) $(HARNESS) $(TESTKEYS) $(LIB_OBJS)
	$(QUIET_LD)$(CC) $(LDFLAGS) -o $@ $^ $(TEST_LDLIBS) $(LDLIBS)

# The gateway suites run one table of scenarios, each through its own driver.
$(patsubst tests/integration/%.c,$(BUILD)/tests/%,$(wildcard tests/integration/check_gateway_*.c)): \
	$(BUILD)/tests/integration/gateway_scenarios.o

$(CEILING): $(BUILD)/bench/ceiling.o
	$(QUIET_LD)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The gateway targets sign and encrypt with tests/testkeys.c, as a gateway would.
$(BUILD)/fuzz_%: $(BUILD)/fuzz/fuzz_%.o $(TESTKEYS) $(LIB_OBJS)
	$(QUIET_LD)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
.SECONDARY:

.PHONY: all deps services run test test-bins unit integration asan valgrind bench lint test-faults test-scale test-console fuzz fuzz-bins fuzz-run clean stop
deps:
	@scripts/deps.sh
services: deps
	@scripts/services.sh start

# One compile job per core: the build is most of a fresh clone's first run.
run: services
	@$(MAKE) --no-print-directory -j$$(nproc) all
	$(BIN) --dev -c config/paycallback.json

unit: $(UNIT)
	@scripts/run-tests.sh $(UNIT)

# The suites run on databases migrated from the previous schema version
# (tests/migrate); the server logs of this run (var/test-logs) are read back
# as logfmt last.
integration: $(BIN) $(INTEG)
	@rm -rf var/test-logs
	@scripts/npm-ci.sh tests/tools/webhook-verify
	@PCB_BIN=$(BIN) scripts/run-tests.sh tests/migrate/check-migrate.sh $(INTEG) \
		tests/docs/check-webhooks.sh scripts/check-logfmt.py

# The binaries are built first with one job per core, then the suites run
# one after another.
test: services
	@$(MAKE) --no-print-directory -j$$(nproc) test-bins
	@$(MAKE) --no-print-directory unit integration
test-bins: $(BIN) $(UNIT) $(INTEG)

asan:
	@$(MAKE) --no-print-directory SANITIZE=1 test

valgrind: services
	@$(MAKE) --no-print-directory all $(UNIT)
	@VALGRIND=1 scripts/run-tests.sh $(UNIT)

# Instances behind HAProxy, then a Galera cluster, then two shards: storms, kills, rejoin.
test-scale: services
	@$(MAKE) --no-print-directory all
	@timeout -k 30 $${PAYCALLBACK_SCALE_TIMEOUT:-900} tests/scale/run.sh

bench: services
	@$(MAKE) --no-print-directory all $(CEILING)
	@bench/run.sh $(BIN) $(CEILING)
	@bench/webhooks.sh $(BIN)
	@bench/refund_lanes.sh $(BIN)

# The operator console in headless chromium (puppeteer-core), against the
# real service, MariaDB and Redis: about a minute. Screenshots in build/console/.
test-console: services
	@$(MAKE) --no-print-directory all
	@scripts/check-console.sh $(BIN)

test-faults: services
	@$(MAKE) --no-print-directory all
	@PCB_BIN=$(BIN) timeout -k 10 900 tests/faults/faults.py

fuzz:
	@$(MAKE) --no-print-directory SANITIZE=fuzz -j$$(nproc) fuzz-bins
	@$(MAKE) --no-print-directory SANITIZE=fuzz fuzz-run
fuzz-bins: $(FUZZERS)
fuzz-run: $(FUZZERS)
	@scripts/fuzz.sh $(FUZZ_SECONDS) $(FUZZERS)

lint:
	@scripts/lint.sh

stop:
	@scripts/services.sh stop

clean:
	rm -rf build

# make install [PREFIX=/usr/local] [DESTDIR=]: the binary and
# paycallback-setup-db, man pages generated from its --help key table, the
# SQL, the systemd unit, and the system config (config/paycallback.system.json:
# the system MariaDB and Redis, placeholders the service refuses until they
# are filled; not over an existing one), and the operator console's documents
# (DATADIR/console, console.dir of the system config). uninstall removes all
# but the config.
PREFIX  ?= /usr/local
SBINDIR := $(PREFIX)/sbin
DATADIR := $(PREFIX)/share/paycallback
MANDIR  := $(PREFIX)/share/man
UNITDIR ?= $(PREFIX)/lib/systemd/system
SYSCONFDIR ?= /etc
.PHONY: man config-doc install uninstall deb test-deb test-systemd test-readme test-install test-image
man: $(BIN)
	@scripts/gen-man.py $(BIN) $(BUILD)/man
# docs/configuration.md, from the same key table (make lint fails when stale).
config-doc: $(BIN)
	@scripts/gen-config-doc.py $(BIN) docs/configuration.md
install: man
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(DATADIR)/migrations $(DESTDIR)$(DATADIR)/console \
		$(DESTDIR)$(MANDIR)/man5 \
		$(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSCONFDIR)/paycallback
	install -m 0755 $(BIN) $(DESTDIR)$(SBINDIR)/paycallback
	install -m 0755 deploy/paycallback-setup-db $(DESTDIR)$(SBINDIR)/paycallback-setup-db
	install -m 0644 sql/*.sql $(DESTDIR)$(DATADIR)/
	install -m 0644 sql/migrations/*.sql $(DESTDIR)$(DATADIR)/migrations/
	install -m 0644 console/*.html console/*.css console/*.js console/*.svg $(DESTDIR)$(DATADIR)/console/
	install -m 0644 $(BUILD)/man/paycallback.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 0644 $(BUILD)/man/paycallback.json.5 $(DESTDIR)$(MANDIR)/man5/
	sed -e 's|@sbindir@|$(SBINDIR)|g' -e 's|@sysconfdir@|$(SYSCONFDIR)|g' \
		deploy/systemd/paycallback.service.in >$(DESTDIR)$(UNITDIR)/paycallback.service
	test -e $(DESTDIR)$(SYSCONFDIR)/paycallback/paycallback.json || \
		install -m 0640 config/paycallback.system.json \
			$(DESTDIR)$(SYSCONFDIR)/paycallback/paycallback.json
uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/paycallback $(DESTDIR)$(SBINDIR)/paycallback-setup-db \
		$(DESTDIR)$(MANDIR)/man8/paycallback.8 \
		$(DESTDIR)$(MANDIR)/man5/paycallback.json.5 $(DESTDIR)$(UNITDIR)/paycallback.service
	rm -rf $(DESTDIR)$(DATADIR)
# DPKG_BUILDPACKAGE_FLAGS=--no-pre-clean keeps what build/pkg holds
# (make test-install's newer build compiles only what changed).
deb:
	dpkg-buildpackage -us -uc -b $(DPKG_BUILDPACKAGE_FLAGS)
	@mkdir -p $(BUILD)/deb && mv ../paycallback_$(VERSION)_* ../paycallback-dbgsym_$(VERSION)_* $(BUILD)/deb/
test-deb:
	@scripts/check-deb.sh
# Installs the package on this host and drives it through systemd (PID 1):
# start, reload, refused reload, stop; purges it after. Root, disposable host.
test-systemd: deb
	@scripts/check-systemd.sh $(BUILD)/deb/paycallback_$(VERSION)_$(shell dpkg --print-architecture).deb
# The package installed by following docs/operations.md, in a clean Debian 12
# root with systemd as its PID 1 (root; mmdebstrap; the root is cached in var/).
test-install:
	@scripts/check-install.sh
# The command blocks of README.md and docs/*.md, run as written against a
# live service (scripts/check-readme.sh).
test-readme: services
	@$(MAKE) --no-print-directory all
	@scripts/check-readme.sh $(BIN)
# The Dockerfile builds an image whose binary runs: with a Docker engine the
# compose stack, else the Dockerfile's steps in clean Debian 12 roots
# (scripts/check-image.py; root, mmdebstrap; the apt steps cached in var/).
test-image: services
	@scripts/check-image.py

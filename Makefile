# Lodestore build.
#
# Sources are discovered, not listed: every internal/<module>/*.c goes into
# build/liblode.a, every agent/*.c into build/libagent.a (the backup, restore and gc
# engines), every cli/*.c into build/lode, every tests/unit/<module>/test_*.c
# becomes one cmocka binary, every tests/fuzz/fuzz_*.c one libFuzzer target. Adding a
# file needs no edit here.
#
#   make                      build build/lode
#   make test                 unit tests (ASan+UBSan), CLI tests, valgrind, short fuzz
#   make SAN=address,undefined  sanitizer build into build/san-address,undefined/
#   make lint                 banned functions, the layer rules of controller/ and cli/,
#                             strict YAML (no repeated keys), clang-format
#   make fuzz FUZZ_SECONDS=N  run every fuzz target for N seconds each
#   make setup                install the Debian packages the project needs (idempotent)

CC      ?= cc
SAN     ?=

# The libraries found through pkg-config, one word each (scripts/setup.sh installs
# their -dev packages). cmocka is asked for separately: only the unit tests link it.
PKGS    := libuv libcurl jansson yaml-0.1 openssl expat libzstd libmicrohttpd

# pkg-config is asked when a recipe first needs the flags, not when this file is
# read: `make setup all` reads the Makefile before setup has installed the .pc
# files, and an answer taken then would be empty. Each variable asks once per run
# (the eval replaces it by its value). A package pkg-config cannot resolve stops
# the build at once with one line naming it, rather than a wall of link errors.
pkg_missing = $(strip $(foreach p,$(1),$(if $(shell pkg-config --exists $(p) 2>/dev/null && echo y),,$(p))))
pkg_query = $(if $(shell command -v pkg-config 2>/dev/null),,$(error pkg-config is not installed: run `make setup`))$\
	$(if $(call pkg_missing,$(2)),$(error pkg-config cannot find $(call pkg_missing,$(2)): run `make setup`))$\
	$(shell pkg-config $(1) $(2))
PKG_CFLAGS  = $(eval PKG_CFLAGS := $$(call pkg_query,--cflags,$$(PKGS)))$(PKG_CFLAGS)
PKG_LIBS    = $(eval PKG_LIBS := $$(call pkg_query,--libs,$$(PKGS)))$(PKG_LIBS)
CMOCKA_LIBS = $(eval CMOCKA_LIBS := $$(call pkg_query,--libs,cmocka))$(CMOCKA_LIBS)

# With `make -j setup all`, nothing that needs the packages may start before setup
# has finished: those rules take setup as an order-only prerequisite when it is a goal.
SETUP_FIRST := $(filter setup,$(MAKECMDGOALS))

VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo 0.0.0-dev)

WARN    := -std=c17 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wvla -Wformat=2 -Wno-unused-parameter
CFLAGS  ?= -O2 -g
CPPFLAGS += -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Iinternal -I.

ifeq ($(SAN),)
BUILD   := build
SANFLAGS :=
else
BUILD   := build/san-$(SAN)
SANFLAGS := -fsanitize=$(SAN) -fno-sanitize-recover=all -fno-omit-frame-pointer
endif

# Recursive (=), so that PKG_CFLAGS is only asked for by a recipe.
ALL_CFLAGS = $(WARN) $(CFLAGS) $(SANFLAGS) $(PKG_CFLAGS)

LIB_SRC   := $(sort $(wildcard internal/*/*.c))
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
AGENT_SRC := $(sort $(wildcard agent/*.c))
AGENT_OBJ := $(AGENT_SRC:%.c=$(BUILD)/obj/%.o)
CLI_SRC   := $(sort $(wildcard cli/*.c))
CLI_OBJ   := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
CTL_SRC   := $(sort $(wildcard controller/*.c))
CTL_OBJ   := $(CTL_SRC:%.c=$(BUILD)/obj/%.o)
TEST_SRC  := $(sort $(wildcard tests/unit/*/test_*.c))
TEST_BIN  := $(TEST_SRC:%.c=$(BUILD)/%)
TEST_HELPER_SRC := $(sort $(wildcard tests/unit/*/helper_*.c))
TEST_HELPER_OBJ := $(TEST_HELPER_SRC:%.c=$(BUILD)/obj/%.o)
FUZZ_SRC  := $(sort $(wildcard tests/fuzz/fuzz_*.c))

BINS := $(BUILD)/lode
ifneq ($(wildcard controller/main.c),)
BINS += $(BUILD)/lode-controller
endif

.PHONY: all test valgrind fuzz fuzz-build lint format setup clean bench demo
.DEFAULT_GOAL := all

all: $(BINS)

$(BUILD)/obj/%.o: %.c | $(SETUP_FIRST)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

# The version is compiled into the two files that print it, which are rebuilt when
# `git describe` changes (the stamp file is rewritten only then).
VERSION_STAMP := $(BUILD)/version.stamp
$(shell mkdir -p $(BUILD) && (echo '$(VERSION)' | cmp -s - $(VERSION_STAMP) || echo '$(VERSION)' > $(VERSION_STAMP)))
VERSIONED_OBJ := $(BUILD)/obj/cli/cmd_version.o $(BUILD)/obj/cli/cmd_backup.o $(BUILD)/obj/controller/main.o $(BUILD)/obj/controller/controller.o
$(VERSIONED_OBJ): $(VERSION_STAMP)
$(VERSIONED_OBJ): CPPFLAGS += -DLODE_VERSION=\"$(VERSION)\"

$(BUILD)/liblode.a: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/libagent.a: $(AGENT_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/lode: $(CLI_OBJ) $(BUILD)/obj/gen/ui_assets.o $(BUILD)/libagent.a $(BUILD)/liblode.a
	$(CC) $(ALL_CFLAGS) -o $@ $(CLI_OBJ) $(BUILD)/obj/gen/ui_assets.o $(BUILD)/libagent.a $(BUILD)/liblode.a \
		$(PKG_LIBS) -lm

# The page of `lode ui` (web/, TypeScript built by Vite) is built into build/web when
# its sources change, then embedded into lode as byte arrays (web/embed.sh), so one
# binary is all a user needs. Every build flavour shares the one build/web. Whether
# npm is there is decided by web/build.sh when the page is built, not when this file
# is read (`make setup all` reads it before setup installs Node.js): without npm it
# says so, leaves build/web empty and no stamp, and lode is built without the page.
WEB_OUT   := build/web
WEB_SRC   := $(wildcard web/index.html web/package.json web/package-lock.json web/tsconfig.json \
               web/vite.config.ts web/src/* web/public/*)
WEB_STAMP := $(WEB_OUT)/.stamp
WEB_DIR   := $(WEB_OUT)
$(WEB_STAMP): $(WEB_SRC) web/build.sh | $(SETUP_FIRST)
	web/build.sh $(WEB_OUT)
$(BUILD)/gen/ui_assets.c: $(WEB_STAMP) web/embed.sh
	@mkdir -p $(dir $@)
	web/embed.sh $(WEB_DIR) > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/gen/ui_assets.o: $(BUILD)/gen/ui_assets.c cli/ui.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Icli $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/lode-controller: $(CTL_OBJ) $(BUILD)/liblode.a
	$(CC) $(ALL_CFLAGS) -o $@ $(CTL_OBJ) $(BUILD)/liblode.a $(PKG_LIBS) -lm

# A unit test links the libraries, the test helpers and cmocka. The controller's
# objects other than main.c are linked too, so its reconcile logic can be tested;
# libagent.a, so the backup, restore and gc engines can be.
CTL_TESTABLE_OBJ := $(filter-out $(BUILD)/obj/controller/main.o,$(CTL_OBJ))
$(BUILD)/tests/unit/%: tests/unit/%.c $(BUILD)/libagent.a $(BUILD)/liblode.a $(TEST_HELPER_OBJ) $(CTL_TESTABLE_OBJ) | $(SETUP_FIRST)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Icontroller -Itests/unit $(ALL_CFLAGS) -Wno-missing-prototypes -o $@ $< \
		$(TEST_HELPER_OBJ) $(CTL_TESTABLE_OBJ) $(BUILD)/libagent.a $(BUILD)/liblode.a $(CMOCKA_LIBS) $(PKG_LIBS) -lm

# make test: everything, as tests/all.sh describes (sanitised unit and CLI tests,
# valgrind, the fuzz targets over their seeds, the end-to-end tests on the local
# control plane). LODE_E2E=0 make test leaves the end-to-end phase out.
TEST_SAN ?= address,undefined
test:
	$(MAKE) --no-print-directory SAN=$(TEST_SAN) all unit-bins
	$(MAKE) --no-print-directory all unit-bins fuzz-build
	SAN_BUILD=build/san-$(TEST_SAN) tests/all.sh

.PHONY: unit-bins
unit-bins: $(TEST_BIN)

# valgrind runs the unsanitised unit tests; any leak or error fails the run.
valgrind: all $(TEST_BIN)
	VALGRIND=1 BUILD=$(BUILD) LODE=$(BUILD)/lode tests/run.sh

# libFuzzer targets are built with clang into build/fuzz; the library is rebuilt there
# with coverage instrumentation so the fuzzer sees inside it.
FUZZ_SECONDS ?= 60
FUZZ_CC ?= clang
FUZZ_BUILD := build/fuzz
FUZZ_FLAGS := -std=c17 -g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
FUZZ_LIB_OBJ := $(LIB_SRC:%.c=$(FUZZ_BUILD)/obj/%.o)
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=$(FUZZ_BUILD)/%)

$(FUZZ_BUILD)/obj/%.o: %.c | $(SETUP_FIRST)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_FLAGS) $(PKG_CFLAGS) -c $< -o $@

$(FUZZ_BUILD)/%: tests/fuzz/%.c $(FUZZ_LIB_OBJ)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_FLAGS) -fsanitize=fuzzer $(PKG_CFLAGS) -o $@ $< $(FUZZ_LIB_OBJ) $(PKG_LIBS) -lm

fuzz-build: $(FUZZ_BIN)

fuzz: fuzz-build
	FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run.sh $(FUZZ_BIN)

lint:
	scripts/lint.sh

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

setup:
	scripts/setup.sh

# Every other goal given with setup (test, demo, bench, ...) waits for it too.
ifneq ($(SETUP_FIRST),)
$(filter-out setup,$(MAKECMDGOALS)): | setup
endif

demo: all
	scripts/demo.sh

bench: all
	bench/run.sh

clean:
	rm -rf build

# The local control plane (etcd, kube-apiserver, KCM, KWOK, versitygw) lives in tests/env.
-include tests/env/env.mk

-include $(LIB_OBJ:.o=.d) $(AGENT_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(CTL_OBJ:.o=.d) $(TEST_HELPER_OBJ:.o=.d)

# pairshard — plain Makefile.
#
#   make             build libpairshard.a, libpairshard.so, libpairshard-reader.so
#                    and bin/pairshard
#   make demo        run the main job on the bundled Spider sample
#   make test        build and run the whole test suite
#   make check-asan  the whole suite under AddressSanitizer + UBSan
#   make check-tsan  the threaded build, reader and preprocessor under ThreadSanitizer
#   make check-faults  crash, disk-full, corruption, concurrency and output-path campaigns
#   make fuzz        libFuzzer targets on every parser of untrusted bytes
#   make bench       benchmarks, each against a peer measured in the same run
#   make check-abi   both shared libraries' ABIs against abi/*.abi
#   make abi-baseline  record the built ABI as the new baseline (deliberately)
#   make install PREFIX=/usr/local
#   make V=1         show the full compiler command lines
#   make JOBS=1      compile one file at a time (default: one per CPU)
#
# Dependencies are Debian packages; scripts/install-deps.sh installs what is
# missing (it runs automatically, before anything is built).

BUILD    ?= build
PREFIX   ?= /usr/local
CC       ?= cc
CUDA_HOME ?= /usr/local/cuda
SANITIZE ?=
V        ?= 0
ifeq ($(V),0)
Q := @
else
Q :=
endif

# Compile on every CPU (make test builds one tree, CI three): JOBS=N sets
# it; a -jN on the command line wins.
JOBS ?= $(shell nproc 2>/dev/null || echo 1)
ifeq ($(filter -j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(JOBS)
endif

PKGS      := lmdb libzstd libutf8proc jansson libpcre2-8 libxxhash zlib nettle sqlite3
TEST_PKGS := cmocka

# Install missing dependencies before pkg-config is asked anything. Skipped
# for goals that need nothing, and once per make tree (the variable is
# exported to sub-makes).
NODEP_GOALS := clean help
ifeq ($(PS_DEPS_CHECKED),)
ifneq ($(filter-out $(NODEP_GOALS),$(or $(MAKECMDGOALS),all)),)
DEPS_RC := $(shell sh scripts/install-deps.sh 1>&2; echo $$?)
ifneq ($(DEPS_RC),0)
$(error scripts/install-deps.sh failed (exit $(DEPS_RC)); see the messages above)
endif
export PS_DEPS_CHECKED := 1
endif
endif

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
TEST_CFLAGS := $(shell pkg-config --cflags $(TEST_PKGS) 2>/dev/null)
TEST_LIBS   := $(shell pkg-config --libs $(TEST_PKGS) 2>/dev/null)

# Neither library links CUDA: reader/cuda.c loads libcudart with dlopen at
# run time (common/cudart.c), so one build serves GPU and CPU-only hosts.
# The toolkit's headers, where installed, only check common/cudart.h's
# declarations (tests/test_cudart.c).
ifneq ($(wildcard $(CUDA_HOME)/include/cuda_runtime_api.h),)
HAVE_CUDA := 1
else
HAVE_CUDA := 0
endif

WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wformat=2
OPT     := -O2 -g
ifeq ($(SANITIZE),thread)
OPT     := -O1 -g -fsanitize=thread -fno-omit-frame-pointer
SAN_LDFLAGS := -fsanitize=thread
else ifneq ($(SANITIZE),)
OPT     := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_LDFLAGS := -fsanitize=address,undefined
endif
CPPFLAGS_ALL := -Iinclude -I. -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE \
                $(PKG_CFLAGS)
CFLAGS_ALL   := -std=c11 $(WARN) $(OPT) -fPIC -fvisibility=hidden -pthread $(CFLAGS)
LDFLAGS_ALL  := -pthread $(SAN_LDFLAGS) $(LDFLAGS)
LIBS_ALL     := $(PKG_LIBS) -lm

# libpairshard: everything but the reader library's own dependency list.
LIB_SRCS := $(filter-out common/versions_reader.c,$(sort $(wildcard common/*.c schema/*.c ingest/*.c tokenize/*.c validate/*.c report/*.c store/*.c pipeline/*.c reader/*.c)))
# libpairshard-reader (docs/ARCHITECTURE.md, "The two libraries"): reader/,
# store/ without the writer (LMDB) and the verifier, and the common code
# they call; linked with --no-undefined, so a file it needs and lacks fails
# the link. Its dependencies are zstd and jansson (the manifest is JSON):
# tests/cli/reader_lib.sh fails on any other NEEDED entry.
READER_STORE_SRCS  := accounting block lmdb_check manifest_read shard_reader
READER_COMMON_SRCS := buf cudart error file_read layout options parse_num thread_create \
                      versions_reader
READER_SRCS := $(sort $(wildcard reader/*.c) $(READER_STORE_SRCS:%=store/%.c) \
                      $(READER_COMMON_SRCS:%=common/%.c))
READER_PKGS := libzstd jansson
READER_LIBS := $(shell pkg-config --libs $(READER_PKGS) 2>/dev/null) -lm
CLI_SRCS := $(sort $(wildcard cli/*.c))
TEST_SRCS := $(sort $(wildcard tests/test_*.c))
TEST_SUPPORT_SRCS := $(sort $(wildcard tests/support/*.c))

LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
READER_OBJS := $(READER_SRCS:%.c=$(BUILD)/obj/%.o)
CLI_OBJS := $(CLI_SRCS:%.c=$(BUILD)/obj/%.o)
TEST_SUPPORT_OBJS := $(TEST_SUPPORT_SRCS:%.c=$(BUILD)/obj/%.o)
TEST_BINS := $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)

# The release (PS_VERSION_STRING) and the soname's number (PS_ABI_VERSION,
# bumped on every incompatible ABI change: pairshard/common.h, "Versions
# and the ABI"). The installed file is libpairshard.so.ABI.VERSION.
VERSION := $(shell sed -n 's/^\#define PS_VERSION_STRING "\(.*\)"/\1/p' include/pairshard/common.h)
ABI     := $(shell sed -n 's/^\#define PS_ABI_VERSION \([0-9]*\)$$/\1/p' include/pairshard/common.h)
SONAME  := libpairshard.so.$(ABI)
READER_SONAME := libpairshard-reader.so.$(ABI)

STATIC_LIB := $(BUILD)/lib/libpairshard.a
SHARED_LIB := $(BUILD)/lib/libpairshard.so
READER_LIB := $(BUILD)/lib/libpairshard-reader.so
BIN        := $(BUILD)/bin/pairshard

# Keep objects make would see as intermediate (test support objects).
.SECONDARY:

.PHONY: all lib test check-asan check-tsan check-faults check-abi abi-baseline fuzz bench demo install uninstall clean help print-config
.DEFAULT_GOAL := all

all: $(STATIC_LIB) $(SHARED_LIB) $(READER_LIB) $(BIN)
lib: $(STATIC_LIB) $(SHARED_LIB) $(READER_LIB)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@[ "$(V)" != 0 ] || echo "  CC      $<"
	$(Q)$(CC) $(CPPFLAGS_ALL) $(CPPFLAGS) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

# The one test that includes the toolkit's header, where there is one.
ifeq ($(HAVE_CUDA),1)
$(BUILD)/obj/tests/test_cudart.o: CPPFLAGS += -DPS_TEST_CUDA_HEADERS=1 -isystem $(CUDA_HOME)/include
endif

$(BUILD)/obj/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	@[ "$(V)" != 0 ] || echo "  CC      $<"
	$(Q)$(CC) $(CPPFLAGS_ALL) $(CPPFLAGS) $(TEST_CFLAGS) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

$(STATIC_LIB): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	@[ "$(V)" != 0 ] || echo "  AR      $@"
	$(Q)rm -f $@
	$(Q)ar rcs $@ $^

$(SHARED_LIB): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	@[ "$(V)" != 0 ] || echo "  LD      $@"
	$(Q)$(CC) -shared -Wl,-soname,$(SONAME) \
	    $(LDFLAGS_ALL) -o $@ $^ $(LIBS_ALL)

# --as-needed: NEEDED lists only the libraries the objects call.
$(READER_LIB): $(READER_OBJS)
	@mkdir -p $(dir $@)
	@[ "$(V)" != 0 ] || echo "  LD      $@"
	$(Q)$(CC) -shared -Wl,-soname,$(READER_SONAME) -Wl,--no-undefined -Wl,--as-needed \
	    $(LDFLAGS_ALL) -o $@ $^ $(READER_LIBS)

$(BIN): $(CLI_OBJS) $(STATIC_LIB)
	@mkdir -p $(dir $@)
	@[ "$(V)" != 0 ] || echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $(CLI_OBJS) $(STATIC_LIB) $(LIBS_ALL)

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(TEST_SUPPORT_OBJS) $(STATIC_LIB)
	@mkdir -p $(dir $@)
	@[ "$(V)" != 0 ] || echo "  LD      $@"
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $< $(TEST_SUPPORT_OBJS) $(STATIC_LIB) $(TEST_LIBS) $(LIBS_ALL)

# The suite: every unit-test binary, every CLI script, the conformance test.
# Ends with "N passed, N failed, N skipped" and fails on any failure.
test: all $(TEST_BINS)
	@sh tests/run.sh $(BUILD)

check-asan:
	$(MAKE) BUILD=$(BUILD)/asan SANITIZE=1 test

# ThreadSanitizer: a separate build of everything, then the reader's tests,
# the checks' threaded sums, the dedupe's parts, the ordered ring (test_ring)
# and one preprocessor shared by threads.
check-tsan:
	$(MAKE) BUILD=$(BUILD)/tsan SANITIZE=thread all \
	    $(patsubst tests/%.c,$(BUILD)/tsan/tests/%,$(wildcard tests/test_reader_*.c) \
	                                                tests/test_validate_threads.c \
	                                                tests/test_dedupe_parts.c \
	                                                tests/test_ring.c \
	                                                tests/test_preprocess_threads.c)
	@sh tests/tsan/run.sh $(BUILD)/tsan

check-faults: all
	@sh tests/faults/run.sh $(BUILD)

# The exported ABIs against the committed baselines (scripts/check-abi.sh,
# which installs abigail-tools when missing); fails on an incompatible
# change unless PS_ABI_VERSION was bumped. abi-baseline rewrites them: run
# it only for a deliberate change, and commit abi/*.abi.
ABI_BASELINE := abi/libpairshard.abi
READER_ABI_BASELINE := abi/libpairshard-reader.abi
check-abi: $(SHARED_LIB) $(READER_LIB)
	@sh scripts/check-abi.sh check $(SHARED_LIB) $(ABI_BASELINE)
	@sh scripts/check-abi.sh check $(READER_LIB) $(READER_ABI_BASELINE)

abi-baseline: $(SHARED_LIB) $(READER_LIB)
	@sh scripts/check-abi.sh baseline $(SHARED_LIB) $(ABI_BASELINE)
	@sh scripts/check-abi.sh baseline $(READER_LIB) $(READER_ABI_BASELINE)

# libFuzzer (clang) targets, built with ASan + UBSan into $(BUILD)/fuzz and
# run for FUZZ_SECONDS each (default 20).
fuzz:
	@sh tests/fuzz/run.sh $(BUILD)/fuzz

bench: all
	@sh bench/run.sh $(BUILD)

demo: all
	@sh scripts/demo.sh $(BUILD)

print-config:
	@echo "CC=$(CC) HAVE_CUDA=$(HAVE_CUDA) CUDA_HOME=$(CUDA_HOME) (headers: tests only)"
	@echo "PKG_LIBS=$(PKG_LIBS)"
	@echo "READER_LIBS=$(READER_LIBS)"

# pairshard.pc: Cflags is -I alone (the public headers include only the C
# library's stddef.h and stdint.h, and need no -D); the dependencies go into
# Libs.private as the flags pkg-config gave this build, not Requires.private,
# whose Cflags (utf8proc's -DUTF8PROC_EXPORTS) pkg-config would hand every
# user. pairshard-reader.pc: the reader library alone, for trainers (it is
# only shared, so it has no Libs.private).
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include/pairshard
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/pairshard
	install -m 644 $(STATIC_LIB) $(DESTDIR)$(PREFIX)/lib/libpairshard.a
	install -m 755 $(SHARED_LIB) $(DESTDIR)$(PREFIX)/lib/$(SONAME).$(VERSION)
	ln -sf $(SONAME).$(VERSION) $(DESTDIR)$(PREFIX)/lib/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(PREFIX)/lib/libpairshard.so
	install -m 755 $(READER_LIB) $(DESTDIR)$(PREFIX)/lib/$(READER_SONAME).$(VERSION)
	ln -sf $(READER_SONAME).$(VERSION) $(DESTDIR)$(PREFIX)/lib/$(READER_SONAME)
	ln -sf $(READER_SONAME) $(DESTDIR)$(PREFIX)/lib/libpairshard-reader.so
	install -m 644 include/pairshard/*.h $(DESTDIR)$(PREFIX)/include/pairshard/
	sed -e 's|@PREFIX@|$(PREFIX)|g' \
	    -e 's|@VERSION@|$(VERSION)|g' \
	    -e 's|@LIBS_PRIVATE@|$(PKG_LIBS)|g' \
	    pairshard.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/pairshard.pc
	sed -e 's|@PREFIX@|$(PREFIX)|g' \
	    -e 's|@VERSION@|$(VERSION)|g' \
	    pairshard-reader.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/pairshard-reader.pc

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/pairshard $(DESTDIR)$(PREFIX)/lib/libpairshard.a \
	      $(DESTDIR)$(PREFIX)/lib/libpairshard.so $(DESTDIR)$(PREFIX)/lib/$(SONAME) \
	      $(DESTDIR)$(PREFIX)/lib/$(SONAME).$(VERSION) $(DESTDIR)$(PREFIX)/lib/pkgconfig/pairshard.pc \
	      $(DESTDIR)$(PREFIX)/lib/libpairshard-reader.so $(DESTDIR)$(PREFIX)/lib/$(READER_SONAME) \
	      $(DESTDIR)$(PREFIX)/lib/$(READER_SONAME).$(VERSION) \
	      $(DESTDIR)$(PREFIX)/lib/pkgconfig/pairshard-reader.pc
	rm -rf $(DESTDIR)$(PREFIX)/include/pairshard

clean:
	rm -rf $(BUILD)

help:
	@sed -n '2,16p' Makefile

-include $(LIB_OBJS:.o=.d) $(BUILD)/obj/common/versions_reader.d $(CLI_OBJS:.o=.d) $(TEST_SUPPORT_OBJS:.o=.d) \
         $(TEST_BINS:$(BUILD)/tests/%=$(BUILD)/obj/tests/%.d)

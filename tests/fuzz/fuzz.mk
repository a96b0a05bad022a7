# Builds the libFuzzer targets (run by tests/fuzz/run.sh; `make fuzz`).
#   make -f tests/fuzz/fuzz.mk FB=build/fuzz TARGETS="fuzz_block ..." -j2
# The library sources are those of the Makefile's LIB_SRCS, compiled with
# clang, the coverage hooks libFuzzer needs, ASan and UBSan; the CLI is
# linked from the same objects (for building the seed corpora).

FB      ?= build/fuzz
CLANG   ?= clang-14
PKGS    := lmdb libzstd libutf8proc jansson libpcre2-8 libxxhash zlib nettle sqlite3
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
PKG_LIBS   := $(shell pkg-config --libs $(PKGS)) -lm
SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined
CPPFLAGS_F := -Iinclude -I. -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(PKG_CFLAGS)
CFLAGS_F   := -std=c11 -O1 -g -fno-omit-frame-pointer -pthread -Wall -Wextra \
              -Wno-unused-command-line-argument $(SAN)
LIB_DIRS ?= common schema ingest tokenize validate report store pipeline reader
LIB_SRCS := $(sort $(wildcard $(LIB_DIRS:%=%/*.c)))
CLI_SRCS := $(sort $(wildcard cli/*.c))
LIB_OBJS := $(LIB_SRCS:%.c=$(FB)/obj/%.o)
CLI_OBJS := $(CLI_SRCS:%.c=$(FB)/obj/%.o)

# The reader's state target only once reader/ implements the check; the
# state seeds only once it implements ps_reader_open.
HAVE_STATE  ?= $(if $(shell grep -l '^int ps_reader_state_check' reader/*.c 2>/dev/null),1,0)
HAVE_READER ?= $(if $(shell grep -l '^int ps_reader_open' reader/*.c 2>/dev/null),1,0)

FORMATS := jsonl json csv tsv
TARGETS ?= $(FORMATS:%=fuzz_clean_%) fuzz_vocab fuzz_tokenizer_json fuzz_encode fuzz_charsmap fuzz_normalizers fuzz_tok_parts fuzz_tok_model \
           fuzz_block fuzz_block_content fuzz_manifest fuzz_lmdb fuzz_schema_tables fuzz_sql_hardness \
           $(if $(filter 1,$(HAVE_STATE)),fuzz_reader_state) \
           $(if $(filter 1,$(HAVE_READER)),fuzz_reader_open)

.PHONY: all targets seedbins print-targets
all: targets seedbins
targets: $(TARGETS:%=$(FB)/bin/%)
seedbins: $(FB)/bin/pairshard $(FB)/bin/seeds
print-targets:
	@echo $(TARGETS)

$(FB)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CLANG) $(CPPFLAGS_F) $(CFLAGS_F) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(FB)/lib/libpairshard-fuzz.a: $(LIB_OBJS)
	@mkdir -p $(dir $@)
	@rm -f $@
	@ar rcs $@ $^

FUZZ_HDRS := tests/fuzz/fuzz_util.h tests/fuzz/fuzz_tok_check.h

# fuzz_clean_<format>: one source, the format fixed at compile time.
$(FB)/bin/fuzz_clean_%: tests/fuzz/fuzz_clean.c $(FUZZ_HDRS) $(FB)/lib/libpairshard-fuzz.a
	@mkdir -p $(dir $@)
	@echo "  FUZZ    $@"
	@$(CLANG) $(CPPFLAGS_F) $(CFLAGS_F) -fsanitize=fuzzer -DFUZZ_FORMAT=$(shell echo $* | tr a-z A-Z) \
	    -o $@ $< $(FB)/lib/libpairshard-fuzz.a $(PKG_LIBS)

$(FB)/bin/fuzz_block_content: tests/fuzz/fuzz_block.c $(FUZZ_HDRS) $(FB)/lib/libpairshard-fuzz.a
	@mkdir -p $(dir $@)
	@echo "  FUZZ    $@"
	@$(CLANG) $(CPPFLAGS_F) $(CFLAGS_F) -fsanitize=fuzzer -DFUZZ_BLOCK_CONTENT \
	    -o $@ $< $(FB)/lib/libpairshard-fuzz.a $(PKG_LIBS)

$(FB)/bin/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_HDRS) $(FB)/lib/libpairshard-fuzz.a
	@mkdir -p $(dir $@)
	@echo "  FUZZ    $@"
	@$(CLANG) $(CPPFLAGS_F) $(CFLAGS_F) -fsanitize=fuzzer -o $@ $< $(FB)/lib/libpairshard-fuzz.a $(PKG_LIBS)

$(FB)/bin/pairshard: $(CLI_OBJS) $(FB)/lib/libpairshard-fuzz.a
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CLANG) $(CFLAGS_F) -fsanitize=fuzzer-no-link -o $@ $(CLI_OBJS) $(FB)/lib/libpairshard-fuzz.a $(PKG_LIBS)

$(FB)/bin/seeds: tests/fuzz/seeds.c $(FB)/lib/libpairshard-fuzz.a
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CLANG) $(CPPFLAGS_F) $(CFLAGS_F) -fsanitize=fuzzer-no-link -DFUZZ_HAVE_READER=$(HAVE_READER) \
	    -o $@ $< $(FB)/lib/libpairshard-fuzz.a $(PKG_LIBS)

-include $(LIB_OBJS:.o=.d) $(CLI_OBJS:.o=.d)

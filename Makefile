# luagpu: build, test, demo and install.
#   make demo     install missing packages, build, run the tour
#   make test     install missing packages, build, run every spec
#   make          build/luagpu.so (the module) and build/luagpu (the program)
#   make asan     build with -fsanitize=address,undefined and run the specs
#   make fuzz     the fuzzer under the sanitizers (CALLS=20000 SEED=)
#   make fuzz-numpy  random tensor programs checked against NumPy (N=2000 SEED=
#                 FAMILIES=; spec/differential/, docs/ARCHITECTURE.md)
#   make valgrind valgrind memcheck over a subset of specs and programs
#   make install  PREFIX=/usr/local DESTDIR=  (also luagpu.pc, the man page and
#                 the Jupyter kernelspec)
#   make kernelspec  the Jupyter kernel for this build, in ~/.local/share/jupyter
#                 (KERNELSPEC_DIR=)

PREFIX  ?= /usr/local
DESTDIR ?=
LUAV    := 5.4
CC      ?= cc

# Debian packages the build and the demo need (libpng-dev: gpu.show's PNG),
# and what the specs need besides (groff-base checks the man page; the
# REPL's specs drive it with bsdutils' script, always there; Open MPI:
# luagpu.mpi; luarocks: spec/install_spec.lua installs the rock; the Jupyter
# packages: the notebook kernel and its spec). make demo installs PKGS,
# make test both.
PKGS := gcc make pkg-config lua5.4 liblua5.4-dev ocl-icd-opencl-dev opencl-headers \
        pocl-opencl-icd libreadline-dev libncurses-dev libpng-dev
TEST_PKGS := lua-busted python3-numpy libopenmpi-dev openmpi-bin groff-base luarocks \
        python3-ipykernel jupyter-client jupyter-nbconvert
# Only for benchmarks.
BENCH_PKGS := libclblast-dev

PKG_CONFIG ?= pkg-config
LUA_CFLAGS := $(shell $(PKG_CONFIG) --cflags lua$(LUAV) 2>/dev/null || echo -I/usr/include/lua$(LUAV))
CL_LIBS    := $(shell $(PKG_CONFIG) --libs OpenCL 2>/dev/null || echo -lOpenCL)
PNG_CFLAGS := $(shell $(PKG_CONFIG) --cflags libpng 2>/dev/null)
PNG_LIBS   := $(shell $(PKG_CONFIG) --libs libpng 2>/dev/null || echo -lpng16)
LUA_STATIC := $(firstword $(wildcard /usr/lib/*/liblua$(LUAV).a /usr/lib/liblua$(LUAV).a /usr/local/lib/liblua$(LUAV).a))
LUA_LIBS   := $(shell $(PKG_CONFIG) --libs lua$(LUAV) 2>/dev/null || echo -llua$(LUAV))
RL_STATIC  := $(firstword $(wildcard /usr/lib/*/libreadline.a))
TI_STATIC  := $(firstword $(wildcard /usr/lib/*/libtinfo.a /usr/lib/*/libncurses.a))

WARN    := -Wall -Wextra -Wshadow -Wmissing-prototypes -Wstrict-prototypes
OPT     ?= -O2 -g
CFLAGS  ?= $(OPT)
ALL_CFLAGS := -std=c99 -D_POSIX_C_SOURCE=200809L $(WARN) $(CFLAGS) -fPIC -fvisibility=hidden \
              -Ihost -Ibuild $(LUA_CFLAGS) $(PNG_CFLAGS)

BUILD   ?= build
VERSION := $(shell sed -n 's/^\#define LG_VERSION "\(.*\)"/\1/p' host/internal.h)
MODULE_SRC := errors state class types info context root sha256 includes capture module device queue sync array npy event userevent buffer pinned transfer rect map partition image image_transfer trace debug query binary program kernel call cache embed png savefile
MODULE_OBJ := $(MODULE_SRC:%=$(BUILD)/%.o) $(BUILD)/kernels.o $(BUILD)/helpers.o
KERNELS := $(sort $(wildcard kernels/*.cl))
HELPERS := $(sort $(wildcard lua/luagpu/*.lua lua/luagpu/*/*.lua))
# install-helpers DIR: every helper into DIR/luagpu/, keeping its folder
install-helpers = for f in $(HELPERS); do install -D -m 644 $$f $(1)/$${f\#lua/}; done

# luagpu.mpi's C half, a module of its own linked with Open MPI, built
# where mpicc is found (lua/luagpu/mpi.lua is the half scripts require).
MPI_CFLAGS := $(shell mpicc --showme:compile 2>/dev/null)
MPI_LIBS   := $(shell mpicc --showme:link 2>/dev/null)
MPI_MODULE := $(if $(MPI_LIBS),$(BUILD)/luagpu_mpi.so)

ifneq ($(RL_STATIC),)
READLINE_LIBS := $(RL_STATIC) $(TI_STATIC)
READLINE_DEF  := -DLUAGPU_READLINE
endif

.PHONY: FORCE kernelspec all mpi deps deps-test deps-bench deps-valgrind demo test asan asan-build fuzz fuzz-numpy valgrind install install-rock clean bench

all: $(BUILD)/luagpu.so $(BUILD)/luagpu $(BUILD)/embed_demo $(BUILD)/embed_check $(MPI_MODULE)

$(BUILD):
	@mkdir -p $(BUILD)

$(BUILD)/%.o: host/%.c host/internal.h host/luagpu.h | $(BUILD)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

# Kernel sources and the pure-Lua helpers are embedded into the module, so
# build/luagpu (or luagpu.so) alone finds them when no checkout or install is
# near; the program's own Lua (the REPL's printer, --devices) into the program.
# A list file per set, rewritten only when the set changes, so that a file
# removed from kernels/ or lua/ leaves the embedded set too.
$(BUILD)/kernels.list: FORCE | $(BUILD)
	@echo '$(KERNELS)' | cmp -s - $@ || echo '$(KERNELS)' > $@
$(BUILD)/helpers.list: FORCE | $(BUILD)
	@echo '$(HELPERS)' | cmp -s - $@ || echo '$(HELPERS)' > $@
FORCE:

$(BUILD)/kernels.c: $(KERNELS) $(BUILD)/kernels.list tools/embed.sh | $(BUILD)
	sh tools/embed.sh lg_embedded_kernels kernels $(KERNELS) > $@

$(BUILD)/helpers.c: $(HELPERS) $(BUILD)/helpers.list tools/embed.sh | $(BUILD)
	sh tools/embed.sh lg_embedded_helpers lua $(HELPERS) > $@

MAIN_LUA := host/main.lua host/doctor.lua host/help.lua
$(BUILD)/main_lua.c: $(MAIN_LUA) tools/embed.sh | $(BUILD)
	sh tools/embed.sh lg_embedded_main host $(MAIN_LUA) > $@

$(BUILD)/kernels.o $(BUILD)/helpers.o $(BUILD)/main_lua.o: $(BUILD)/%.o: $(BUILD)/%.c host/internal.h
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/luagpu.so: $(MODULE_OBJ)
	$(CC) -shared $(CFLAGS) $(LDFLAGS) -o $@ $(MODULE_OBJ) $(CL_LIBS) $(PNG_LIBS)

# The program links Lua (and readline) statically, so build/luagpu runs on a
# machine without them, and exports Lua's API for C modules it requires.
# The program's own C files besides main.c: probe.c (what --doctor asks the
# system), lineedit.c (readline, when linked).
PROG_OBJ := $(BUILD)/main.o $(BUILD)/lineedit.o $(BUILD)/probe.o $(BUILD)/main_lua.o

$(BUILD)/main.o: host/main.c host/lineedit.h host/probe.h host/internal.h host/luagpu.h | $(BUILD)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/lineedit.o: host/lineedit.c host/lineedit.h | $(BUILD)
	$(CC) $(ALL_CFLAGS) $(READLINE_DEF) -c $< -o $@

$(BUILD)/probe.o: host/probe.c host/probe.h host/internal.h | $(BUILD)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/luagpu: $(PROG_OBJ) $(MODULE_OBJ)
	$(CC) $(CFLAGS) $(LDFLAGS) -Wl,-E -o $@ $(PROG_OBJ) $(MODULE_OBJ) \
	    $(if $(LUA_STATIC),$(LUA_STATIC),-llua$(LUAV)) $(READLINE_LIBS) $(CL_LIBS) $(PNG_LIBS) -lm -ldl

# luagpu.mpi's C half (MPI_MODULE, above).

$(BUILD)/luagpu_mpi.so: host/mpi.c host/luagpu.h | $(BUILD)
	$(CC) -std=c99 $(WARN) $(CFLAGS) -fPIC -shared $(MPI_CFLAGS) -Ihost $(LUA_CFLAGS) \
	    $(LDFLAGS) -o $@ $< $(MPI_LIBS) -ldl

mpi: $(BUILD)/luagpu_mpi.so

# The embedding example and its checks: C programs that link the module as
# a library, found beside them at run time.
EMBED_LINK = $(LDFLAGS) -L$(BUILD) -l:luagpu.so -Wl,-rpath,'$$ORIGIN' $(LUA_LIBS) $(CL_LIBS) -lm

$(BUILD)/embed_demo: examples/embed/embed_demo.c host/luagpu.h $(BUILD)/luagpu.so
	$(CC) -std=c99 $(WARN) $(CFLAGS) -Ihost $(LUA_CFLAGS) -o $@ $< $(EMBED_LINK)

$(BUILD)/embed_check: spec/embed_check.c host/luagpu.h $(BUILD)/luagpu.so
	$(CC) -std=c99 -D_POSIX_C_SOURCE=200809L $(WARN) $(CFLAGS) -Ihost $(LUA_CFLAGS) -o $@ $< $(EMBED_LINK)

deps:
	@sh tools/deps.sh $(PKGS)

deps-test:
	@sh tools/deps.sh $(PKGS) $(TEST_PKGS)

deps-bench:
	@sh tools/deps.sh $(BENCH_PKGS)

deps-valgrind:
	@sh tools/deps.sh valgrind

demo: deps
	@$(MAKE) --no-print-directory all
	$(BUILD)/luagpu examples/tour.lua

test: deps-test
	@$(MAKE) --no-print-directory all
	@sh spec/run.sh $(BUILD)

asan: asan-build
	@ASAN=1 sh spec/run.sh build/asan

asan-build: deps-test
	@$(MAKE) --no-print-directory BUILD=build/asan \
	    OPT="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	    LDFLAGS="-fsanitize=address,undefined" all

# The fuzzer (bench/fuzz.lua) under the sanitizers: make fuzz [CALLS=20000] [SEED=n]
CALLS ?= 20000
SEED  ?=
fuzz: asan-build
	ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:allocator_may_return_null=1" \
	UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
	    build/asan/luagpu bench/fuzz.lua $(CALLS) $(SEED)

# The differential test of tensors against NumPy, longer than the fixed run
# of spec/differential_spec.lua: make fuzz-numpy [N=2000] [SEED=n] [FAMILIES=]
# [EXTRA=1] [OPS=] (FAMILIES: kernel families, default N/6; each costs a few
# PoCL builds; EXTRA=0: without the ops of issue 32, the programs a seed drew
# before them; OPS=only: every family one of issue 32's indexing, joining
# and statistics ops, OPS=0: none, OPS=paths: every family one of the ways
# topk, the one-sweep sort and softmax take by size, default: every other
# family, half of them such a way).
N ?= 2000
FAMILIES ?=
EXTRA ?= 1
OPS ?=
PYTHON_NUMPY = $(firstword $(foreach p,python3 /usr/bin/python3,$(shell $(p) -c 'import numpy' 2>/dev/null && echo $(p))))
fuzz-numpy: all
	@seed=$(SEED); seed=$${seed:-$$(date +%s)}; out=$(BUILD)/differential-$$seed.jsonl; \
	DIFFERENTIAL_EXTRA=$(EXTRA) DIFFERENTIAL_OPS=$(OPS) $(BUILD)/luagpu spec/differential/run.lua $(N) $$seed $$out $(FAMILIES) && \
	$(or $(PYTHON_NUMPY),python3) spec/differential/check.py $$out

# valgrind memcheck over a representative subset (slow: not part of CI);
# tools/valgrind.supp says why each suppressed report is not ours.
valgrind: deps-test deps-valgrind
	@$(MAKE) --no-print-directory all
	@sh tools/valgrind.sh $(BUILD)

bench: deps deps-bench all
	$(BUILD)/luagpu bench/transfer.lua

# Baselines for the benchmarks: small C programs over vendor libraries.
$(BUILD)/bench_clblast_sgemm: bench/c/clblast_sgemm.c | $(BUILD)
	$(CC) -std=c99 $(WARN) $(OPT) -o $@ $< -lclblast $(CL_LIBS)

$(BUILD)/bench_launch: bench/c/launch.c bench/c/common.h | $(BUILD)
	$(CC) -std=c99 -D_POSIX_C_SOURCE=200809L $(WARN) $(OPT) -o $@ $< $(CL_LIBS)

$(BUILD)/bench_transfer: bench/c/transfer.c bench/c/common.h | $(BUILD)
	$(CC) -std=c99 -D_POSIX_C_SOURCE=200809L $(WARN) $(OPT) -o $@ $< $(CL_LIBS)

$(BUILD)/bench_image: bench/c/image.c bench/c/common.h | $(BUILD)
	$(CC) -std=c99 -D_POSIX_C_SOURCE=200809L $(WARN) $(OPT) -o $@ $< $(CL_LIBS)

$(BUILD)/bench_twogpu: bench/c/twogpu.c | $(BUILD)
	$(CC) -std=c99 $(WARN) $(OPT) -o $@ $< $(CL_LIBS)

# The Jupyter kernelspec (packaging/jupyter): install-kernelspec DIR PROGRAM
# writes DIR/kernel.json, which runs the wrapper kernel beside it with a
# Python that has ipykernel, and the wrapper runs PROGRAM (the luagpu program).
JUPYTER_PYTHON := $(firstword $(foreach p,python3 /usr/bin/python3,$(shell $(p) -c 'import ipykernel, sys; print(sys.executable)' 2>/dev/null)))
install-kernelspec = install -d $(1) && \
	install -m 644 packaging/jupyter/luagpu_kernel.py $(1)/luagpu_kernel.py && \
	sed -e 's|@PYTHON@|$(or $(JUPYTER_PYTHON),/usr/bin/python3)|' -e "s|@LUAGPU@|$(2)|" \
	    packaging/jupyter/kernel.json.in > $(1)/kernel.json

# The kernelspec for this checkout's build/luagpu, where Jupyter looks for
# the user's kernels (KERNELSPEC_DIR=DIR: another folder, e.g. one on JUPYTER_PATH).
KERNELSPEC_DIR ?= $(HOME)/.local/share/jupyter/kernels/luagpu
kernelspec: all
	$(call install-kernelspec,$(KERNELSPEC_DIR),$(abspath $(BUILD))/luagpu)

install: all
	install -d $(DESTDIR)$(PREFIX)/lib/lua/$(LUAV) $(DESTDIR)$(PREFIX)/share/lua/$(LUAV)/luagpu \
	    $(DESTDIR)$(PREFIX)/share/luagpu/kernels $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include
	install -m 755 $(BUILD)/luagpu.so $(DESTDIR)$(PREFIX)/lib/lua/$(LUAV)/luagpu.so
	$(call install-helpers,$(DESTDIR)$(PREFIX)/share/lua/$(LUAV))
	$(if $(KERNELS),install -m 644 $(KERNELS) $(DESTDIR)$(PREFIX)/share/luagpu/kernels/)
	install -m 755 $(BUILD)/luagpu $(DESTDIR)$(PREFIX)/bin/luagpu
	$(if $(MPI_MODULE),install -m 755 $(MPI_MODULE) $(DESTDIR)$(PREFIX)/lib/lua/$(LUAV)/)
	install -m 644 host/luagpu.h $(DESTDIR)$(PREFIX)/include/luagpu.h
	install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/share/man/man1
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LUAV@|$(LUAV)|g' -e 's|@VERSION@|$(VERSION)|' \
	    packaging/luagpu.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/luagpu.pc
	install -m 644 docs/luagpu.1 $(DESTDIR)$(PREFIX)/share/man/man1/luagpu.1
	$(call install-kernelspec,$(DESTDIR)$(PREFIX)/share/jupyter/kernels/luagpu,$(PREFIX)/bin/luagpu)

# What luarocks installs (packaging/luagpu-*.rockspec): the modules (luagpu,
# luagpu_mpi where built), the helpers and the program into the rock's
# folders, which luarocks links into its tree; the header, luagpu.pc, the
# man page, the kernels and the kernelspec into the rock's own folder
# (ROCK_PREFIX: `luarocks show --rock-dir luagpu`). The kernelspec runs the
# tree's bin/luagpu (luarocks' wrapper, which sets the tree's paths): the
# rock's folder is TREE/lib/luarocks/rocks-5.4/luagpu/VERSION.
ROCK_LIBDIR ?= $(PREFIX)/lib/lua/$(LUAV)
ROCK_LUADIR ?= $(PREFIX)/share/lua/$(LUAV)
ROCK_BINDIR ?= $(PREFIX)/bin
ROCK_PREFIX ?= $(PREFIX)
ROCK_TREE    = $(ROCK_PREFIX)/../../../../..
install-rock: all
	install -d $(ROCK_LIBDIR) $(ROCK_LUADIR)/luagpu $(ROCK_BINDIR)
	install -m 755 $(BUILD)/luagpu.so $(ROCK_LIBDIR)/luagpu.so
	$(if $(MPI_MODULE),install -m 755 $(MPI_MODULE) $(ROCK_LIBDIR)/)
	$(call install-helpers,$(ROCK_LUADIR))
	install -m 755 $(BUILD)/luagpu $(ROCK_BINDIR)/luagpu
	install -d $(ROCK_PREFIX)/include $(ROCK_PREFIX)/share/luagpu/kernels \
	    $(ROCK_PREFIX)/share/pkgconfig $(ROCK_PREFIX)/share/man/man1
	install -m 644 host/luagpu.h $(ROCK_PREFIX)/include/luagpu.h
	$(if $(KERNELS),install -m 644 $(KERNELS) $(ROCK_PREFIX)/share/luagpu/kernels/)
	install -m 644 docs/luagpu.1 $(ROCK_PREFIX)/share/man/man1/luagpu.1
	sed -e 's|@PREFIX@|$(ROCK_PREFIX)|' -e 's|@LUAV@|$(LUAV)|g' -e 's|@VERSION@|$(VERSION)|' \
	    -e "s|^libdir=.*|libdir=$$(realpath -m $(ROCK_TREE))/lib/lua/$(LUAV)|" packaging/luagpu.pc.in > $(ROCK_PREFIX)/share/pkgconfig/luagpu.pc
	$(call install-kernelspec,$(ROCK_PREFIX)/share/jupyter/kernels/luagpu,$$(realpath -m $(ROCK_TREE))/bin/luagpu)

clean:
	rm -rf build

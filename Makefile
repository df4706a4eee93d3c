# dxpriv: PGXS build of the extension; CMake builds the PostgreSQL-free core and its unit tests.
#   make demo   set up, start a throwaway cluster, load demo data, show d_X-private answers
#   make test   everything CI runs (unit tests, pg_regress, end-to-end)
#   make test-citus  the Citus end-to-end tests (builds Citus 13.2.2 from ../shared/vendor when missing)
#   make test-upgrade  ALTER EXTENSION UPDATE from 0.1.0 (built from its git tag) and pg_dump/restore
#   make doc-test  every SQL example of README.md and doc/*.md, output checked; reference completeness
#   make deb    the Debian package postgresql-15-dxpriv_$(EXTVERSION)_amd64.deb (debhelper, pg_buildext)

EXTVERSION = 0.2.0
MODULE_big = dxpriv
MODULEDIR = extension
OBJS = $(patsubst %.cpp,%.o,$(sort $(wildcard src/pg/*.cpp src/pg/*/*.cpp)))
DATA = extension/dxpriv.control $(wildcard sql/upgrade/dxpriv--*--*.sql)
DATA_built = sql/dxpriv--$(EXTVERSION).sql
# the documentation (README.md's guides and reference)
DOCS = $(sort $(wildcard doc/*.md))
EXTRA_CLEAN = sql/dxpriv--$(EXTVERSION).sql $(BUILD_DIR)/unity

PG_CONFIG ?= pg_config
BUILD_DIR ?= build
CORE_LIB = $(BUILD_DIR)/core/libdxpriv_core.a
# parallel compilation: one job per processor (the targets below pass it to the sub-makes and cmake)
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# ccache (Debian's, installed by make deps) when present: rebuilds of unchanged files are cache hits.
# CCACHE= on the command line disables it (debian/rules does).
CCACHE ?= $(shell command -v ccache 2>/dev/null)
# the unit tests use a precompiled header (CMakeLists.txt): ccache caches such objects only with this
export CCACHE_SLOPPINESS = pch_defines,time_macros,include_file_mtime,include_file_ctime
# debug information: -g1 (line tables: backtraces and perf keep file:line) by default, because full
# -g makes the build about 40% slower; `make DXPRIV_DEBUG=-g` for gdb's variables (debian/rules does).
DXPRIV_DEBUG ?= -g1

# UNITY=1 (what `make demo` uses): a unity (jumbo) build. src/pg is compiled as UNITY_BATCHES
# translation units (build/unity/pg_N.cpp, each #including a share of the sources; one per
# processor) and the core library likewise (CMake UNITY_BUILD): the PostgreSQL, Eigen, Boost and
# standard headers are parsed once per batch instead of once per file, which halves the CPU time of
# a fresh build (doc/development.md). For development keep the default UNITY=0: one object per
# source, so that an edit recompiles one file. test/check_unity_names.sh (run first) refuses
# file-local names that would clash when the sources are concatenated.
UNITY ?= 0
UNITY_BATCHES ?= $(JOBS)
UNITY_DIR = $(BUILD_DIR)/unity
ifeq ($(UNITY),1)
# (the check needs python3, which `make deps-build` does not install: skipped without it; CI runs it)
unity_ready := $(shell ! command -v python3 >/dev/null || ./test/check_unity_names.sh >/dev/null || \
	{ ./test/check_unity_names.sh >&2; exit 1; }; ./scripts/unity-sources.sh $(UNITY_DIR) $(UNITY_BATCHES) && echo yes)
ifneq ($(unity_ready),yes)
$(error unity build: file-local names clash (test/check_unity_names.sh) or build/unity could not be written)
endif
OBJS = $(patsubst %,$(UNITY_DIR)/pg_%.o,$(shell seq 1 $(UNITY_BATCHES)))
-include $(UNITY_DIR)/unity.mk
# a type of one file's anonymous namespace used by a struct of another is fine within one batch
override PG_CXXFLAGS += -Wno-subobject-linkage
CMAKE_UNITY = -DDXPRIV_UNITY=ON -DDXPRIV_UNITY_BATCHES=$(UNITY_BATCHES)
else
CMAKE_UNITY = -DDXPRIV_UNITY=OFF
endif
# dxpriv.so is relinked when the build switches between the unity and the per-file objects
BUILD_MODE = $(BUILD_DIR)/build-mode
build_mode := $(shell mkdir -p $(BUILD_DIR) && { echo "UNITY=$(UNITY)" | cmp -s - $(BUILD_MODE) || echo "UNITY=$(UNITY)" > $(BUILD_MODE); })

PG_CPPFLAGS = -Isrc -isystem $(shell $(PG_CONFIG) --includedir-server 2>/dev/null) -isystem /usr/include/eigen3
override PG_CXXFLAGS += -std=c++17 -Wno-register -Wno-cast-function-type -fno-fast-math
SHLIB_LINK += $(CORE_LIB) -lstdc++ -Wl,--exclude-libs,ALL

PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)
# Without PostgreSQL's build files (a fresh machine), only the targets that install them first work:
# they run the build in a sub-make once the packages are there.
INSTALLING_GOALS = deps deps-build demo test test-citus bench deb test-deb
ifeq ($(PGXS),)
ifneq ($(filter-out $(INSTALLING_GOALS),$(or $(MAKECMDGOALS),all)),)
$(error pg_config not found: run 'make deps' (installs postgresql-server-dev-15) first)
endif
else
# Debian's server is built with LLVM; we ship no bitcode (must precede the include).
override with_llvm = no
include $(PGXS)
endif
# DOCS go to $(docdir)/extension/dxpriv/ (PGXS would put them straight into the shared
# extension/ directory, where names such as reference.md would clash with other extensions').
docmoduledir := extension/dxpriv
ifneq ($(CCACHE),)
override CXX := $(CCACHE) $(CXX)
endif
override CXXFLAGS := $(filter-out -g,$(CXXFLAGS)) $(DXPRIV_DEBUG)
uninstall: uninstall-docs
uninstall-docs:
	rm -f $(addprefix '$(DESTDIR)$(docdir)/$(docmoduledir)'/, $(notdir $(DOCS)))

sql/dxpriv--$(EXTVERSION).sql: $(sort $(wildcard sql/[0-9]*.sql))
	cat $^ > $@

$(OBJS): $(wildcard src/pg/*.h src/pg/*/*.h) $(wildcard src/core/*.h)
# the core library first (cmake uses all processors), then the extension's objects (make -j); the
# unity build compiles its few batches of both at once (no batch waits for the other library's)
ifneq ($(UNITY),1)
$(OBJS): | $(CORE_LIB)
endif
$(shlib): $(CORE_LIB) $(BUILD_MODE)

.PHONY: core core-tests $(CORE_LIB)
# the extension needs only the core library; the unit tests are built by `make unit` (and `make test`)
# CMAKE_ARGS: extra cmake options (debian/rules: -DDXPRIV_BUILD_TESTS=OFF, no GoogleTest needed)
CMAKE_CONFIGURE = cmake -S . -B $(BUILD_DIR)/core -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 $(DXPRIV_DEBUG) -DNDEBUG" \
	-DCMAKE_CXX_COMPILER_LAUNCHER=$(CCACHE) $(CMAKE_UNITY) $(CMAKE_ARGS) >/dev/null
# Under `make -jN` the core's compilations share make's job slots (the jobserver; `+` passes it to
# cmake's make), so that the unity build runs core and extension batches side by side without
# oversubscribing; a plain `make core` gives cmake -j$(JOBS).
CMAKE_JOBS = $(if $(findstring jobserver,$(MAKEFLAGS)),,-j$(JOBS))
core $(CORE_LIB):
	$(CMAKE_CONFIGURE)
	+cmake --build $(BUILD_DIR)/core $(CMAKE_JOBS) --target dxpriv_core

core-tests:
	$(CMAKE_CONFIGURE)
	cmake --build $(BUILD_DIR)/core -j$(JOBS)

.PHONY: deps deps-build unit regress e2e test test-citus test-upgrade doc-test demo bench deb test-deb
deps:
	./scripts/install-deps.sh

# what building the extension and the demo need (no test clients)
deps-build:
	./scripts/install-deps.sh --build

unit: core-tests
	cd $(BUILD_DIR)/core && ctest --output-on-failure --no-tests=error

regress: all
	./test/check_sealed_paths.sh
	./test/check_layers.sh
	./test/check_unity_names.sh
	./test/check_guarded_calls.sh
	$(MAKE) install
	./scripts/run-regress.sh

e2e: all
	./scripts/run-e2e.sh

test: deps
	$(MAKE) -j$(JOBS) all
	$(MAKE) unit
	$(MAKE) regress
	$(MAKE) e2e
	$(MAKE) test-upgrade
	$(MAKE) doc-test
	./scripts/demo.sh >/dev/null  # the walk-through of make demo (fails when an expected answer or SQLSTATE drifts)

# every SQL example of README.md and doc/*.md, run against a throwaway cluster with the demo data
# and its output checked; then the reference's completeness (test/docs/, doc/development.md)
doc-test: all
	$(MAKE) install
	python3 test/docs/run_doc_examples.py

test-upgrade: all
	$(MAKE) install
	./scripts/test-upgrade.sh

# The package is built by Debian's tooling from a copy of the tree (debian/rules, pg_buildext);
# test-deb installs the package make deb built (apt), runs the demo on it, and removes it.
deb:
	./scripts/build-deb.sh

test-deb:
	./scripts/test-deb.sh

test-citus: deps
	$(MAKE) -j$(JOBS) all
	$(MAKE) install
	./scripts/run-citus.sh

# the demo builds with UNITY=1 (a fresh build in half the CPU time; doc/development.md)
demo: deps-build
	$(MAKE) UNITY=1 -j$(JOBS) all
	$(MAKE) UNITY=1 install
	./scripts/demo.sh

bench: deps
	$(MAKE) -j$(JOBS) all
	$(MAKE) install
	./scripts/run-bench.sh

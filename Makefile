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
EXTRA_CLEAN = sql/dxpriv--$(EXTVERSION).sql

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

PG_CPPFLAGS = -Isrc -isystem $(shell $(PG_CONFIG) --includedir-server) -isystem /usr/include/eigen3
override PG_CXXFLAGS += -std=c++17 -Wno-register -Wno-cast-function-type -fno-fast-math
SHLIB_LINK += $(CORE_LIB) -lstdc++ -Wl,--exclude-libs,ALL

PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)
ifeq ($(PGXS),)
$(error pg_config not found: run 'make deps' (installs postgresql-server-dev-15) first)
endif
# Debian's server is built with LLVM; we ship no bitcode (must precede the include).
override with_llvm = no
include $(PGXS)
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
# the core library first (cmake uses all processors), then the extension's objects (make -j)
$(OBJS): | $(CORE_LIB)
$(shlib): $(CORE_LIB)

.PHONY: core core-tests $(CORE_LIB)
# the extension needs only the core library; the unit tests are built by `make unit` (and `make test`)
# CMAKE_ARGS: extra cmake options (debian/rules: -DDXPRIV_BUILD_TESTS=OFF, no GoogleTest needed)
CMAKE_CONFIGURE = cmake -S . -B $(BUILD_DIR)/core -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 $(DXPRIV_DEBUG) -DNDEBUG" \
	-DCMAKE_CXX_COMPILER_LAUNCHER=$(CCACHE) $(CMAKE_ARGS) >/dev/null
core $(CORE_LIB):
	$(CMAKE_CONFIGURE)
	cmake --build $(BUILD_DIR)/core -j$(JOBS) --target dxpriv_core

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
	cd $(BUILD_DIR)/core && ctest --output-on-failure

regress: all
	./test/check_sealed_paths.sh
	./test/check_layers.sh
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

demo: deps-build
	$(MAKE) -j$(JOBS) all
	$(MAKE) install
	./scripts/demo.sh

bench: deps
	$(MAKE) -j$(JOBS) all
	$(MAKE) install
	./scripts/run-bench.sh

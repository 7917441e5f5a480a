# The two README commands: `make demo` and `make test`. Each installs what it
# needs (scripts/deps.sh: `demo` the packages to build and run the demo, the
# full set for the tests), configures, builds and runs.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
MINIMAL_BUILD ?= build-minimal
# The minimal build (README, "Build options"): the SQLite and memory stores
# only, no TLS, no systemd, the C library's malloc; `make test` runs its tests labelled "minimal"
# (unit tests, store conformance on both stores, e2e/test_build_options).
MINIMAL_OPTS = -DONCE_POSTGRES=OFF -DONCE_REDIS=OFF -DONCE_DYNAMODB=OFF -DONCE_TLS=OFF \
               -DONCE_SYSTEMD=OFF -DONCE_JEMALLOC=OFF -DONCE_TEST_LABELS=minimal

.PHONY: all deps deps-demo build build-demo build-asan build-tsan build-minimal docs test test-fast test-asan test-tsan test-minimal test-stress demo amplify soak bench clean

all: build

deps:
	@bash scripts/deps.sh

deps-demo:
	@bash scripts/deps.sh demo

# What the demo and the amplification experiment run (onced, once and three
# helpers; no test program), with one progress line (scripts/build.sh).
build-demo: deps-demo
	@JOBS=$(JOBS) bash scripts/build.sh $(BUILD) demo

# The option lists of man/onced.8, man/once.1 and README.md's configuration
# tables, written in place from onced's and once's option tables
# (apps/cli/*_opts.c) between their GENERATED markers.
docs: build-demo
	@python3 scripts/gendocs.py --build $(BUILD)

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

build-asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DONCE_ASAN=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)

build-tsan: deps
	@cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DONCE_TSAN=ON >/dev/null
	@cmake --build $(TSAN_BUILD) -j $(JOBS)

build-minimal: deps
	@cmake -S . -B $(MINIMAL_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(MINIMAL_OPTS) >/dev/null
	@cmake --build $(MINIMAL_BUILD) -j $(JOBS)

# The whole suite: the normal build, the same suite under ASan+UBSan, then the
# concurrency tests (ctest label "tsan": engine, store, HTTP, client) under
# ThreadSanitizer, then the minimal build's tests (label "minimal"). Timeouts
# scale by ONCE_TEST_TIMEOUT_FACTOR (1, 3 under ASan, 5 under TSan; set it
# in the environment to override).
test: build build-asan build-tsan build-minimal
	@bash scripts/run-tests.sh $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(MINIMAL_BUILD)

test-asan: build-asan
	@bash scripts/run-tests.sh $(ASAN_BUILD)

test-tsan: build-tsan
	@bash scripts/run-tests.sh $(TSAN_BUILD)

test-minimal: build-minimal
	@bash scripts/run-tests.sh $(MINIMAL_BUILD)

# The same suite as `make test` on a busy machine: three CPU-bound processes
# run beside it (scripts/stress.sh; they end with the run, however it ends).
# STRESS_BUILDS picks the builds, e.g. `make test-stress STRESS_BUILDS=build`.
STRESS_BUILDS ?= $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
test-stress: build build-asan build-tsan
	@bash scripts/stress.sh $(STRESS_BUILDS)

test-fast: build
	@bash scripts/run-tests.sh $(BUILD)

demo: build-demo
	@bash demo/run.sh $(BUILD)

# naive vs once on a 1 -> 2 -> 4 -> 8 delegation tree over lossy links;
# prints the table and writes demo/amplify-results.md. QUICK=1: one row per
# mode at p = 0.3 with 10 root tasks, table on stdout only. GATEWAY=1: the
# tree of plain @a2a-js/sdk agents, alone and each behind an onced gateway
# (demo/amplify-gateway-results.md; needs scripts/deps.sh for Node and the SDK).
amplify: build-demo
	@bash demo/amplify.sh $(BUILD) $(if $(QUICK),--quick) $(if $(GATEWAY),--gateway)

# The chaos soak (tests/soak/README.md): three replicas on PostgreSQL, then
# on Redis, killed and restarted under lossy links and killed clients, for
# SOAK_SECONDS each; prints the table and exits non-zero if a claim broke.
SOAK_SECONDS ?= 120
soak: build
	@python3 tests/soak/soak.py --build $(BUILD) --seconds $(SOAK_SECONDS) postgres redis
	@python3 tests/soak/soak.py --build $(BUILD) --seconds $(SOAK_SECONDS) --gateway postgres

# The benchmark pictures (bench/README.md, "Pictures"): throughput against
# connections (memory:, SQLite, the @a2a-js/sdk peer), the latency CDF at
# half the saturated rate, RSS against tasks; data, then bench/out/*.png
# (bench/pictures.sh, about 8 minutes). QUICK=1: fewer and shorter runs
# (about 3 minutes).
bench: deps
	@bash bench/pictures.sh $(if $(QUICK),--quick)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(MINIMAL_BUILD)

# The two README commands: `make demo` and `make test`. Each installs what it
# needs (scripts/deps.sh), configures, builds and runs.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BUILD ?= build
ASAN_BUILD ?= build-asan

.PHONY: all deps build build-asan test test-fast test-asan demo amplify bench clean

all: build

deps:
	@bash scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

build-asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DONCE_ASAN=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)

# The whole suite: the normal build, then the same suite under ASan+UBSan.
test: build build-asan
	@bash scripts/run-tests.sh $(BUILD) $(ASAN_BUILD)

test-fast: build
	@bash scripts/run-tests.sh $(BUILD)

demo: build
	@bash demo/run.sh $(BUILD)

# naive vs once on a 1 -> 2 -> 4 -> 8 delegation tree over lossy links;
# prints the table and writes demo/amplify-results.md.
amplify: build
	@bash demo/amplify.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)

# The two commands a fresh machine needs: `make bench` and `make test`.
# Both install any missing Debian packages first (scripts/install-deps.sh, idempotent).
BUILD      ?= build
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=
BENCH_ARGS ?=
# `make fuzz`: seconds per libFuzzer target, the clang that builds them, and their build dir.
FUZZ_SECONDS ?= 60
FUZZ_CXX     ?= clang++-19
FUZZ_BUILD   ?= build-fuzz

.PHONY: all deps configure build bench test test-asan test-tsan fuzz deb install clean

all: build

deps:
	@./scripts/install-deps.sh

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_ARGS)

configure: $(BUILD)/build.ninja

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The main job: the benchmark table (categories, backends, medians, ratio to raw fs). The
# default run is bounded by time (aiming at 3 minutes on a busy day; 2-2.5 here): a run of an
# arm that reaches the disk stops after 0.5 s if its count is not done, or at the entries its
# teardown removes in 0.5 s, and the table marks it.
# BENCH_ARGS=--full is the complete run (no time budget; about half an hour here), --quick the
# short one. Progress goes to stderr every few seconds, terminal or not (docs/BENCH.md).
bench: build
	./$(BUILD)/bench/packfs-bench $(BENCH_ARGS)

# Every test: the release build's suite, then the same suite under ASan+UBSan and TSan, then
# each fuzz target for 30 s (a target a core). Every build keeps line tables only (-g1): its
# reports name file and line, and it builds faster than with full debug info.
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	$(MAKE) test-asan test-tsan
	$(MAKE) fuzz FUZZ_SECONDS=30

test-asan: deps
	cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g1 -O1" -DPACKFS_SANITIZE=address,undefined -DPACKFS_BUILD_TOOLS=OFF $(CMAKE_ARGS)
	cmake --build build-asan -j $(JOBS)
	cd build-asan && PACKFS_SANITIZER_RUN=1 ctest --output-on-failure -j $(JOBS) -LE no-sanitizer

test-tsan: deps
	cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1" -DPACKFS_SANITIZE=thread -DPACKFS_BUILD_TOOLS=OFF $(CMAKE_ARGS)
	cmake --build build-tsan -j $(JOBS) --target tsan-tests
	cd build-tsan && PACKFS_SANITIZER_RUN=1 ctest --output-on-failure -j $(JOBS) -L tsan

# The libFuzzer targets in fuzz/ (pack reader, path normaliser): a separate clang build of the
# library and the targets only (fuzz/CMakeLists.txt), each run FUZZ_SECONDS by fuzz/run.sh.
fuzz: deps
	cmake -S fuzz -B $(FUZZ_BUILD) -G Ninja -DCMAKE_CXX_COMPILER=$(FUZZ_CXX) $(CMAKE_ARGS)
	cmake --build $(FUZZ_BUILD) -j $(JOBS)
	./fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

# A Debian package of everything `cmake --install` installs: $(BUILD)/package/packfs_*.deb, for
# `apt install ./build/package/packfs_*.deb`.
deb: build
	cd $(BUILD) && cpack

# Into PREFIX (default /usr/local): the program, man pages, libraries, headers, CMake package.
PREFIX ?= /usr/local
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) build-asan build-tsan $(FUZZ_BUILD)

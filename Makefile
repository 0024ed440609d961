# The two commands of the README. Both install missing Debian packages, configure and build.
#   make demo   build, then run matmul on every device of this machine (about 10 s)
#   make test   build and run the whole suite, then again under ASan+UBSan, then every fuzz
#               target for FUZZ_SECONDS each (clang, libFuzzer, ASan+UBSan), then the install
#               check (an outside project built against the installed hlb)
JOBS ?= $(shell nproc)
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 15

.PHONY: deps build demo test test-fast test-asan test-fuzz test-install clean

deps:
	@scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	scripts/demo.sh $(BUILD)

test-fast: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# The sanitizer build leaves StarPU out (HLB_WITH_STARPU=OFF, as when it is not installed): it
# proves that everything else builds and passes without it; the StarPU component's tests run in
# the normal build (StarPU's own threads under ASan made cli_run_starpu_* take minutes).
test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DHLB_SANITIZE=ON -DHLB_BUILD_BENCH=OFF \
	  -DHLB_WITH_STARPU=OFF
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/lsan.supp \
	  ctest --test-dir $(ASAN_BUILD) --output-on-failure -j $(JOBS) -LE no-sanitize

test-fuzz: deps
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DHLB_FUZZ=ON \
	  -DHLB_SANITIZE=ON -DHLB_BUILD_BENCH=OFF -DHLB_WITH_CUDA=OFF
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target hlb_fuzz_targets
	scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

test-install: build
	scripts/check-install.sh $(BUILD)

test: test-fast test-asan test-fuzz test-install

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)

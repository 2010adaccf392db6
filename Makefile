# gpurent: the two commands of README.md, and a few more for development.
#   make run   install what is missing, build, serve on http://127.0.0.1:8080
#   make test  install what is missing, build with sanitizers, run every test
#   make install  build the gpurent CLI and install it in $(PREFIX)/bin (default /usr/local)
#   make chaos    the chaos suite's full form: faults under a booking storm (docs/TESTING.md)
#   make deb      the Debian packages, in build/deb/packages (docs/PACKAGING.md)
.PHONY: run test build build-test bench format format-check clean install chaos deb

JOBS ?= $(shell nproc)
# One test process more than there are cores: end-to-end tests spend part of their time
# waiting on servers' timers and agents' heartbeats, and on 2 cores -j3 ran the suite in
# 534 s where -j2 took 563 s (docs/TESTING.md, "What makes it fast").
TEST_JOBS ?= $(shell echo $$(( $$(nproc) + 1 )))
PREFIX ?= /usr/local
CMAKE_FLAGS ?=

build/release/build.ninja:
	cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release \
	  -DGPURENT_BUILD_TESTS=OFF -DGPURENT_BUILD_BENCH=OFF $(CMAKE_FLAGS)

build/test/build.ninja:
	cmake -S . -B build/test -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGPURENT_SANITIZE=ON \
	  -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DGPURENT_BUILD_BENCH=OFF $(CMAKE_FLAGS)

build: build/release/build.ninja
	@scripts/bootstrap
	cmake --build build/release -j $(JOBS)

run:
	@scripts/bootstrap
	@$(MAKE) --no-print-directory build
	@scripts/run-demo

# The CLI alone, built in Release and installed as $(PREFIX)/bin/gpurent (docs/cli.md).
# It needs only the build packages docs/cli.md lists, so it does not run scripts/bootstrap.
install: build/release/build.ninja
	cmake --build build/release -j $(JOBS) --target gpurent
	cmake --install build/release --component cli --prefix $(PREFIX)

# gpurent-server, gpurent-agent and gpurent-cli (docs/PACKAGING.md): a Release build in
# build/deb/cmake through debian/rules; the .deb files, their -dbgsym packages, the
# .buildinfo and the .changes in build/deb/packages. Needs debhelper (scripts/bootstrap
# --deb); scripts/deb-check also lints, installs, runs and purges them.
DEB_OUT := build/deb/packages
DEB_ARCH = $(shell dpkg --print-architecture)
deb:
	@scripts/bootstrap --deb
	rm -rf $(DEB_OUT) && mkdir -p $(DEB_OUT)
	GPURENT_DEB_DESTDIR=$(CURDIR)/$(DEB_OUT) DEB_BUILD_OPTIONS="parallel=$(JOBS) $(DEB_BUILD_OPTIONS)" \
	  dpkg-buildpackage --build=binary --no-sign --post-clean \
	  --buildinfo-file=$(DEB_OUT)/gpurent_$(DEB_ARCH).buildinfo \
	  --changes-file=$(DEB_OUT)/gpurent_$(DEB_ARCH).changes \
	  --buildinfo-option=-u$(DEB_OUT) --changes-option=-u$(DEB_OUT)
	@ls -l $(DEB_OUT)

build-test: build/test/build.ninja
	cmake --build build/test -j $(JOBS)

test:
	@scripts/bootstrap
	@$(MAKE) --no-print-directory build-test
	cd build/test && ctest -j $(TEST_JOBS) --output-on-failure --timeout 300

# The chaos suite's full form (docs/TESTING.md, "Chaos suite"), in the sanitizer build,
# CHAOS_RUNS times in a row (stopping at the first failure); each run's figures in
# $(CHAOS_BUILD)/chaos-report-N.json. `make test` runs its short form.
CHAOS_BUILD ?= build/test
CHAOS_RUNS ?= 1
chaos:
	@scripts/bootstrap
	@test -f $(CHAOS_BUILD)/build.ninja || cmake -S . -B $(CHAOS_BUILD) -G Ninja \
	  -DCMAKE_BUILD_TYPE=Debug -DGPURENT_SANITIZE=ON -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
	  -DGPURENT_BUILD_BENCH=OFF $(CMAKE_FLAGS)
	cmake --build $(CHAOS_BUILD) -j $(JOBS) --target chaos_tests gpurentd gpurent-fleetsim
	@for i in $$(seq $(CHAOS_RUNS)); do \
	  echo "== make chaos: run $$i of $(CHAOS_RUNS)"; \
	  GPURENT_CHAOS_REPORT=$(CURDIR)/$(CHAOS_BUILD)/chaos-report-$$i.json \
	    $(CHAOS_BUILD)/tests/chaos/chaos_tests --full || exit 1; \
	done

bench:
	@scripts/bootstrap --bench
	cmake -S . -B build/bench -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPURENT_BUILD_TESTS=OFF
	cmake --build build/bench -j $(JOBS)
	bench/http/run.sh build/bench

format:
	scripts/format

format-check:
	scripts/format --check

clean:
	rm -rf build

# Thin wrapper over CMake for the two README commands. Everything real is in CMakeLists.txt.
#   make example   install missing packages, build (Release), run the default prediction
#   make test      install missing packages, build with ASan+UBSan, run the Check suites
#                  (-O1, AddressSanitizer's advice: the suite, the CPU sampler's runs most,
#                  takes half the time it does at -O0)
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: deps build example build-test test clean

deps:
	@bash .ci/deps.sh

build: deps
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
	cmake --build build -j $(JOBS)

example: build
	./build/bin/stepcast predict --model gpt-neox-20b --topology perlmutter-gpu --gpus 128 --tp 4 --pp 4 --micro-batch 1 --global-batch 1024 --seq-len 2048

build-test: deps
	cmake -S . -B build-test -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O1" \
	  -DSC_ASAN=ON -DSC_UBSAN=ON -DSC_MPI=ON
	cmake --build build-test -j $(JOBS)

test: build-test
	cd build-test && ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf build build-test

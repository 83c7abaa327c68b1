# Thin wrapper over cmake: each target names one step of the README, and any failing command fails the make.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
MAKEFLAGS += --no-print-directory

JOBS := $(shell nproc)
MODEL := models/tiny-v4.1
SANITIZE := address,undefined
CONFIG := -DCMAKE_BUILD_TYPE=Release -DDSF_WERROR=ON
ASAN_CONFIG := -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDSF_CUDA=OFF -DDSF_WERROR=ON -DDSF_SANITIZE=$(SANITIZE)
FORMAT_DIRS := $(wildcard src tests bench)

# nvcc is often installed without being on PATH; cmake finds the CUDA compiler through PATH.
ifneq ($(wildcard /usr/local/cuda/bin/nvcc),)
export PATH := $(PATH):/usr/local/cuda/bin
endif

# Bash's time keyword prints a phase's wall time even when the phase fails.
timed = TIMEFORMAT='[time] $(1): %1R s'; time

.PHONY: all run test fuzz format clean setup build asan lean
all: build

setup:
	@$(call timed,setup) tools/setup

build: setup
	$(call timed,configure build/) cmake -S . -B build $(CONFIG)
	$(call timed,build build/) cmake --build build -j$(JOBS)

run: build
	if [ ! -d $(MODEL) ]; then mkdir -p $(dir $(MODEL)); \
		build/dsfold synth --arch v4.1 --size tiny $(MODEL) || { rm -rf $(MODEL); exit 1; }; fi
	build/dsfold info $(MODEL)
	build/dsfold contract --backend cpu
	build/dsfold generate --model $(MODEL) --prompt "The kernel contract checks" -n 16

test: build
	$(call timed,ctest build/) ctest --test-dir build --output-on-failure --no-tests=error -j2
	$(MAKE) asan
	$(MAKE) lean

asan:
	$(call timed,configure build-asan/) cmake -S . -B build-asan $(ASAN_CONFIG)
	$(call timed,build build-asan/) cmake --build build-asan -j$(JOBS)
	$(call timed,ctest build-asan/) ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest --test-dir build-asan --output-on-failure --no-tests=error -j2

lean:
	$(call timed,lean check) tools/lean_check

fuzz: setup
	tools/fuzz_safetensors

format:
	find $(FORMAT_DIRS) -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -print0 | \
		xargs -0 -r clang-format -i --style=file

clean:
	rm -rf build build-*/

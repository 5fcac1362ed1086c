#!/usr/bin/env python3
"""Adds issue 17's kernel-table shapes to a llama.cpp source tree's test-backend-ops, for the
`table` section of bench/run_benchmarks.sh.

test-backend-ops' perf mode has fixed MUL_MAT shapes (W 4096 x 14336) and runs the CPU backend
with hardware_concurrency / 2 threads. The kernel table asks for W 4096 x 4096 at 1 and 64 tokens,
with 1 and 2 threads. This edits tests/test-backend-ops.cpp of the tree given (a scratch copy
outside this repository, e.g. vendor/llama.cpp of the llama-cpp-python sdist) in two places:
  - after the 4096 x 14336 perf cases, the same cases at m = 4096, k = 4096, n = 1 and 64, every
    weight type (the test_mul_mat constructor test-backend-ops already uses);
  - the thread count: TBO_THREADS from the environment when set, the old value otherwise.
llama.cpp's kernels are untouched. Rebuild the test-backend-ops target afterwards. Running it twice
changes nothing; a tree whose text differs from what this expects is left alone, with exit status 1.

Usage: bench/llama_perf_cases.py LLAMA_CPP_SOURCE_DIR
"""
import pathlib
import sys

PERF_LOOP = """                test_cases.emplace_back(new test_mul_mat(type_a, type_b, 4096, bs, 14336, {1,  1}, {1, 1}));
            }
        }
    }
"""
ADDED_CASES = """    // issue 17's kernel table (added by Strata's bench/llama_perf_cases.py): W 4096 x 4096, n = 1 and 64
    for (int bs : {1, 64}) {
        for (ggml_type type_a : all_types) {
            test_cases.emplace_back(new test_mul_mat(type_a, GGML_TYPE_F32, 4096, bs, 4096, {1,  1}, {1, 1}));
        }
    }
"""
THREADS_OLD = "ggml_backend_set_n_threads_fn(backend.get(), std::max<int>(1, N_THREADS/2));"
THREADS_NEW = ("ggml_backend_set_n_threads_fn(backend.get(), getenv(\"TBO_THREADS\") ? "
               "atoi(getenv(\"TBO_THREADS\")) : std::max<int>(1, N_THREADS/2));")


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    path = pathlib.Path(sys.argv[1]) / "tests" / "test-backend-ops.cpp"
    if not path.is_file():
        print(f"{path}: no such file", file=sys.stderr)
        return 1
    text = path.read_text()
    if "issue 17's kernel table" in text and THREADS_NEW in text:
        print(f"{path}: already has the cases and TBO_THREADS")
        return 0
    if text.count(PERF_LOOP) != 1 or text.count(THREADS_OLD) != 1:
        print(f"{path}: the perf MUL_MAT loop or the thread-count line is not as expected; not edited",
              file=sys.stderr)
        return 1
    text = text.replace(PERF_LOOP, PERF_LOOP + ADDED_CASES).replace(THREADS_OLD, THREADS_NEW)
    path.write_text(text)
    print(f"{path}: added W 4096 x 4096 at n = 1, 64 and TBO_THREADS; rebuild test-backend-ops")
    return 0


if __name__ == "__main__":
    sys.exit(main())

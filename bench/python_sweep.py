#!/usr/bin/env python3
"""Python binding sweep: numpy float32 allreduce (sum) through hvdc.allreduce, nccl-tests style.

  python_sweep.py sweep [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP]
                        [--mode output|new|inplace]
      one rank of the sweep; run it under a launcher (mpirun --bind-to none, hvdcrun).
      output (default): hvdc.allreduce(x, output=y) into one preallocated array, as hvdc_bench
      does; new: a new result array per call (Horovod's form; each 64 MiB array costs fresh
      pages); inplace: hvdc.allreduce_(x).
      Columns: size (bytes per rank), time (us, slowest rank's mean), algbw, busbw (GB/s, 1e9;
      busbw = algbw * 2(n-1)/n), #wrong (elements off the expected sum, over all ranks).
  python_sweep.py compare [--np N] [--size BYTES] [--runs 3] [--hvdc-bench PATH]
      runs the sweep at one size and build/bench/hvdc_bench at the same size, alternately,
      --runs times each under mpirun, and prints both medians and their ratio. The binding
      passes numpy's memory to the library through DLPack, so it adds no copy: its busbw should
      be within 10% of the C benchmark's.
  python_sweep.py interleave [--size BYTES] [-n ITERS] [-w WARMUP]
      one rank; alternates, op by op, hvdc.allreduce(x, output=y) with the C calls hvdc_bench
      makes (hvd_allreduce_async, hvd_wait, hvd_handle_free on the same buffers, through ctypes)
      and prints each one's median time and their ratio: what the binding adds, measured so that
      load from other processes falls on both alike.

The module comes from bindings/python and the library from HVDC_LIBRARY (compare sets both
from the build directory, default build/).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def sweep(args):
    import numpy as np
    import hvdc

    hvdc.init()
    rank, n = hvdc.rank(), hvdc.size()
    if rank == 0:
        print(f"# python_sweep allreduce, {n} ranks, numpy float32 sum, mode {args.mode}, "
              f"{args.iters} iters (+{args.warmup} warm-up)")
        print(f"{'size(B)':>12} {'time(us)':>10} {'algbw':>8} {'busbw':>8} {'#wrong':>7}")
    size = args.min_bytes
    while size <= args.max_bytes:
        count = max(1, size // 4)
        inplace = args.mode == "inplace"
        # in place, the sum of zeros stays zero however often it runs
        tensor = np.zeros(count, np.float32) if inplace else np.full(count, rank + 1, np.float32)
        output = np.empty_like(tensor)
        run = {"output": lambda: hvdc.allreduce(tensor, op=hvdc.Sum, name="bench", output=output),
               "new": lambda: hvdc.allreduce(tensor, op=hvdc.Sum, name="bench"),
               "inplace": lambda: hvdc.allreduce_(tensor, op=hvdc.Sum, name="bench")}[args.mode]
        for _ in range(args.warmup):
            out = run()
        hvdc.barrier()
        start = time.perf_counter()
        for _ in range(args.iters):
            out = run()
        mine = (time.perf_counter() - start) / args.iters * 1e6
        slowest = hvdc.allreduce(np.array([mine]), op=hvdc.Max, name="bench.time")[0]
        expected = 0.0 if inplace else n * (n + 1) / 2
        wrong = int(hvdc.allreduce(np.array([np.count_nonzero(out != expected)]),
                                   op=hvdc.Sum, name="bench.wrong")[0])
        algbw = count * 4 / slowest / 1e3
        if rank == 0:
            print(f"{count * 4:>12} {slowest:>10.1f} {algbw:>8.2f} "
                  f"{algbw * 2 * (n - 1) / n:>8.2f} {wrong:>7}", flush=True)
        size *= args.factor
    hvdc.shutdown()


def interleave(args):
    import ctypes

    import numpy as np
    import hvdc
    from hvdc import _ffi

    hvdc.init()
    rank, n = hvdc.rank(), hvdc.size()
    count = max(1, args.size // 4)
    tensor, output = np.full(count, rank + 1, np.float32), np.empty(count, np.float32)
    shape = (ctypes.c_int64 * 1)(count)
    raw = _ffi.hvd_tensor_t(tensor.ctypes.data, _ffi.HVD_FLOAT32, 1, shape,
                            _ffi.hvd_device_t(_ffi.HVD_DEVICE_CPU, 0))
    handle = _ffi.hvd_handle_t()

    def c_calls():
        status = _ffi.lib.hvd_allreduce_async(ctypes.byref(raw), output.ctypes.data,
                                              _ffi.HVD_OP_SUM, b"bench", None,
                                              ctypes.byref(handle))
        status = status or _ffi.lib.hvd_wait(handle)
        _ffi.lib.hvd_handle_free(handle)
        assert status == 0, _ffi.lib.hvd_last_error_message()

    def binding():
        hvdc.allreduce(tensor, op=hvdc.Sum, name="bench", output=output)

    times = {"c": [], "python": []}
    for i in range(args.warmup + args.iters):
        for label, run in (("c", c_calls), ("python", binding)):
            hvdc.barrier()
            start = time.perf_counter()
            run()
            if i >= args.warmup:
                times[label].append(time.perf_counter() - start)
    wrong = int(np.count_nonzero(output != n * (n + 1) / 2))
    c_med, py_med = statistics.median(times["c"]), statistics.median(times["python"])
    if rank == 0:
        bus = 2 * (n - 1) / n
        print(f"# {count * 4} B float32 allreduce, {n} ranks, {args.iters} interleaved pairs: "
              f"C calls {c_med * 1e6:.0f} us ({count * 4 / c_med / 1e9 * bus:.3f} GB/s busbw), "
              f"hvdc.allreduce {py_med * 1e6:.0f} us ({count * 4 / py_med / 1e9 * bus:.3f} "
              f"GB/s busbw), python/C busbw = {c_med / py_med:.3f}, #wrong {wrong}", flush=True)
    hvdc.shutdown()


def mpirun(np_, *cmd, env=None):
    full = ["mpirun", "-np", str(np_), "--oversubscribe", "--bind-to", "none", "--mca", "btl",
            "self,vader,tcp", "-x", "PYTHONPATH", "-x", "HVDC_LIBRARY", *cmd]
    env = dict(env or os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    out = subprocess.run(full, capture_output=True, text=True, env=env, timeout=600)
    if out.returncode != 0:
        sys.exit(f"{' '.join(full)} failed:\n{out.stdout}\n{out.stderr}")
    return out.stdout


def busbw_at(output, size, np_):
    """busbw (GB/s) of the row for `size`, from its time column: the printed busbw has too few
    digits where the machine is slow."""
    for line in output.splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[0] == str(size) and re.match(r"[\d.]+$", fields[1]):
            return size / float(fields[1]) / 1e3 * 2 * (np_ - 1) / np_
    sys.exit(f"no row for {size} B in:\n{output}")


def compare(args):
    build = os.path.abspath(args.build)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "bindings", "python"),
               HVDC_LIBRARY=os.path.join(build, "src", "libhvdc.so.0"))
    bench = args.hvdc_bench or os.path.join(build, "bench", "hvdc_bench")
    size = args.size
    common = ["-b", str(size), "-e", str(size), "-n", str(args.iters), "-w", str(args.warmup)]
    py, c = [], []
    for run in range(args.runs):
        c_out = mpirun(args.np, bench, *common, env=env)
        py_out = mpirun(args.np, sys.executable, os.path.abspath(__file__), "sweep", *common,
                        "--mode", args.mode, env=env)
        c.append(busbw_at(c_out, size, args.np))
        py.append(busbw_at(py_out, size, args.np))
        print(f"run {run + 1}: hvdc_bench {c[-1]:.3f} GB/s, python {py[-1]:.3f} GB/s busbw",
              flush=True)
    c_med, py_med = statistics.median(c), statistics.median(py)
    print(f"# {size} B float32 allreduce, np {args.np}, python mode {args.mode}, median of "
          f"{args.runs}: hvdc_bench "
          f"{c_med:.3f} GB/s, python {py_med:.3f} GB/s busbw, python/C = {py_med / c_med:.3f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("sweep")
    one.add_argument("-b", dest="min_bytes", type=parse_size, default=parse_size("1K"))
    one.add_argument("-e", dest="max_bytes", type=parse_size, default=parse_size("64M"))
    one.add_argument("-f", dest="factor", type=int, default=4)
    one.add_argument("-n", dest="iters", type=int, default=20)
    one.add_argument("-w", dest="warmup", type=int, default=5)
    one.add_argument("--mode", choices=["output", "new", "inplace"], default="output")
    both = sub.add_parser("compare")
    both.add_argument("--np", type=int, default=2)
    both.add_argument("--size", type=parse_size, default=parse_size("64M"))
    both.add_argument("--runs", type=int, default=3)
    both.add_argument("-n", dest="iters", type=int, default=20)
    both.add_argument("-w", dest="warmup", type=int, default=5)
    both.add_argument("--build", default=os.path.join(ROOT, "build"))
    both.add_argument("--hvdc-bench")
    both.add_argument("--mode", choices=["output", "new", "inplace"], default="output")
    inter = sub.add_parser("interleave")
    inter.add_argument("--size", type=parse_size, default=parse_size("64M"))
    inter.add_argument("-n", dest="iters", type=int, default=20)
    inter.add_argument("-w", dest="warmup", type=int, default=3)
    args = parser.parse_args()
    {"sweep": sweep, "compare": compare, "interleave": interleave}[args.command](args)


if __name__ == "__main__":
    main()

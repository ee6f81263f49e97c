#!/usr/bin/env python3
"""Multi-rank checks of hvdc-train and of its Python twin examples/python/train.py: one case per
call, launched through hvdcrun (or mpirun).

usage: run_trainer.py CASE TRAINER LAUNCHER   (LAUNCHER: hvdcrun, or mpirun for *-mpirun)
TRAINER is hvdc-train, or train.py for the python-* cases: it then runs under this interpreter
(run_python_trainer.sh starts this script in the venv that has numpy, with the hvdc package on
PYTHONPATH and HVDC_LIBRARY set).

Each case starts the trainer with small settings, reads the ranks' tagged output and checks what
the issue asks: accuracy on the digits, identical parameters on every rank, np 2 against np 1,
uneven shards through join, checkpoint and resume, and a rank failing mid-epoch.
"""
import gzip
import math
import os
import random
import re
import struct
import subprocess
import sys
import tempfile
import threading
import time

DIGITS = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
TAGGED = re.compile(r"^\[1,(\d+)\]<(stdout|stderr)>:(.*)$")
SKIP = 77


class Run:
    """One finished job: exit status, wall time, and each output line with rank and arrival time."""

    def __init__(self, status, seconds, lines):
        self.status, self.seconds, self.lines = status, seconds, lines

    def text(self, rank=None):
        return "\n".join(l for r, _, l, _ in self.lines if rank is None or r == rank)

    def find(self, pattern, rank=0):
        return [m for r, _, l, _ in self.lines if r == rank for m in [re.search(pattern, l)] if m]


def launch(launcher, train, np, args, timeout=240, keep_going=False):
    """Runs train (a command, as a list) on np ranks through hvdcrun, or through Open MPI's
    mpirun when launcher is mpirun (both tag each line with [1,rank]<stdout|stderr>:)."""
    if os.path.basename(launcher) == "mpirun":
        options = ["--oversubscribe", "--bind-to", "none", "--tag-output"]
        os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    else:
        options = ["--keep-going"] if keep_going else []
    command = [launcher, "-np", str(np)] + options + train + args
    print("$", " ".join(command), flush=True)
    start = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []

    def collect(stream):
        for raw in stream:
            now = time.monotonic() - start
            match = TAGGED.match(raw.rstrip("\n"))
            rank, kind, line = (int(match[1]), match[2], match[3]) if match else (-1, "launcher", raw.rstrip("\n"))
            lines.append((rank, kind, line, now))

    readers = [threading.Thread(target=collect, args=(s,)) for s in (process.stdout, process.stderr)]
    for reader in readers:
        reader.start()
    try:
        status = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        for reader in readers:
            reader.join()
        fail(f"the job did not end within {timeout} s", Run(None, timeout, lines))
    for reader in readers:
        reader.join()
    run = Run(status, time.monotonic() - start, sorted(lines, key=lambda entry: entry[3]))
    print(run.text(), flush=True)
    return run


def fail(message, run=None):
    if run is not None:
        print("\n".join(f"[{r}:{k} {t:6.2f}s] {l}" for r, k, l, t in run.lines))
    print("FAIL:", message)
    sys.exit(1)


def expect(condition, message, run=None):
    if not condition:
        fail(message, run)


def need_digits():
    if not os.path.exists(DIGITS):
        reason = f"{DIGITS} is missing: apt-get install python3-sklearn (scripts/setup.sh)"
        if os.environ.get("CI") == "true":
            fail(reason)
        print("SKIP:", reason)
        sys.exit(SKIP)


def final_accuracy(run):
    found = run.find(r"^final test accuracy: ([0-9.]+)$")
    expect(run.status == 0 and len(found) == 1, "the run failed or printed no final accuracy", run)
    return float(found[0][1])


def expect_synced(run, epochs, size):
    checks = run.find(r"^sync check after epoch (\d+): parameters bit-identical on all (\d+) ranks")
    expect([(int(m[1]), int(m[2])) for m in checks] == [(e, size) for e in range(1, epochs + 1)],
           f"expected a passed sync check on {size} ranks after each of {epochs} epochs", run)


def digest(run):
    found = run.find(r"^parameter digest: ([0-9a-f]{16})$")
    expect(run.status == 0 and len(found) == 1, "no parameter digest", run)
    return found[0][1]


def read_checkpoint(path, tensors):
    """The first `tensors` tensors of a checkpoint (the parameters), as lists of floats."""
    with open(path, "rb") as f:
        data = f.read()
    expect(data[:8] == b"HVDCTRN1", f"{path} is not a checkpoint")
    (tag_size,) = struct.unpack_from("<Q", data, 8)
    at = 16 + tag_size + 3 * 8
    (count,) = struct.unpack_from("<Q", data, at)
    at += 8
    result = []
    for _ in range(min(tensors, count)):
        (n,) = struct.unpack_from("<Q", data, at)
        result.append(struct.unpack_from(f"<{n}f", data, at + 8))
        at += 8 + 4 * n
    return result


def case_accuracy(tools, np, extra, epochs=20):
    need_digits()
    run = launch(*tools, np, ["--data", "digits", "--verify-sync", "--epochs", str(epochs)] + extra)
    expect(run.find(r"data digits \(1437 train, 360 test\)"), "the digits split is not 1437/360", run)
    accuracy = final_accuracy(run)
    expect(accuracy >= 0.95, f"final test accuracy {accuracy} < 0.95", run)
    expect_synced(run, epochs, np)
    epoch_lines = run.find(r"^epoch \d+/\d+: loss [0-9.]+, train accuracy [0-9.]+, test accuracy "
                           r"[0-9.]+, \d+ images/s, communication wait [0-9.]+% of step time$")
    expect(len(epoch_lines) == epochs, "expected one report line per epoch", run)


def case_equivalence(tools):
    """Dropout off, the same global batch (64) and learning rate: one epoch at np 2 must give
    the parameters of one epoch at np 1, up to float rounding."""
    with tempfile.TemporaryDirectory() as tmp:
        common = ["--data", "synthetic", "--epochs", "1", "--dropout", "0", "--no-lr-scaling",
                  "--lr", "0.05"]
        one = launch(*tools, 1, common + ["--batch-size", "64", "--checkpoint", f"{tmp}/np1"])
        two = launch(*tools, 2, common + ["--batch-size", "32", "--checkpoint", f"{tmp}/np2"])
        expect(one.status == 0 and two.status == 0, "a run failed", two if one.status == 0 else one)
        a, b = read_checkpoint(f"{tmp}/np1", 4), read_checkpoint(f"{tmp}/np2", 4)
    norm = math.sqrt(sum(x * x for t in a for x in t))
    diff = math.sqrt(sum((x - y) ** 2 for s, t in zip(a, b) for x, y in zip(s, t)))
    print(f"|np1 - np2| / |np1| = {diff / norm:.3g} (parameter norm {norm:.4g})")
    expect(diff / norm <= 1e-5, f"np 2 differs from np 1 by {diff / norm:.3g} of the norm")


def case_uneven(tools):
    """97 samples, batch 32, np 3: shards of 33, 32 and 32 give 2, 1 and 1 steps per epoch."""
    epochs = 3
    run = launch(*tools, 3, ["--data", "synthetic", "--synthetic-train", "97", "--batch-size", "32",
                             "--epochs", str(epochs), "--verify-sync"], timeout=120)
    expect(run.status == 0, "the run failed", run)
    joins = run.find(r"^uneven shards: ranks ran 1 to 2 steps; join ran, rank 0 joined last")
    expect(len(joins) == epochs, f"expected join to run in each of {epochs} epochs", run)
    expect_synced(run, epochs, 3)
    final_accuracy(run)


def case_resume(tools):
    """Adam (its state and step counter matter) with dropout (its random stream matters):
    epochs 1-2, stop, resume for 3-4 must end bit-identical to 4 epochs in one go."""
    with tempfile.TemporaryDirectory() as tmp:
        common = ["--data", "synthetic", "--optimizer", "adam", "--dropout", "0.2",
                  "--synthetic-train", "512", "--seed", "5"]
        whole = launch(*tools, 2, common + ["--epochs", "4"])
        path = f"{tmp}/state.ckpt"
        first = launch(*tools, 2, common + ["--epochs", "2", "--checkpoint", path])
        expect(first.status == 0 and os.path.exists(path), "no checkpoint after epoch 2", first)
        expect(os.listdir(tmp) == ["state.ckpt"], f"left behind: {os.listdir(tmp)}")
        second = launch(*tools, 2, common + ["--epochs", "4", "--checkpoint", path, "--resume"])
        expect(second.find(r"resumed after epoch 2"), "the second run did not resume", second)
        expect(len(second.find(r"^epoch \d/4:")) == 2, "the resumed run should train 2 epochs", second)
        a, b = digest(whole), digest(second)
        print(f"uninterrupted {a}, resumed {b}")
        expect(a == b, "the resumed run's parameters differ from the uninterrupted run's")
        missing = launch(*tools, 2, common + ["--checkpoint", f"{tmp}/none", "--resume"])
        expect(missing.status != 0 and "cannot open" in missing.text(0), "resume from nothing", missing)


def write_idx(path, dims, data):
    header = bytes([0, 0, 0x08, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims)
    with gzip.open(path, "wb") if path.endswith(".gz") else open(path, "wb") as f:
        f.write(header + bytes(data))


def case_idx(tools):
    """A small MNIST-style set in IDX files (images plain, labels gzip): class k lights up row k
    of a 10x10 image, over faint noise."""
    rng = random.Random(3)
    with tempfile.TemporaryDirectory() as tmp:
        for prefix, count in (("train", 300), ("t10k", 100)):
            labels = [rng.randrange(10) for _ in range(count)]
            pixels = []
            for label in labels:
                pixels += [255 if row == label else rng.randrange(60) for row in range(10) for _ in range(10)]
            write_idx(f"{tmp}/{prefix}-images-idx3-ubyte", [count, 10, 10], pixels)
            write_idx(f"{tmp}/{prefix}-labels-idx1-ubyte.gz", [count], labels)
        run = launch(*tools, 2, ["--data", f"idx:{tmp}", "--epochs", "5"])
    expect(run.find(r"data idx:.* \(300 train, 100 test\)"), "the IDX set was not read", run)
    accuracy = final_accuracy(run)
    expect(accuracy >= 0.9, f"final test accuracy {accuracy} < 0.9 on a separable set", run)


def program_name(tools):
    """What the trainer calls itself at the start of its error lines."""
    return os.path.basename(tools[1][-1])


def case_failure(tools):
    """Rank 1 exits mid-epoch; ranks 0 and 2 must each report the failure and exit non-zero
    within 10 s, on their own (hvdcrun --keep-going does not stop them)."""
    run = launch(*tools, 3, ["--data", "synthetic", "--epochs", "100", "--fail-rank", "1",
                             "--fail-at-step", "20"], timeout=60, keep_going=True)
    failed = [t for r, _, l, t in run.lines if r == 1 and "exiting before step 20 on purpose" in l]
    expect(run.status not in (0, None) and failed, "rank 1 did not fail as asked", run)
    for survivor in (0, 2):
        reports = [(l, t) for r, k, l, t in run.lines if r == survivor and k == "stderr"
                   and l.startswith(f"{program_name(tools)}: rank {survivor} ")]
        expect(reports, f"rank {survivor} printed no reason", run)
        line, when = reports[0]
        print(f"rank {survivor} after {when - failed[0]:.2f} s: {line}")
        expect(when - failed[0] <= 10, f"rank {survivor} took {when - failed[0]:.1f} s", run)
    print(f"the job ended {run.seconds - failed[0]:.2f} s after rank 1 failed")
    expect(run.seconds - failed[0] <= 10 + 1, f"the job ended {run.seconds - failed[0]:.1f} s after the failure", run)


def main():
    case, train, launcher = sys.argv[1:4]
    if case.startswith("python-") != train.endswith(".py"):
        fail(f"case {case} does not go with the trainer {train}")
    tools = (launcher, [sys.executable, train] if train.endswith(".py") else [train])
    cases = {
        "digits-mlp-np1": lambda: case_accuracy(tools, 1, []),
        "digits-mlp-np2": lambda: case_accuracy(tools, 2, []),
        "digits-mlp-np4": lambda: case_accuracy(tools, 4, []),
        "digits-mlp-np2-mpirun": lambda: case_accuracy(tools, 2, []),
        "idx-np2": lambda: case_idx(tools),
        "digits-cnn-np2": lambda: case_accuracy(tools, 2, ["--model", "cnn"], epochs=8),
        "digits-adam-np2": lambda: case_accuracy(tools, 2, ["--optimizer", "adam", "--fusion-threshold", "0"]),
        "digits-random-partition-np2": lambda: case_accuracy(tools, 2, ["--partition", "random"]),
        "equivalence-np2-np1": lambda: case_equivalence(tools),
        "uneven-shards-np3": lambda: case_uneven(tools),
        "checkpoint-resume-np2": lambda: case_resume(tools),
        "rank-failure-np3": lambda: case_failure(tools),
        # The Python twin: the same checks, on its default flags.
        "python-digits-mlp-np2": lambda: case_accuracy(tools, 2, []),
        "python-digits-cnn-np2": lambda: case_accuracy(tools, 2, ["--model", "cnn"], epochs=8),
        "python-idx-np2": lambda: case_idx(tools),
        "python-equivalence-np2-np1": lambda: case_equivalence(tools),
        "python-uneven-shards-np3": lambda: case_uneven(tools),
        "python-checkpoint-resume-np2": lambda: case_resume(tools),
        "python-rank-failure-np3": lambda: case_failure(tools),
    }
    if case not in cases:
        fail(f"unknown case {case!r}; known: {', '.join(cases)}")
    cases[case]()
    print("PASS:", case)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""train.py: the Python twin of hvdc-train. Trains a small network data-parallel over hvdc, on
numpy, the way Horovod trains MXNet Gluon models. Start it with a launcher:

    hvdcrun -np 2 python3 examples/python/train.py --data digits

Every rank runs this same program; hvdc tells each which rank it is. The flags and the lines rank
0 prints are hvdc-train's (see --help). The modules beside it: layers.py (the blocks and models),
optimizers.py (SGD, Adam and the DistributedTrainer), data.py, checkpoint.py.
"""
import argparse
import os
import sys
import time

# One rank per core, as with Horovod: numpy's BLAS must not start a thread per core in every rank
# as well (on 2 cores, 2 ranks of 2 threads each made the CNN ten times slower). Set before numpy
# loads its BLAS; a value from the environment wins.
for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402 (after the thread settings)

import hvdc  # noqa: E402
from checkpoint import resume_checkpoint, save_checkpoint
from data import load_digits, load_idx_directory, make_synthetic, plan_epoch
from layers import SoftmaxCrossEntropy, build_model
from optimizers import (DEFAULT_LEARNING_RATES, DistributedTrainer, broadcast_optimizer_state,
                        make_optimizer)

PROGRAM = "train.py"


def integer_at_least(minimum):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got '{text}'")
        return value
    return parse


def positive_number(text):
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got '{text}'")
    return value


def dropout_rate(text):
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"expected a rate in [0, 1), got '{text}'")
    return value


def data_source(text):
    if text not in ("synthetic", "digits") and not text.startswith("idx:"):
        raise argparse.ArgumentTypeError(f"expected synthetic, digits or idx:DIR, got '{text}'")
    return text


def parse_options(argv):
    parser = argparse.ArgumentParser(
        prog=PROGRAM, usage="hvdcrun -np N python3 train.py [options]",
        description="Trains a small network data-parallel with hvdc, the way Horovod trains "
                    "MXNet Gluon models (the Python twin of hvdc-train).")
    add = parser.add_argument
    add("--data", type=data_source, default="synthetic", metavar="SOURCE",
        help="synthetic (default), digits (sklearn's 8x8 digits, from Debian's python3-sklearn) "
             "or idx:DIR (MNIST IDX files in DIR, plain or .gz)")
    add("--model", choices=("mlp", "cnn"), default="mlp", help="mlp (default) or cnn")
    add("--epochs", type=integer_at_least(1), default=20, metavar="N",
        help="passes over the training set (default 20)")
    add("--batch-size", type=integer_at_least(1), default=32, metavar="N",
        help="samples per rank per step (default 32)")
    add("--lr", type=positive_number, default=0.0, metavar="RATE",
        help="learning rate (default: sgd 0.05, adam 0.002), multiplied by the number of ranks "
             "unless --no-lr-scaling")
    add("--no-lr-scaling", dest="lr_scaling", action="store_false", help="use --lr as given")
    add("--optimizer", choices=("sgd", "adam"), default="sgd",
        help="sgd (momentum 0.9, default) or adam")
    add("--partition", choices=("shard", "random"), default="shard",
        help="shard (default): a shuffled share of the set per rank each epoch; random: each "
             "rank reads random samples from the whole set")
    add("--checkpoint", metavar="PATH", help="rank 0 writes the training state there after "
                                            "every epoch")
    add("--resume", action="store_true", help="start from --checkpoint (rank 0 reads it, every "
                                              "rank receives it)")
    add("--seed", type=integer_at_least(0), default=42, metavar="N",
        help="seeds initialisation, shuffling and dropout (default 42)")
    add("--fusion-threshold", type=integer_at_least(0), default=-1, metavar="B",
        help="bytes hvdc fuses into one allreduce (default: hvdc's setting)")
    add("--dropout", type=dropout_rate, default=0.1, metavar="RATE",
        help="dropout rate in [0, 1) (default 0.1)")
    add("--synthetic-train", type=integer_at_least(1), default=1024, metavar="N")
    add("--synthetic-test", type=integer_at_least(1), default=256, metavar="N",
        help="sizes of the synthetic set (default 1024 and 256)")
    add("--verify-sync", action="store_true",
        help="after every epoch, check that all ranks hold identical parameters")
    add("--fail-rank", type=integer_at_least(0), default=-1, metavar="R")
    add("--fail-at-step", type=integer_at_least(1), default=-1, metavar="S",
        help="test hook: rank R exits with status 3 before global step S")
    options = parser.parse_args(argv)
    if options.resume and not options.checkpoint:
        parser.error("--resume: needs --checkpoint PATH to resume from")
    if (options.fail_rank >= 0) != (options.fail_at_step >= 1):
        parser.error("--fail-rank and --fail-at-step: give both or neither")
    return options


def parameter_digest(params):
    """FNV-1a over the bytes of every parameter, as hvdc-train computes it: equal digests mean
    bit-identical parameters."""
    digest = 14695981039346656037
    for parameter in params.values():
        for byte in parameter.data.tobytes():
            digest = ((digest ^ byte) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return digest


def reduce_ints(values, op, name):
    return hvdc.allreduce(np.array(values, np.int64), name=name, op=op)


def stdout_is_terminal():
    # Under Open MPI every rank's stdout is a pseudo-terminal that orted forwards.
    return sys.stdout.isatty() and "OMPI_COMM_WORLD_SIZE" not in os.environ


def draw_progress(epoch, epochs, done, steps, running_loss):
    filled = 30 * done // steps
    bar = "".join("=" if i < filled else ">" if i == filled else " " for i in range(30))
    print(f"\repoch {epoch}/{epochs} [{bar}] {done}/{steps} loss {running_loss:.4f}", end="",
          flush=True)


class TrainingRun:
    def __init__(self, options, data, rank, size):
        self.options, self.data, self.rank, self.size = options, data, rank, size
        self.loss = SoftmaxCrossEntropy()
        self.first_epoch = 0
        self.model_tag = f"{options.model} {options.optimizer}"

    def start(self):
        o = self.options
        # Each rank initialises with its own seed, as independent framework processes would; the
        # broadcast below is what makes them start from the same parameters.
        self.net, self.params = build_model(o.model, self.data.train.images.shape[1:],
                                            self.data.train.classes, o.dropout, o.seed + self.rank)
        base_lr = o.lr if o.lr > 0 else DEFAULT_LEARNING_RATES[o.optimizer]
        # The global batch is size times the per-rank batch: scale the step size with it.
        self.lr = base_lr * self.size if o.lr_scaling else base_lr
        self.trainer = DistributedTrainer(self.params,
                                          make_optimizer(o.optimizer, self.params, self.lr))
        self.trainer.attach(self.net)
        hvdc.broadcast_parameters(self.params.data(), root_rank=0)
        if o.resume:
            epochs_done, self.trainer.steps_taken, o.seed = resume_checkpoint(
                o.checkpoint, self.model_tag, self.rank, self.every_tensor())
            self.first_epoch = epochs_done
        if self.rank == 0:
            count = sum(p.data.size for p in self.params.values())
            resumed = f", resumed after epoch {self.first_epoch}" if o.resume else ""
            print(f"{PROGRAM}: {self.size} rank(s), data {self.data.description}, model {o.model} "
                  f"({count} parameters), optimizer {o.optimizer}, lr {self.lr:g}, batch "
                  f"{o.batch_size} per rank, partition {o.partition}{resumed}", flush=True)

    def every_tensor(self):
        return [p.data for p in self.params.values()] + self.trainer.optimizer.state()

    def run(self):
        self.start()
        o, accuracy = self.options, 0.0
        for epoch in range(self.first_epoch, o.epochs):
            totals = self.train_epoch(epoch)
            accuracy = self.test_accuracy()
            self.report_epoch(epoch, totals, accuracy)
            if o.verify_sync:
                self.verify_sync(epoch)
            if o.checkpoint and self.rank == 0:
                save_checkpoint(o.checkpoint, self.model_tag,
                                (epoch + 1, self.trainer.steps_taken, o.seed), self.every_tensor())
        if self.first_epoch >= o.epochs:
            accuracy = self.test_accuracy()
        if self.rank == 0:
            print(f"final test accuracy: {accuracy:.4f}")
            print(f"parameter digest: {parameter_digest(self.params):016x}", flush=True)

    def train_epoch(self, epoch):
        o, start = self.options, time.monotonic()
        batches = plan_epoch(o.partition, len(self.data.train), o.batch_size, self.rank,
                             self.size, o.seed, epoch)
        # Dropout's generator is reseeded every epoch from (seed, epoch, rank): see checkpoint.py.
        dropout_rng = np.random.default_rng([o.seed, epoch, self.rank, 0xD50F])
        show_progress = self.rank == 0 and stdout_is_terminal()
        self.trainer.seconds_waiting = 0.0
        totals = {"loss": 0.0, "correct": 0.0, "samples": 0.0, "steps": 0}
        for done, batch in enumerate(batches, 1):
            self.train_step(batch, dropout_rng, totals)
            if show_progress:
                draw_progress(epoch + 1, o.epochs, done, len(batches),
                              totals["loss"] / totals["samples"])
        if show_progress:
            print("\r\033[K", end="", flush=True)  # erase the bar: the summary line replaces it
        self.finish_uneven_epoch(totals["steps"])
        totals["waiting"] = self.trainer.seconds_waiting
        totals["seconds"] = time.monotonic() - start
        return totals

    def train_step(self, batch, dropout_rng, totals):
        step = self.trainer.steps_taken + 1
        if self.rank == self.options.fail_rank and step == self.options.fail_at_step:
            print(f"{PROGRAM}: rank {self.rank}: --fail-rank: exiting before step {step} on "
                  "purpose", file=sys.stderr, flush=True)
            os._exit(3)  # no cleanup, no goodbye to the peers: as a crash would
        images, labels = self.data.train.images[batch], self.data.train.labels[batch]
        losses = self.loss.forward(self.net.forward(images, True, dropout_rng), labels)
        # backward() hands each finished gradient to the DistributedTrainer, which starts its
        # allreduce at once; step() then waits for them and updates.
        self.net.backward(self.loss.backward())
        self.trainer.step(self.options.batch_size)
        totals["loss"] += float(losses.sum())
        totals["correct"] += float((self.loss.predictions() == labels).sum())
        totals["samples"] += len(labels)
        totals["steps"] += 1

    def finish_uneven_epoch(self, steps_this_epoch):
        """When shards differ in size, ranks run different numbers of steps. A rank that has run
        out calls join: it then adds zeros to the allreduces the others still submit, instead of
        leaving them waiting forever. The ranks that joined early missed the last updates, so the
        last rank to join, which took them all, broadcasts its state."""
        last_joined = hvdc.join()
        fewest = int(reduce_ints([steps_this_epoch], hvdc.Min, "epoch.steps.min")[0])
        most = int(reduce_ints([steps_this_epoch], hvdc.Max, "epoch.steps.max")[0])
        if fewest == most:
            return
        hvdc.broadcast_parameters(self.params.data(), root_rank=last_joined)
        broadcast_optimizer_state(self.trainer.optimizer, last_joined)
        steps = np.array([self.trainer.steps_taken], np.int64)
        hvdc.broadcast_(steps, last_joined, name="trainer.steps")
        self.trainer.steps_taken = int(steps[0])
        if self.rank == 0:
            print(f"uneven shards: ranks ran {fewest} to {most} steps; join ran, rank "
                  f"{last_joined} joined last and broadcast its parameters", flush=True)

    def test_accuracy(self):
        test = self.data.test
        mine = np.arange(self.rank, len(test), self.size)  # every size-th image from this rank
        counts = np.array([0.0, len(mine)])
        for start in range(0, len(mine), 256):
            batch = mine[start:start + 256]
            self.loss.forward(self.net.forward(test.images[batch]), test.labels[batch])
            counts[0] += (self.loss.predictions() == test.labels[batch]).sum()
        counts = hvdc.allreduce(counts, name="metrics.test", op=hvdc.Sum)
        return counts[0] / counts[1] if counts[1] > 0 else 0.0

    def verify_sync(self, epoch):
        # The digest as a signed 64-bit value: MIN == MAX over the ranks means all are equal.
        digest = int(np.array(parameter_digest(self.params), np.uint64).astype(np.int64))
        lowest = int(reduce_ints([digest], hvdc.Min, "sync.digest.min")[0])
        highest = int(reduce_ints([digest], hvdc.Max, "sync.digest.max")[0])
        if lowest != highest:
            raise RuntimeError(f"--verify-sync: after epoch {epoch + 1} the parameters differ "
                               "between ranks")
        if self.rank == 0:
            print(f"sync check after epoch {epoch + 1}: parameters bit-identical on all "
                  f"{self.size} ranks (digest {digest & 0xFFFFFFFFFFFFFFFF:016x})", flush=True)

    def report_epoch(self, epoch, totals, test_accuracy):
        sums = np.array([totals[k] for k in ("loss", "correct", "samples", "waiting", "seconds")])
        loss, correct, samples, waiting, seconds = hvdc.allreduce(sums, name="metrics.train",
                                                                  op=hvdc.Sum)
        if self.rank != 0:
            return
        # Images per second: all ranks' samples over this rank's wall time for the epoch.
        print(f"epoch {epoch + 1}/{self.options.epochs}: loss {loss / samples:.4f}, train "
              f"accuracy {correct / samples:.4f}, test accuracy {test_accuracy:.4f}, "
              f"{samples / totals['seconds']:.0f} images/s, communication wait "
              f"{100.0 * waiting / seconds:.1f}% of step time", flush=True)


def load_data(source, options):
    if source == "digits":
        return load_digits()
    if source.startswith("idx:"):
        return load_idx_directory(source[4:])
    # A fixed seed: the data set does not change with --seed.
    return make_synthetic(7, options.synthetic_train, options.synthetic_test)


def main(argv):
    options = parse_options(argv)
    try:
        # Every rank reads its data first: a missing file fails every rank alike, before any
        # rank waits for the others.
        data = load_data(options.data, options)
    except (OSError, RuntimeError) as error:
        print(f"{PROGRAM}: {error}", file=sys.stderr)
        return 1
    settings = {} if options.fusion_threshold < 0 else {"fusion_threshold":
                                                         options.fusion_threshold}
    hvdc.init(**settings)
    # Horovod pins one device per process by local rank. This trainer computes on the CPU, so
    # the local rank only shows where each rank runs.
    rank, size = hvdc.rank(), hvdc.size()
    if options.fail_rank >= size:
        print(f"{PROGRAM}: --fail-rank: {options.fail_rank} is not a rank of this job of {size}",
              file=sys.stderr)
        return 2
    try:
        TrainingRun(options, data, rank, size).run()
    except (hvdc.HvdcError, RuntimeError, ValueError) as error:
        print(f"{PROGRAM}: rank {rank} (local rank {hvdc.local_rank()}): {error}",
              file=sys.stderr, flush=True)
        try:
            hvdc.shutdown()
        except hvdc.HvdcError:
            pass  # after a failure shutdown may miss a dead peer too: the reason is printed above
        return 1
    hvdc.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

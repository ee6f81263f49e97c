"""Checkpoints: rank 0 saves, every rank resumes, in hvdc-train's file format (so either trainer
can read the other's checkpoints of the same model and optimizer).

Horovod's rule is that only rank 0 writes: every rank holds the same state, and N writers would
race on one file. On resume rank 0 reads the file and broadcasts it. A checkpoint holds the
parameters, the optimizer's state, the number of updates taken (Adam's bias correction uses it),
the epochs done and the seed. Seed and epoch are the whole random state: every epoch draws its
shuffle and dropout masks from generators seeded by (seed, epoch, rank).

Format, little-endian: b"HVDCTRN1", u64 tag length, tag ("mlp sgd"), u64 epochs done, u64 steps
taken, u64 seed, u64 tensor count, then per tensor u64 element count and float32 elements.
"""
import os
import struct

import numpy as np

import hvdc

MAGIC = b"HVDCTRN1"


def save_checkpoint(path, model_tag, state, tensors):
    """Rank 0 only. Writes path + ".tmp", fsyncs it, then renames it over path, so a crash never
    leaves a half-written checkpoint. state: (epochs done, steps taken, seed)."""
    tag = model_tag.encode()
    parts = [MAGIC, struct.pack("<Q", len(tag)), tag, struct.pack("<4Q", *state, len(tensors))]
    for tensor in tensors:
        parts += [struct.pack("<Q", tensor.size), np.ascontiguousarray(tensor, "<f4").tobytes()]
    temporary = path + ".tmp"
    try:
        with open(temporary, "wb") as f:
            f.write(b"".join(parts))
            f.flush()
            # fsync before rename: otherwise a power cut can leave the new name on empty data.
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except OSError as error:
        raise RuntimeError(f"--checkpoint: cannot write {path}: {error.strerror}") from None


def _decode(content, path, model_tag, tensors):
    def fail(why):
        raise RuntimeError(f"--resume: {path}: {why}")

    def take(count, at):
        if len(content) - at < count:
            fail("it is truncated")
        return content[at:at + count], at + count

    magic, at = take(8, 0)
    if magic != MAGIC:
        fail("not an hvdc-train checkpoint")
    raw, at = take(8, at)
    (tag_size,) = struct.unpack("<Q", raw)
    if tag_size > 256:
        fail("corrupt header")
    tag, at = take(tag_size, at)
    if tag.decode(errors="replace") != model_tag:
        fail(f"saved by '{tag.decode(errors='replace')}', this run is '{model_tag}'")
    raw, at = take(32, at)
    epochs_done, steps_taken, seed, count = struct.unpack("<4Q", raw)
    if count != len(tensors):
        fail("holds another number of tensors than this model")
    values = []
    for tensor in tensors:
        raw, at = take(8, at)
        if struct.unpack("<Q", raw)[0] != tensor.size:
            fail("a tensor's size differs from this model's")
        raw, at = take(4 * tensor.size, at)
        values.append(np.frombuffer(raw, "<f4").reshape(tensor.shape))
    return (epochs_done, steps_taken, seed), values


def resume_checkpoint(path, model_tag, rank, tensors):
    """Every rank calls this. Rank 0 reads path and every rank receives the tensors in place and
    the state (epochs done, steps taken, seed). If rank 0 cannot read it (missing, corrupt,
    another model), every rank raises RuntimeError."""
    failure, state = "", (0, 0, 0)
    if rank == 0:
        try:
            with open(path, "rb") as f:
                state, values = _decode(f.read(), path, model_tag, tensors)
            for tensor, value in zip(tensors, values):
                tensor[...] = value
        except OSError as error:
            failure = f"--resume: cannot open {path}: {error.strerror}"
        except RuntimeError as error:
            failure = str(error)
    # First whether rank 0 succeeded, with the counters; the tensors only if it did.
    header = np.array([0 if failure else 1, *state], np.int64)
    hvdc.broadcast_(header, 0, name="checkpoint.header")
    if header[0] != 1:
        raise RuntimeError(failure if rank == 0 else f"--resume: rank 0 could not read {path}")
    handles = [hvdc.broadcast_async_(tensor, 0, name=f"checkpoint.tensor.{i}")
               for i, tensor in enumerate(tensors)]
    for handle in handles:
        hvdc.synchronize(handle)
    return tuple(int(value) for value in header[1:])

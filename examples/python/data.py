"""The data of train.py: the 8x8 digits of Debian's python3-sklearn, MNIST IDX files, a synthetic
set, and Horovod's two ways of splitting the training set between ranks.

Images are float32 arrays [count, channels, height, width] in [0, 1], labels int64 arrays. No
hvdc here: every rank reads the whole set and takes its own share.
"""
import gzip
import os
import struct

import numpy as np

DIGITS_PATH = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
DIGITS_SPLIT_SEED = 20240611  # the C++ trainer's: both hold out the same 360 test images


class Dataset:
    def __init__(self, images, labels, classes):
        self.images, self.labels, self.classes = images, labels, classes

    def __len__(self):
        return len(self.labels)


class DataSplit:
    def __init__(self, train, test, description):
        self.train, self.test, self.description = train, test, description


# --- The C++ trainer's fixed digits split, reproduced exactly -----------------------------------
# hvdc-train shuffles the image indices with std::shuffle and std::mt19937_64 seeded with
# DIGITS_SPLIT_SEED (libstdc++'s algorithms). The two classes below replay those draws, so both
# trainers test on the same images and their accuracies can be compared.

class MersenneTwister64:
    """std::mt19937_64: the 64-bit Mersenne Twister of Matsumoto and Nishimura."""
    MASK = (1 << 64) - 1

    def __init__(self, seed):
        state = [seed & self.MASK]
        for i in range(1, 312):
            previous = state[-1]
            state.append((6364136223846793005 * (previous ^ (previous >> 62)) + i) & self.MASK)
        self.state, self.index = state, 312

    def _twist(self):
        state = self.state
        for i in range(312):
            bits = (state[i] & 0xFFFFFFFF80000000) | (state[(i + 1) % 312] & 0x7FFFFFFF)
            shifted = bits >> 1
            if bits & 1:
                shifted ^= 0xB5026F5AA96619E9
            state[i] = state[(i + 156) % 312] ^ shifted
        self.index = 0

    def __call__(self):
        if self.index >= 312:
            self._twist()
        y = self.state[self.index]
        self.index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        return (y ^ (y >> 43)) & self.MASK


def _below(generator, bound):
    """libstdc++'s uniform_int_distribution over [0, bound) for a 64-bit generator (Lemire's
    multiply-and-shift with rejection)."""
    product = generator() * bound
    low = product & MersenneTwister64.MASK
    if low < bound:
        threshold = ((1 << 64) - bound) % bound
        while low < threshold:
            product = generator() * bound
            low = product & MersenneTwister64.MASK
    return product >> 64


def libstdcxx_shuffle(items, generator):
    """std::shuffle as libstdc++ does it when the generator's range exceeds n squared: one draw
    picks the swap positions of two successive elements."""
    n = len(items)
    i = 1
    if n % 2 == 0:
        j = _below(generator, 2)
        items[i], items[j] = items[j], items[i]
        i += 1
    while i < n:
        swap_range = i + 1
        both = _below(generator, swap_range * (swap_range + 1))
        first, second = divmod(both, swap_range + 1)
        items[i], items[first] = items[first], items[i]
        items[i + 1], items[second] = items[second], items[i + 1]
        i += 2
    return items


# --- Sources --------------------------------------------------------------------------------------

def load_digits(path=DIGITS_PATH):
    """sklearn's digits CSV (64 pixels 0..16, then the label), gzip or plain; a fixed 20% (360 of
    1,797, rounded up) held out for test, independent of --seed."""
    if not os.path.exists(path):
        raise RuntimeError(f"--data digits: {path} is missing; install it with: "
                           "apt-get install python3-sklearn")
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as lines:
        rows = [line.strip() for line in lines if line.strip()]
    try:
        table = np.array([[float(field) for field in row.split(",")] for row in rows])
    except ValueError as bad_number:
        raise RuntimeError(f"{path}: not a digits CSV file ({bad_number})") from None
    if table.ndim != 2 or table.shape[1] != 65:
        raise RuntimeError(f"{path}: expected 64 pixel values and a label 0..9 per line")
    images = (table[:, :64] / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    labels = table[:, 64].astype(np.int64)
    order = libstdcxx_shuffle(list(range(len(labels))), MersenneTwister64(DIGITS_SPLIT_SEED))
    test_count = (len(order) + 4) // 5
    test, train = order[:test_count], order[test_count:]
    return DataSplit(Dataset(images[train], labels[train], 10),
                     Dataset(images[test], labels[test], 10),
                     f"digits ({len(train)} train, {len(test)} test)")


def read_idx(path):
    """One IDX array (MNIST's format: two zero bytes, type code 0x08, the number of dims, each dim
    as a big-endian uint32, then the bytes), plain or gzip."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        content = f.read()
    if len(content) < 4 or content[0] != 0 or content[1] != 0:
        raise RuntimeError(f"{path}: not an IDX file (bad magic number)")
    if content[2] != 0x08:
        raise RuntimeError(f"{path}: IDX type code {content[2]} is not supported "
                           "(only 0x08, unsigned byte)")
    ndim = content[3]
    if ndim == 0 or len(content) < 4 + 4 * ndim:
        raise RuntimeError(f"{path}: truncated IDX header")
    dims = struct.unpack_from(f">{ndim}I", content, 4)
    data = content[4 + 4 * ndim:]
    if len(data) != int(np.prod(dims, dtype=np.float64)):
        raise RuntimeError(f"{path}: the dims announce {int(np.prod(dims, dtype=np.float64))} "
                           f"bytes of data, the file has {len(data)}")
    return np.frombuffer(data, dtype=np.uint8).reshape(dims)


def _plain_or_gzip(path):
    for candidate in (path, path + ".gz"):
        if os.path.exists(candidate):
            return candidate
    raise RuntimeError(f"--data idx: neither {path} nor {path}.gz exists")


def load_idx_directory(directory):
    def load(images_name, labels_name):
        images = read_idx(_plain_or_gzip(os.path.join(directory, images_name)))
        labels = read_idx(_plain_or_gzip(os.path.join(directory, labels_name)))
        if images.ndim != 3 or labels.ndim != 1 or len(labels) != len(images):
            raise RuntimeError(f"{directory}/{images_name}: expected unsigned-byte images "
                               "[n, rows, cols] and n labels")
        return images[:, None].astype(np.float32) / 255.0, labels.astype(np.int64)

    train_images, train_labels = load("train-images-idx3-ubyte", "train-labels-idx1-ubyte")
    test_images, test_labels = load("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
    classes = int(max(train_labels.max(initial=0), test_labels.max(initial=0))) + 1
    return DataSplit(Dataset(train_images, train_labels, classes),
                     Dataset(test_images, test_labels, classes),
                     f"idx:{directory} ({len(train_labels)} train, {len(test_labels)} test)")


def make_synthetic(seed, train_count, test_count):
    """Ten classes of 8x8 images: a fixed random prototype per class plus Gaussian noise
    (sigma 0.7). The C++ trainer's recipe, drawn with numpy's generator, so not the same pixels."""
    rng = np.random.default_rng(seed)
    prototypes = rng.random((10, 64), dtype=np.float32)

    def draw(count):
        labels = rng.integers(0, 10, count)
        noise = rng.normal(0.0, 0.7, (count, 64)).astype(np.float32)
        return Dataset((prototypes[labels] + noise).reshape(count, 1, 8, 8), labels, 10)

    return DataSplit(draw(train_count), draw(test_count),
                     f"synthetic ({train_count} train, {test_count} test)")


# --- Partitions -----------------------------------------------------------------------------------

def _stream(seed, epoch, rank):
    """An independent generator per (seed, epoch, rank); rank -1 is the stream every rank shares."""
    return np.random.default_rng([seed, epoch, rank + 1])


def plan_epoch(partition, sample_count, batch_size, rank, size, seed, epoch):
    """This rank's batches of sample indices for one epoch (the last may be short).

    shard: one permutation shared by every rank is dealt out like cards (rank r takes positions
    r, r + size, ...), so the ranks' batches at step t are together the batch one process with
    size times the batch would read. Shards differ by one sample when size does not divide the
    set, and ranks may then run different numbers of steps (train.py finishes them with join).
    random: each rank draws ceil(count / (batch * size)) batches from the whole set.
    """
    if partition == "shard":
        mine = _stream(seed, epoch, -1).permutation(sample_count)[rank::size]
    else:
        steps = -(-sample_count // (batch_size * size))
        mine = _stream(seed, epoch, rank).integers(0, sample_count, steps * batch_size)
    return [mine[start:start + batch_size] for start in range(0, len(mine), batch_size)]

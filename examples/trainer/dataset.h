// Datasets: images as NCHW float tensors in [0, 1] with integer labels, split into a training and
// a test part. Three sources: the 8x8 digits that Debian's python3-sklearn ships, MNIST-style IDX
// files, and a deterministic synthetic set.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tensor.h"

namespace trainer {

struct Dataset {
  Tensor images;                // [count, channels, height, width]
  std::vector<int32_t> labels;  // count entries in [0, classes)
  int32_t classes = 0;

  int64_t count() const { return static_cast<int64_t>(labels.size()); }
  // The images and labels at the given indices, in that order.
  void gather(const std::vector<int64_t>& indices, Tensor& images_out,
              std::vector<int32_t>& labels_out) const;
};

struct DataSplit {
  Dataset train, test;
  std::string description;  // one line for the log, e.g. "digits (1437 train, 360 test)"
};

// Where Debian's python3-sklearn puts the digits (1,797 images of 8x8 pixels, values 0..16).
constexpr const char* kDigitsPath =
    "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";

// Reads the digits CSV (gzip or plain) and holds out a fixed 20% for test (the split does not
// depend on --seed). Throws std::runtime_error, saying how to install the file if it is missing.
DataSplit load_digits(const std::string& path = kDigitsPath);

// Reads train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and
// t10k-labels-idx1-ubyte from dir, each plain or with a .gz suffix.
DataSplit load_idx_directory(const std::string& dir);

// The whole content of one IDX file: its element type code, dims and raw big-endian bytes.
struct IdxArray {
  uint8_t type_code = 0;  // 0x08 unsigned byte (the only type MNIST uses)
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;
};
// Reads an IDX file, plain or gzip. Throws std::runtime_error naming the file and the problem.
IdxArray read_idx(const std::string& path);

// Ten classes of 8x8 images: a fixed random prototype per class plus noise. The same for a given
// seed on every machine that uses the same standard library.
DataSplit make_synthetic(uint64_t seed, int64_t train_count, int64_t test_count);

}  // namespace trainer

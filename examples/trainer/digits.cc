// The 8x8 handwritten digits of the UCI collection, as Debian's python3-sklearn ships them: one
// CSV line per image, 64 pixel values in 0..16 and then the label.
#include <algorithm>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>

#include "dataset.h"
#include "gzip_file.h"

namespace trainer {

namespace {

constexpr int64_t kSide = 8;
constexpr uint64_t kSplitSeed = 20240611;  // fixed: every run holds out the same test images

void parse_digits_csv(const std::string& text, const std::string& path, std::vector<float>& pixels,
                      std::vector<int32_t>& labels) {
  std::istringstream lines(text);
  std::string line;
  int64_t line_number = 0;
  while (std::getline(lines, line)) {
    ++line_number;
    if (line.empty()) continue;
    std::istringstream fields(line);
    std::vector<double> values;
    std::string field;
    while (std::getline(fields, field, ',')) values.push_back(std::stod(field));
    if (values.size() != kSide * kSide + 1 || values.back() < 0 || values.back() > 9) {
      throw std::runtime_error(path + ":" + std::to_string(line_number) +
                               ": expected 64 pixel values and a label 0..9");
    }
    for (int64_t i = 0; i < kSide * kSide; ++i)
      pixels.push_back(static_cast<float>(values[i] / 16.0));
    labels.push_back(static_cast<int32_t>(values.back()));
  }
}

Dataset subset(const std::vector<float>& pixels, const std::vector<int32_t>& labels,
               const std::vector<int64_t>& indices) {
  Dataset set;
  set.classes = 10;
  set.images = Tensor({static_cast<int64_t>(indices.size()), 1, kSide, kSide});
  for (size_t i = 0; i < indices.size(); ++i) {
    std::copy_n(pixels.begin() + indices[i] * kSide * kSide, kSide * kSide,
                set.images.data() + i * kSide * kSide);
    set.labels.push_back(labels[indices[i]]);
  }
  return set;
}

}  // namespace

DataSplit load_digits(const std::string& path) {
  if (!file_exists(path)) {
    throw std::runtime_error("--data digits: " + path +
                             " is missing; install it with: apt-get install python3-sklearn");
  }
  const std::vector<unsigned char> raw = read_maybe_gzip(path);
  std::vector<float> pixels;
  std::vector<int32_t> labels;
  try {
    parse_digits_csv(std::string(raw.begin(), raw.end()), path, pixels, labels);
  } catch (const std::logic_error& bad_number) {  // std::stod's invalid_argument, out_of_range
    throw std::runtime_error(path + ": not a digits CSV file (" + bad_number.what() + ")");
  }
  std::vector<int64_t> order(labels.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(kSplitSeed);
  std::shuffle(order.begin(), order.end(), rng);
  const size_t test_count = (order.size() + 4) / 5;  // 20%, rounded up: 360 of 1,797
  DataSplit split;
  split.test = subset(pixels, labels, {order.begin(), order.begin() + test_count});
  split.train = subset(pixels, labels, {order.begin() + test_count, order.end()});
  split.description = "digits (" + std::to_string(split.train.count()) + " train, " +
                      std::to_string(split.test.count()) + " test)";
  return split;
}

}  // namespace trainer

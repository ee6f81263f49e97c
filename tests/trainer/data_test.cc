// The data side: IDX files (plain and gzip) written here and read back, the digits file's
// missing-file message, the two partitions, and the command line's errors.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <stdexcept>

#include "dataset.h"
#include "options.h"
#include "partition.h"

namespace trainer {
namespace {

std::string idx_bytes(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data) {
  std::string out = {0, 0, 0x08, static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(d >> shift));
  }
  out.append(data.begin(), data.end());
  return out;
}

void write_plain(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

void write_gzip(const std::string& path, const std::string& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  gzclose(file);
}

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/hvdc_trainer_test_XXXXXX";
    path_ = mkdtemp(pattern);
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Three 2x3 training images and two test images; the test files are gzip, the others plain.
void write_small_mnist(const std::string& dir) {
  std::vector<uint8_t> train_pixels(3 * 2 * 3), test_pixels(2 * 2 * 3);
  for (size_t i = 0; i < train_pixels.size(); ++i) train_pixels[i] = static_cast<uint8_t>(i * 10);
  for (size_t i = 0; i < test_pixels.size(); ++i) test_pixels[i] = static_cast<uint8_t>(255 - i);
  write_plain(dir + "/train-images-idx3-ubyte", idx_bytes({3, 2, 3}, train_pixels));
  write_plain(dir + "/train-labels-idx1-ubyte", idx_bytes({3}, {7, 0, 9}));
  write_gzip(dir + "/t10k-images-idx3-ubyte.gz", idx_bytes({2, 2, 3}, test_pixels));
  write_gzip(dir + "/t10k-labels-idx1-ubyte.gz", idx_bytes({2}, {1, 2}));
}

TEST(Idx, ReadsPlainAndGzipFiles) {
  TempDir dir;
  write_small_mnist(dir.path());
  const DataSplit split = load_idx_directory(dir.path());
  EXPECT_EQ(split.train.images.shape(), (std::vector<int64_t>{3, 1, 2, 3}));
  EXPECT_EQ(split.test.images.shape(), (std::vector<int64_t>{2, 1, 2, 3}));
  EXPECT_EQ(split.train.labels, (std::vector<int32_t>{7, 0, 9}));
  EXPECT_EQ(split.test.labels, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(split.train.classes, 10);
  EXPECT_FLOAT_EQ(split.train.images[5], 50.0f / 255.0f);
  EXPECT_FLOAT_EQ(split.test.images[1], 254.0f / 255.0f);
}

TEST(Idx, RejectsMalformedFiles) {
  TempDir dir;
  const std::string path = dir.path() + "/bad";
  write_plain(path, "\x01\x02\x08\x01");
  EXPECT_THROW(read_idx(path), std::runtime_error);
  write_plain(path, idx_bytes({4}, {1, 2, 3}));  // announces 4 bytes, holds 3
  try {
    read_idx(path);
    FAIL() << "a truncated file was accepted";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("4 bytes"), std::string::npos) << error.what();
  }
  EXPECT_THROW(load_idx_directory(dir.path() + "/none"), std::runtime_error);
}

TEST(Digits, MissingFileSaysHowToInstallIt) {
  try {
    load_digits("/nonexistent/digits.csv.gz");
    FAIL() << "a missing digits file was accepted";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("apt-get install python3-sklearn"), std::string::npos)
        << error.what();
  }
}

TEST(Partition, ShardsCoverTheSetOnceAndMatchOneBigBatch) {
  const int size = 3;
  const EpochPlan whole = plan_epoch(Partition::kShard, 100, 6 * size, 0, 1, 5, 2);
  std::multiset<int64_t> seen;
  for (int rank = 0; rank < size; ++rank) {
    const EpochPlan mine = plan_epoch(Partition::kShard, 100, 6, rank, size, 5, 2);
    for (size_t step = 0; step < mine.batches.size(); ++step) {
      for (int64_t sample : mine.batches[step]) {
        seen.insert(sample);
        const auto& big = whole.batches.at(step);
        EXPECT_NE(std::find(big.begin(), big.end(), sample), big.end()) << "step " << step;
      }
    }
  }
  EXPECT_EQ(seen.size(), 100u);
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 100u);
}

TEST(Partition, UnevenShardsGiveUnevenSteps) {
  std::vector<size_t> steps;
  for (int rank = 0; rank < 3; ++rank)
    steps.push_back(plan_epoch(Partition::kShard, 97, 32, rank, 3, 1, 0).batches.size());
  EXPECT_EQ(steps, (std::vector<size_t>{2, 1, 1}));
}

TEST(Partition, RandomReadsGiveEveryRankTheSameStepsAndDifferentSamples) {
  const EpochPlan a = plan_epoch(Partition::kRandom, 97, 32, 0, 3, 1, 0);
  const EpochPlan b = plan_epoch(Partition::kRandom, 97, 32, 1, 3, 1, 0);
  EXPECT_EQ(a.batches.size(), 2u);
  EXPECT_EQ(b.batches.size(), 2u);
  EXPECT_NE(a.batches[0], b.batches[0]);
  EXPECT_THROW(parse_partition("stripes"), std::invalid_argument);
}

TEST(Options, BadValuesNameTheOption) {
  auto parse = [](std::vector<std::string> words) {
    std::vector<char*> argv = {const_cast<char*>("hvdc-train")};
    for (std::string& w : words) argv.push_back(&w[0]);
    return parse_options(static_cast<int>(argv.size()), argv.data());
  };
  EXPECT_EQ(parse({"--epochs=3", "--model", "cnn"}).epochs, 3);
  const std::vector<std::vector<std::string>> bad = {
      {"--model", "rnn"}, {"--epochs", "0"}, {"--lr", "-1"},   {"--data", "cifar"},
      {"--resume"},       {"--batch-size"},  {"--frobnicate"}, {"--fail-rank", "1"}};
  for (const auto& words : bad) {
    try {
      parse(words);
      ADD_FAILURE() << words[0] << " was accepted";
    } catch (const std::invalid_argument& error) {
      EXPECT_EQ(std::string(error.what()).rfind(words[0].substr(0, words[0].find('=')), 0), 0u)
          << error.what();
    }
  }
}

}  // namespace
}  // namespace trainer

// MNIST's IDX format: a magic number (two zero bytes, a type code, the number of dims), each dim
// as a big-endian uint32, then the elements in row-major order.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "dataset.h"
#include "gzip_file.h"

namespace trainer {

namespace {

uint32_t big_endian_u32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// path, or path + ".gz" if only that exists.
std::string plain_or_gzip(const std::string& path) {
  if (file_exists(path)) return path;
  if (file_exists(path + ".gz")) return path + ".gz";
  throw std::runtime_error("--data idx: neither " + path + " nor " + path + ".gz exists");
}

Dataset dataset_from_idx(const IdxArray& images, const IdxArray& labels, const std::string& what) {
  if (images.type_code != 0x08 || images.dims.size() != 3 || labels.type_code != 0x08 ||
      labels.dims.size() != 1 || labels.dims[0] != images.dims[0]) {
    throw std::runtime_error(what + ": expected unsigned-byte images [n, rows, cols] and n labels");
  }
  Dataset set;
  const int64_t count = images.dims[0], rows = images.dims[1], cols = images.dims[2];
  set.images = Tensor({count, 1, rows, cols});
  for (size_t i = 0; i < set.images.size(); ++i) set.images[i] = images.bytes[i] / 255.0f;
  for (uint8_t label : labels.bytes) {
    set.labels.push_back(label);
    set.classes = std::max<int32_t>(set.classes, label + 1);
  }
  return set;
}

}  // namespace

IdxArray read_idx(const std::string& path) {
  const std::vector<unsigned char> content = read_maybe_gzip(path);
  if (content.size() < 4 || content[0] != 0 || content[1] != 0) {
    throw std::runtime_error(path + ": not an IDX file (bad magic number)");
  }
  IdxArray array;
  array.type_code = content[2];
  const size_t ndim = content[3];
  if (array.type_code != 0x08) {
    throw std::runtime_error(path + ": IDX type code " + std::to_string(array.type_code) +
                             " is not supported (only 0x08, unsigned byte)");
  }
  if (ndim == 0 || content.size() < 4 + 4 * ndim) {
    throw std::runtime_error(path + ": truncated IDX header");
  }
  size_t elements = 1;
  for (size_t d = 0; d < ndim; ++d) {
    array.dims.push_back(big_endian_u32(&content[4 + 4 * d]));
    // Dims of up to 2^32 each can overflow the product: stop once it exceeds the file.
    if (elements > content.size()) break;
    elements *= static_cast<size_t>(array.dims.back());
  }
  const size_t offset = 4 + 4 * ndim;
  if (content.size() - offset != elements) {
    throw std::runtime_error(path + ": the dims announce " + std::to_string(elements) +
                             " bytes of data, the file has " +
                             std::to_string(content.size() - offset));
  }
  array.bytes.assign(content.begin() + static_cast<std::ptrdiff_t>(offset), content.end());
  return array;
}

DataSplit load_idx_directory(const std::string& dir) {
  auto load = [&dir](const std::string& images, const std::string& labels) {
    return dataset_from_idx(read_idx(plain_or_gzip(dir + "/" + images)),
                            read_idx(plain_or_gzip(dir + "/" + labels)), dir + "/" + images);
  };
  DataSplit split;
  split.train = load("train-images-idx3-ubyte", "train-labels-idx1-ubyte");
  split.test = load("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte");
  const int32_t classes = std::max(split.train.classes, split.test.classes);
  split.train.classes = split.test.classes = classes;
  split.description = "idx:" + dir + " (" + std::to_string(split.train.count()) + " train, " +
                      std::to_string(split.test.count()) + " test)";
  return split;
}

}  // namespace trainer

#include "checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <hvdc.hpp>
#include <iterator>
#include <stdexcept>
#include <vector>

#include "broadcast.h"

namespace trainer {

namespace {

constexpr char kMagic[8] = {'H', 'V', 'D', 'C', 'T', 'R', 'N', '1'};

std::vector<Tensor*> every_tensor(ParameterDict& params, Optimizer& optimizer) {
  std::vector<Tensor*> tensors;
  for (Parameter* parameter : params.in_order()) tensors.push_back(&parameter->data);
  for (Tensor* state : optimizer.state()) tensors.push_back(state);
  return tensors;
}

void put_u64(std::string& out, uint64_t value) {
  out.append(reinterpret_cast<const char*>(&value), 8);
}

std::string encode(const std::string& model_tag, const TrainingState& state,
                   const std::vector<Tensor*>& tensors) {
  std::string out(kMagic, sizeof kMagic);
  put_u64(out, model_tag.size());
  out += model_tag;
  put_u64(out, static_cast<uint64_t>(state.epochs_done));
  put_u64(out, static_cast<uint64_t>(state.steps_taken));
  put_u64(out, state.seed);
  put_u64(out, tensors.size());
  for (const Tensor* tensor : tensors) {
    put_u64(out, tensor->size());
    out.append(reinterpret_cast<const char*>(tensor->data()), tensor->size() * sizeof(float));
  }
  return out;
}

// Reads what encode() wrote, checking every size against the model built on this rank.
class Decoder {
 public:
  Decoder(std::string bytes, std::string path) : bytes_(std::move(bytes)), path_(std::move(path)) {}
  void take(void* out, size_t count) {
    if (bytes_.size() - at_ < count) fail("it is truncated");
    std::memcpy(out, bytes_.data() + at_, count);
    at_ += count;
  }
  uint64_t u64() {
    uint64_t value = 0;
    take(&value, 8);
    return value;
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw std::runtime_error("--resume: " + path_ + ": " + why);
  }

 private:
  std::string bytes_, path_;
  size_t at_ = 0;
};

TrainingState decode(const std::string& bytes, const std::string& path,
                     const std::string& model_tag, const std::vector<Tensor*>& tensors) {
  Decoder in(bytes, path);
  char magic[sizeof kMagic];
  in.take(magic, sizeof magic);
  if (std::memcmp(magic, kMagic, sizeof kMagic) != 0) in.fail("not an hvdc-train checkpoint");
  const uint64_t tag_size = in.u64();
  if (tag_size > 256) in.fail("corrupt header");
  std::string tag(tag_size, '\0');
  in.take(&tag[0], tag_size);
  if (tag != model_tag) in.fail("saved by '" + tag + "', this run is '" + model_tag + "'");
  TrainingState state;
  state.epochs_done = static_cast<int64_t>(in.u64());
  state.steps_taken = static_cast<int64_t>(in.u64());
  state.seed = in.u64();
  if (in.u64() != tensors.size()) in.fail("holds another number of tensors than this model");
  for (Tensor* tensor : tensors) {
    if (in.u64() != tensor->size()) in.fail("a tensor's size differs from this model's");
    in.take(tensor->data(), tensor->size() * sizeof(float));
  }
  return state;
}

void write_file_durably(const std::string& path, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw std::runtime_error("--checkpoint: cannot create " + path + ": " + std::strerror(errno));
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      throw std::runtime_error("--checkpoint: cannot write " + path + ": " + why);
    }
    written += static_cast<size_t>(n);
  }
  // fsync before rename: otherwise a power cut can leave the new name on empty data.
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    throw std::runtime_error("--checkpoint: cannot flush " + path + ": " + std::strerror(errno));
  }
}

std::string read_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    throw std::runtime_error("--resume: cannot open " + path + ": " + std::strerror(errno));
  return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

}  // namespace

void save_checkpoint(const std::string& path, const std::string& model_tag,
                     const TrainingState& state, ParameterDict& params, Optimizer& optimizer) {
  const std::string temporary = path + ".tmp";
  write_file_durably(temporary, encode(model_tag, state, every_tensor(params, optimizer)));
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    throw std::runtime_error("--checkpoint: cannot rename " + temporary + " to " + path + ": " +
                             std::strerror(errno));
  }
}

TrainingState resume_checkpoint(const std::string& path, const std::string& model_tag, int rank,
                                ParameterDict& params, Optimizer& optimizer) {
  const std::vector<Tensor*> tensors = every_tensor(params, optimizer);
  TrainingState state;
  std::string failure;
  if (rank == 0) {
    try {
      state = decode(read_file(path), path, model_tag, tensors);
    } catch (const std::runtime_error& error) {
      failure = error.what();
    }
  }
  // First whether rank 0 succeeded, with the counters; the tensors only if it did.
  std::vector<int64_t> header = {failure.empty() ? 1 : 0, state.epochs_done, state.steps_taken,
                                 static_cast<int64_t>(state.seed)};
  hvdc::Options options;
  options.name = "checkpoint.header";
  hvdc::broadcast(header, 0, options);
  if (header[0] != 1) {
    throw std::runtime_error(rank == 0 ? failure : "--resume: rank 0 could not read " + path);
  }
  broadcast_tensors(tensors, 0, "checkpoint.tensor");
  return TrainingState{header[1], header[2], static_cast<uint64_t>(header[3])};
}

}  // namespace trainer

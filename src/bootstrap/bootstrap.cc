#include "bootstrap/bootstrap.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "bootstrap/mpi/mpi_loader.h"
#include "common/log.h"

namespace hvdc::bootstrap {

using common::make_error;

Status allgather_strings(Bootstrap& bootstrap, const std::string& mine,
                         std::vector<std::string>* all) {
  const int n = bootstrap.size();
  uint64_t my_len = mine.size();
  std::vector<uint64_t> lens(n);
  HVDC_RETURN_IF_ERROR(bootstrap.allgather(&my_len, sizeof(my_len), lens.data()));
  uint64_t max_len = 0;
  for (uint64_t len : lens) max_len = len > max_len ? len : max_len;
  std::string padded = mine;
  padded.resize(max_len);
  std::string gathered(max_len * n, '\0');
  HVDC_RETURN_IF_ERROR(bootstrap.allgather(padded.data(), max_len, gathered.data()));
  all->clear();
  for (int r = 0; r < n; ++r) all->push_back(gathered.substr(r * max_len, lens[r]));
  return Status::ok();
}

namespace {

class SingletonBootstrap final : public Bootstrap {
 public:
  const char* name() const override { return "singleton"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Status allgather(const void* in, size_t bytes, void* out) override {
    if (bytes > 0) std::memmove(out, in, bytes);
    return Status::ok();
  }
  Status broadcast(void*, size_t, int) override { return Status::ok(); }
  Status barrier() override { return Status::ok(); }
};

bool env_set(const char* name) {
  return std::getenv(name) != nullptr;
}

}  // namespace

std::unique_ptr<Bootstrap> make_singleton_bootstrap() {
  return std::make_unique<SingletonBootstrap>();
}

bool launched_by_mpi() {
  return env_set("OMPI_COMM_WORLD_SIZE") || env_set("PMIX_RANK") ||
         (env_set("PMI_RANK") && env_set("PMI_SIZE"));
}

Status create_bootstrap(const std::string& mode, std::unique_ptr<Bootstrap>* out) {
  if (mode == "singleton" || (mode == "auto" && !launched_by_mpi())) {
    *out = make_singleton_bootstrap();
    HVDC_LOG_INFO("bootstrap: singleton (no launcher found)");
    return Status::ok();
  }
  if (mode == "mpi" || mode == "auto") {
    HVDC_RETURN_IF_ERROR(make_mpi_bootstrap(out));
    HVDC_LOG_INFO("bootstrap: mpi, rank %d of %d", (*out)->rank(), (*out)->size());
    return Status::ok();
  }
  return make_error(HVD_ERR_INVALID_ARGUMENT, "bootstrap mode '%s' is unknown", mode.c_str());
}

}  // namespace hvdc::bootstrap

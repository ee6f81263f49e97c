#include "bootstrap/bootstrap.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "bootstrap/discovery.h"
#include "bootstrap/mpi/mpi_loader.h"
#include "bootstrap/tcp/store.h"
#include "common/log.h"

namespace hvdc::bootstrap {

using common::make_error;

Status allgather_strings(Bootstrap& bootstrap, const std::string& mine,
                         std::vector<std::string>* all) {
  const int n = bootstrap.size();
  uint64_t my_len = mine.size();
  std::vector<uint64_t> lens(n);
  HVDC_RETURN_IF_ERROR(bootstrap.allgather(&my_len, sizeof(my_len), lens.data()));
  // Lengths come from other processes: bound them before anything is sized by them (host names
  // and UCX worker addresses are far smaller).
  constexpr uint64_t kMaxStringBytes = uint64_t{1} << 20;
  uint64_t max_len = 0;
  for (int r = 0; r < n; ++r) {
    if (lens[r] > kMaxStringBytes) {
      return common::make_error(HVD_ERR_BOOTSTRAP,
                                "rank %d announced a %llu-byte string in an exchange; the limit "
                                "is %llu bytes",
                                r, static_cast<unsigned long long>(lens[r]),
                                static_cast<unsigned long long>(kMaxStringBytes));
    }
    max_len = lens[r] > max_len ? lens[r] : max_len;
  }
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

}  // namespace

std::unique_ptr<Bootstrap> make_singleton_bootstrap() {
  return std::make_unique<SingletonBootstrap>();
}

namespace {

Status make_store(const BootstrapOptions& options, const LaunchInfo& info,
                  std::unique_ptr<Bootstrap>* out) {
  if (info.master_addr.empty() || info.master_port == 0) {
    return make_error(HVD_ERR_BOOTSTRAP,
                      "rank %d of %d (found by %s) needs the rendezvous store's address: set "
                      "HVDC_MASTER_ADDR and HVDC_MASTER_PORT (hvdcrun does this for you)",
                      info.rank, info.size, info.source.c_str());
  }
  StoreOptions store;
  store.rank = info.rank;
  store.size = info.size;
  store.master_addr = info.master_addr;
  store.port = info.master_port;
  store.secret = options.secret;
  store.iface = options.iface;
  store.timeout_seconds = options.timeout_seconds;
  std::unique_ptr<StoreBootstrap> bootstrap;
  HVDC_RETURN_IF_ERROR(StoreBootstrap::create(store, &bootstrap));
  *out = std::move(bootstrap);
  return Status::ok();
}

bool mpi_source(const LaunchInfo& info) {
  return info.source == "Open MPI" || info.source == "MPICH/Hydra";
}

// auto: MPI for mpirun's ranks (falling back to the store when the plugin cannot load and a
// rendezvous address is given), the store for any other multi-rank launch.
Status choose_bootstrap(const BootstrapOptions& options, const LaunchInfo& info,
                        std::unique_ptr<Bootstrap>* out) {
  if (info.size == 1) {  // one rank (srun -n 1, HVDC_SIZE=1, ...) needs nobody to meet
    *out = make_singleton_bootstrap();
    return Status::ok();
  }
  if (!mpi_source(info)) return make_store(options, info, out);
  Status mpi = make_mpi_bootstrap(out);
  if (mpi.is_ok() || info.master_addr.empty()) {
    return mpi.with_context(
        "started by mpirun (set HVDC_MASTER_ADDR and HVDC_MASTER_PORT to rendezvous over TCP "
        "instead)");
  }
  HVDC_LOG_INFO("bootstrap: MPI is unavailable (%s); using the TCP store", mpi.message().c_str());
  return make_store(options, info, out);
}

}  // namespace

Status create_bootstrap(const BootstrapOptions& options, std::unique_ptr<Bootstrap>* out) {
  const EnvLookup env = options.env ? options.env : process_environment();
  LaunchInfo info;
  HVDC_RETURN_IF_ERROR(discover_launch(env, options.config_rank, options.config_size, &info));
  HVDC_LOG_INFO("%s", describe_launch(info).c_str());
  Status st;
  if (options.mode == "singleton") {
    *out = make_singleton_bootstrap();
  } else if (options.mode == "mpi") {
    st = make_mpi_bootstrap(out);
  } else if (options.mode == "store") {
    st = make_store(options, info, out);
  } else if (options.mode == "auto") {
    st = choose_bootstrap(options, info, out);
  } else {
    return make_error(HVD_ERR_INVALID_ARGUMENT, "bootstrap mode '%s' is unknown",
                      options.mode.c_str());
  }
  HVDC_RETURN_IF_ERROR(st);
  HVDC_LOG_INFO("bootstrap: %s, rank %d of %d", (*out)->name(), (*out)->rank(), (*out)->size());
  return Status::ok();
}

}  // namespace hvdc::bootstrap

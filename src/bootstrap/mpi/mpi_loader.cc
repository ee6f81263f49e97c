#include "bootstrap/mpi/mpi_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include "bootstrap/mpi/mpi_plugin_api.h"
#include "common/log.h"
#include "hvdc_config.h"

namespace hvdc::bootstrap {

using common::make_error;

namespace {

constexpr size_t kErrLen = 512;

class MpiBootstrap final : public Bootstrap {
 public:
  MpiBootstrap(const hvdc_mpi_plugin_v1* plugin, const hvdc_mpi_plugin_v2* v2)
      : plugin_(plugin), v2_(v2) {}
  Status init() { return check(plugin_->init(&rank_, &size_, err_, kErrLen)); }
  const char* name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status allgather(const void* in, size_t bytes, void* out) override {
    return check(plugin_->allgather(in, bytes, out, err_, kErrLen));
  }
  Status broadcast(void* buf, size_t bytes, int root) override {
    return check(plugin_->broadcast(buf, bytes, root, err_, kErrLen));
  }
  Status barrier() override { return check(plugin_->barrier(err_, kErrLen)); }
  Status barrier_within(double seconds) override {
    if (v2_ == nullptr) return barrier();  // an older plugin: no bounded barrier
    const int rc = v2_->barrier_within(seconds, err_, kErrLen);
    if (rc == 1) return Status(HVD_ERR_TIMEOUT, std::string("mpi bootstrap: ") + err_);
    return check(rc);
  }
  Status finalize() override { return check(plugin_->finalize(err_, kErrLen)); }

 private:
  Status check(int rc) {
    return rc == 0 ? Status::ok()
                   : Status(HVD_ERR_BOOTSTRAP, std::string("mpi bootstrap: ") + err_);
  }
  const hvdc_mpi_plugin_v1* plugin_;
  const hvdc_mpi_plugin_v2* v2_;  // null for a v1 plugin
  int rank_ = -1;
  int size_ = 0;
  char err_[kErrLen] = {0};
};

#if HVDC_HAVE_MPI
// The plugin sits beside libhvdc.so (build tree and install tree alike); HVDC_MPI_PLUGIN names
// another path. RTLD_GLOBAL because Open MPI's own components need libmpi's symbols.
void* open_plugin(std::string* tried) {
  std::string candidates[3];
  if (const char* env = std::getenv("HVDC_MPI_PLUGIN")) candidates[0] = env;
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&make_mpi_bootstrap), &info) != 0 && info.dli_fname) {
    std::string self = info.dli_fname;
    size_t slash = self.rfind('/');
    if (slash != std::string::npos) candidates[1] = self.substr(0, slash + 1) + "libhvdc_mpi.so";
  }
  candidates[2] = "libhvdc_mpi.so";
  for (const std::string& path : candidates) {
    if (path.empty()) continue;
    if (void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) return handle;
    *tried += "\n  " + path + ": " + dlerror();
  }
  return nullptr;
}
#endif

}  // namespace

Status make_mpi_bootstrap(std::unique_ptr<Bootstrap>* out) {
#if !HVDC_HAVE_MPI
  (void)out;
  return make_error(HVD_ERR_UNSUPPORTED,
                    "hvdc was built without MPI (-Dmpi=disabled or no MPI "
                    "found at build time); the MPI bootstrap is unavailable");
#else
  static void* handle = nullptr;  // kept loaded: MPI cannot be unloaded and loaded again
  std::string tried;
  if (handle == nullptr) handle = open_plugin(&tried);
  if (handle == nullptr) {
    return make_error(HVD_ERR_UNSUPPORTED, "cannot load the MPI bootstrap plugin:%s",
                      tried.c_str());
  }
  auto get = reinterpret_cast<hvdc_mpi_plugin_get_v1_fn>(dlsym(handle, HVDC_MPI_PLUGIN_SYMBOL));
  if (get == nullptr) {
    return make_error(HVD_ERR_UNSUPPORTED, "the MPI plugin lacks %s", HVDC_MPI_PLUGIN_SYMBOL);
  }
  auto get_v2 =
      reinterpret_cast<hvdc_mpi_plugin_get_v2_fn>(dlsym(handle, HVDC_MPI_PLUGIN_SYMBOL_V2));
  auto bootstrap = std::make_unique<MpiBootstrap>(get(), get_v2 != nullptr ? get_v2() : nullptr);
  HVDC_RETURN_IF_ERROR(bootstrap->init());
  *out = std::move(bootstrap);
  return Status::ok();
#endif
}

}  // namespace hvdc::bootstrap

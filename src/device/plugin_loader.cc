#include "device/plugin_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "device/runtime.h"
#include "hvdc_config.h"

namespace hvdc::device {

using common::make_error;
using common::Status;

const char* const kBuildWithCuda =
    "this hvdc was built without CUDA; rebuild it with `meson setup build -Dcuda=enabled "
    "-Dnccl=enabled` (the CUDA toolkit and NCCL under /usr/local/cuda) for CUDA tensors";

namespace {

#if HVDC_HAVE_CUDA
// The plugin sits beside libhvdc.so in the build and install trees alike (as the MPI plugin
// does); HVDC_CUDA_PLUGIN names another path. RTLD_LOCAL: nothing else needs CUDA's symbols.
void* open_plugin(std::string* tried) {
  std::string candidates[3];
  if (const char* env = std::getenv("HVDC_CUDA_PLUGIN")) candidates[0] = env;
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&cuda_runtime), &info) != 0 && info.dli_fname) {
    const std::string self = info.dli_fname;
    const size_t slash = self.rfind('/');
    if (slash != std::string::npos) candidates[1] = self.substr(0, slash + 1) + "libhvdc_cuda.so";
  }
  candidates[2] = "libhvdc_cuda.so";
  for (const std::string& path : candidates) {
    if (path.empty()) continue;
    if (void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
    *tried += "\n  " + path + ": " + dlerror();
  }
  return nullptr;
}

Status load(Runtime** out) {
  std::string tried;
  void* handle = open_plugin(&tried);  // kept loaded: the runtime lives until the process ends
  if (handle == nullptr) {
    return make_error(HVD_ERR_UNSUPPORTED, "cannot load the CUDA plugin libhvdc_cuda.so:%s",
                      tried.c_str());
  }
  auto create = reinterpret_cast<RuntimeCreateFn>(dlsym(handle, kRuntimeCreateSymbol));
  if (create == nullptr) {
    return make_error(HVD_ERR_UNSUPPORTED,
                      "the CUDA plugin lacks %s (a plugin from another hvdc version?)",
                      kRuntimeCreateSymbol);
  }
  char err[512] = {0};
  Runtime* runtime = create(err, sizeof(err));
  if (runtime == nullptr) {
    return make_error(HVD_ERR_UNSUPPORTED, "CUDA is not usable: %s", err);
  }
  *out = runtime;
  return Status::ok();
}
#endif

}  // namespace

Status cuda_runtime(Runtime** out) {
#if HVDC_HAVE_CUDA
  static std::once_flag once;
  static Runtime* runtime = nullptr;  // never deleted: device work may outlive static teardown
  static Status loaded;
  std::call_once(once, [] { loaded = load(&runtime); });
  HVDC_RETURN_IF_ERROR(loaded);
  *out = runtime;
  return Status::ok();
#else
  (void)out;
  return Status(HVD_ERR_UNSUPPORTED, kBuildWithCuda);
#endif
}

}  // namespace hvdc::device

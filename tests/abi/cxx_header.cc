// include/hvdc.h seen from C++: it must compile warning-free on its own and declare everything
// extern "C". Every function's address is taken, so a missing guard (a C++-mangled name) fails
// at link time; a few calls check that the linked functions are the library's.
#include <hvdc.h>

#include <cstdio>
#include <cstring>
#include <type_traits>

namespace {

using AnyFn = void (*)();  // the one function pointer type every other one converts to freely

const AnyFn kFunctions[] = {
    reinterpret_cast<AnyFn>(&hvd_version_string),
    reinterpret_cast<AnyFn>(&hvd_abi_version),
    reinterpret_cast<AnyFn>(&hvd_status_string),
    reinterpret_cast<AnyFn>(&hvd_last_error_message),
    reinterpret_cast<AnyFn>(&hvd_tensor_from_dlpack),
    reinterpret_cast<AnyFn>(&hvd_config_create),
    reinterpret_cast<AnyFn>(&hvd_config_set_int),
    reinterpret_cast<AnyFn>(&hvd_config_set_str),
    reinterpret_cast<AnyFn>(&hvd_config_destroy),
    reinterpret_cast<AnyFn>(&hvd_set_log_callback),
    reinterpret_cast<AnyFn>(&hvd_init),
    reinterpret_cast<AnyFn>(&hvd_init_with_config),
    reinterpret_cast<AnyFn>(&hvd_shutdown),
    reinterpret_cast<AnyFn>(&hvd_is_initialized),
    reinterpret_cast<AnyFn>(&hvd_rank),
    reinterpret_cast<AnyFn>(&hvd_size),
    reinterpret_cast<AnyFn>(&hvd_local_rank),
    reinterpret_cast<AnyFn>(&hvd_local_size),
    reinterpret_cast<AnyFn>(&hvd_cross_rank),
    reinterpret_cast<AnyFn>(&hvd_cross_size),
    reinterpret_cast<AnyFn>(&hvd_op_args_init),
    reinterpret_cast<AnyFn>(&hvd_allreduce_async),
    reinterpret_cast<AnyFn>(&hvd_test),
    reinterpret_cast<AnyFn>(&hvd_wait),
    reinterpret_cast<AnyFn>(&hvd_wait_all),
    reinterpret_cast<AnyFn>(&hvd_handle_free),
    reinterpret_cast<AnyFn>(&hvd_abort),
    reinterpret_cast<AnyFn>(&hvd_get_async_error),
    reinterpret_cast<AnyFn>(&hvd_has_feature),
};

// The header's types are plain C: trivially copyable standard-layout structs.
static_assert(std::is_same<hvd_status_t, int32_t>::value, "hvd_status_t is int32_t");
static_assert(std::is_same<hvd_handle_t, uint64_t>::value, "hvd_handle_t is uint64_t");
static_assert(std::is_trivially_copyable<hvd_tensor_t>::value, "hvd_tensor_t is plain C");
static_assert(std::is_standard_layout<hvd_tensor_t>::value, "hvd_tensor_t is plain C");
static_assert(std::is_trivially_copyable<hvd_dl_tensor_t>::value, "hvd_dl_tensor_t is plain C");
static_assert(std::is_standard_layout<hvd_dl_tensor_t>::value, "hvd_dl_tensor_t is plain C");
static_assert(std::is_trivially_copyable<hvd_op_args_t>::value, "hvd_op_args_t is plain C");
static_assert(std::is_standard_layout<hvd_op_args_t>::value, "hvd_op_args_t is plain C");

}  // namespace

int main() {
  int passed = 0;
  int failed = 0;
  auto check = [&](bool ok, const char* what) {
    if (ok) {
      ++passed;
    } else {
      ++failed;
      std::printf("FAIL: %s\n", what);
    }
  };
  for (AnyFn fn : kFunctions) check(fn != nullptr, "every hvdc function has an address");
  check(hvd_abi_version() == HVDC_ABI_VERSION, "hvd_abi_version() == HVDC_ABI_VERSION");
  check(std::strcmp(hvd_status_string(12345), "unknown status") == 0,
        "hvd_status_string(12345) is \"unknown status\"");
  check(hvd_is_initialized() == 0 && hvd_rank() == -1, "not initialized");
  std::printf("abi cxx_header: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

#include "common/status.h"

#include <cstdarg>
#include <cstdio>

namespace hvdc::common {

Status Status::with_context(const std::string& context) const {
  if (is_ok()) return *this;
  // A peer's notice may already carry this context (it failed in the same op).
  if (message_.compare(0, context.size() + 2, context + ": ") == 0) return *this;
  return Status(code_, context + ": " + message_);
}

static std::string vformat(const char* fmt, va_list args) {
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  if (n <= 0) return std::string();
  std::string out(static_cast<size_t>(n), '\0');
  std::vsnprintf(out.data(), out.size() + 1, fmt, args);
  return out;
}

std::string strfmt(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string out = vformat(fmt, args);
  va_end(args);
  return out;
}

Status make_error(hvd_status_t code, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string message = vformat(fmt, args);
  va_end(args);
  return Status(code, std::move(message));
}

const char* status_name(hvd_status_t code) {
  switch (code) {
    case HVD_SUCCESS:
      return "success";
    case HVD_IN_PROGRESS:
      return "in progress";
    case HVD_ERR_INVALID_ARGUMENT:
      return "invalid argument";
    case HVD_ERR_INVALID_USAGE:
      return "invalid usage";
    case HVD_ERR_NOT_INITIALIZED:
      return "not initialized";
    case HVD_ERR_UNSUPPORTED:
      return "unsupported";
    case HVD_ERR_SYSTEM:
      return "system error";
    case HVD_ERR_INTERNAL:
      return "internal error";
    case HVD_ERR_INVALID_HANDLE:
      return "invalid handle";
    case HVD_ERR_MISMATCH:
      return "mismatched tensor metadata across ranks";
    case HVD_ERR_DUPLICATE_NAME:
      return "duplicate tensor name in flight";
    case HVD_ERR_ABORTED:
      return "aborted";
    case HVD_ERR_TIMEOUT:
      return "timeout";
    case HVD_ERR_PEER_FAILURE:
      return "peer failure";
    case HVD_ERR_SHUT_DOWN:
      return "shut down";
    case HVD_ERR_OUT_OF_MEMORY:
      return "out of memory";
    case HVD_ERR_TRANSPORT:
      return "transport error";
    case HVD_ERR_BOOTSTRAP:
      return "bootstrap error";
    case HVD_ERR_FORKED:
      return "called in a forked child process";
    case HVD_ERR_DEVICE:
      return "device (CUDA or NCCL) error";
    default:
      return "unknown status";
  }
}

}  // namespace hvdc::common

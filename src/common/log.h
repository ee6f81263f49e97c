// Logging: one line per message, to stderr or to the embedding application's callback.
#pragma once

#include <string>

#include "common/status.h"
#include "hvdc.h"

namespace hvdc::common {

enum LogLevel : int32_t { kTrace = 0, kDebug = 1, kInfo = 2, kWarning = 3, kError = 4, kOff = 5 };

void set_log_level(int32_t level);
bool log_enabled(int32_t level);
void set_log_callback(hvd_log_fn fn, void* user_data);
// Prefix for lines logged by the calling thread ("rank 3"); engines set it on their threads.
void set_thread_log_rank(int32_t rank);
void set_process_log_rank(int32_t rank);
void log_message(int32_t level, const std::string& message);

}  // namespace hvdc::common

#define HVDC_LOG(level, ...)                                                   \
  do {                                                                         \
    if (::hvdc::common::log_enabled(level))                                    \
      ::hvdc::common::log_message(level, ::hvdc::common::strfmt(__VA_ARGS__)); \
  } while (0)
#define HVDC_LOG_DEBUG(...) HVDC_LOG(::hvdc::common::kDebug, __VA_ARGS__)
#define HVDC_LOG_INFO(...) HVDC_LOG(::hvdc::common::kInfo, __VA_ARGS__)
#define HVDC_LOG_WARNING(...) HVDC_LOG(::hvdc::common::kWarning, __VA_ARGS__)
#define HVDC_LOG_ERROR(...) HVDC_LOG(::hvdc::common::kError, __VA_ARGS__)

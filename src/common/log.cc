#include "common/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace hvdc::common {
namespace {

std::atomic<int32_t> g_level{kWarning};
std::atomic<int32_t> g_process_rank{-1};
thread_local int32_t t_rank = -1;

struct Sink {
  std::mutex mutex;
  hvd_log_fn fn = nullptr;
  void* user_data = nullptr;
};
Sink& sink() {
  static Sink s;
  return s;
}

const char* level_tag(int32_t level) {
  static const char* const kTags[] = {"trace", "debug", "info", "warning", "error"};
  return level >= kTrace && level <= kError ? kTags[level] : "log";
}

}  // namespace

void set_log_level(int32_t level) {
  g_level.store(level, std::memory_order_relaxed);
}
bool log_enabled(int32_t level) {
  return level >= g_level.load(std::memory_order_relaxed);
}

void set_log_callback(hvd_log_fn fn, void* user_data) {
  std::lock_guard<std::mutex> lock(sink().mutex);
  sink().fn = fn;
  sink().user_data = user_data;
}

void set_thread_log_rank(int32_t rank) {
  t_rank = rank;
}
void set_process_log_rank(int32_t rank) {
  g_process_rank.store(rank);
}

void log_message(int32_t level, const std::string& message) {
  int32_t rank = t_rank >= 0 ? t_rank : g_process_rank.load();
  std::string line = rank >= 0 ? strfmt("[hvdc %s rank %d] ", level_tag(level), rank)
                               : strfmt("[hvdc %s] ", level_tag(level));
  line += message;
  // Held while calling out so that lines never interleave and a callback is never used after
  // set_log_callback replaced it.
  std::lock_guard<std::mutex> lock(sink().mutex);
  if (sink().fn != nullptr) {
    sink().fn(sink().user_data, level, line.c_str());
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

}  // namespace hvdc::common

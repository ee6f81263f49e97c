#include "core/timeline.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/log.h"
#include "common/utf8.h"
#include "hvdc.h"

namespace hvdc::core {

namespace {

using SteadyClock = std::chrono::steady_clock;

int64_t micros_since(SteadyClock::time_point start, SteadyClock::time_point now) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(now - start).count();
  return std::max<int64_t>(0, us);
}

}  // namespace

std::string json_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size() + 2);
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      // A malformed byte must not reach the file (json.load rejects it).
      const size_t len = common::utf8_sequence_length(text, i);
      if (len == 0) {
        out += "\\ufffd";  // the replacement character, one per malformed byte
        ++i;
      } else {
        out.append(text, i, len);
        i += len;
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  return out;
}

// One file's state: the tensor -> pid table and how many spans each pid has open. Only the writer
// thread touches it.
class Timeline::Writer {
 public:
  explicit Writer(std::FILE* file) : file_(file) { emit_raw("[\n"); }

  void write(const Event& event) {
    if (event.kind == Kind::kCycle) {
      emit("{\"name\":\"CYCLE_START\",\"ph\":\"i\",\"s\":\"g\",\"ts\":" +
           std::to_string(event.ts_us) + ",\"pid\":0,\"tid\":0}");
      return;
    }
    if (event.kind == Kind::kBegin) {
      const int pid = pid_of(event.tensor);
      ++open_[pid];
      emit(span_event(pid, "\"B\"", event));
      return;
    }
    // An end or tick whose span began in an earlier file (start() switched files mid-span) is
    // dropped: this file never saw the span open, and a viewer would mis-nest it.
    const auto it = pids_.find(event.tensor);
    if (it == pids_.end() || open_[it->second] == 0) return;
    const int pid = it->second;
    if (event.kind == Kind::kTick) {
      emit(span_event(pid, "\"X\",\"dur\":0", event));  // zero length, inside NEGOTIATE_<op>
      return;
    }
    --open_[pid];
    emit(end_event(pid, event));
  }

  void flush() {
    if (std::fflush(file_) != 0) report_failure();
  }

  // Closes the spans still open (the op was in flight at stop()), then ends the array with an
  // event that needs no trailing comma, so the file parses.
  void finish(int64_t ts_us) {
    for (size_t pid = 1; pid < open_.size(); ++pid) {
      for (; open_[pid] > 0; --open_[pid]) {
        emit("{\"ph\":\"E\",\"ts\":" + std::to_string(ts_us) + ",\"pid\":" + std::to_string(pid) +
             ",\"tid\":0}");
      }
    }
    emit_raw(
        "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":\"hvdc\"}}\n]\n");
    if (std::fclose(file_) != 0) report_failure();
    file_ = nullptr;
  }

 private:
  // A tensor's pid, assigning the next one and naming it on first appearance. Pid 0 is left to the
  // cycle markers.
  int pid_of(const std::string& tensor) {
    const auto [it, inserted] = pids_.emplace(tensor, static_cast<int>(open_.size()));
    if (!inserted) return it->second;
    open_.push_back(0);
    const std::string pid = std::to_string(it->second);
    emit("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + pid + ",\"args\":{\"name\":\"" +
         json_escape(tensor) + "\"}}");
    emit("{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":" + pid +
         ",\"args\":{\"sort_index\":" + pid + "}}");
    return it->second;
  }

  // A "B" or "X" event named event.name; `ph` is the quoted phase plus any extra fields.
  static std::string span_event(int pid, const char* ph, const Event& event) {
    return "{\"name\":\"" + json_escape(event.name) + "\",\"ph\":" + ph +
           ",\"ts\":" + std::to_string(event.ts_us) + ",\"pid\":" + std::to_string(pid) +
           ",\"tid\":0}";
  }

  static std::string end_event(int pid, const Event& event) {
    std::string json = "{\"ph\":\"E\",\"ts\":" + std::to_string(event.ts_us) +
                       ",\"pid\":" + std::to_string(pid) + ",\"tid\":0";
    if (event.kind == Kind::kOpEnd) {
      json += ",\"args\":{\"dtype\":\"" + json_escape(event.name) + "\",\"shape\":\"" +
              json_escape(event.shape) + "\"}";
    }
    return json + "}";
  }

  void emit(const std::string& json) { emit_raw(json + ",\n"); }

  void emit_raw(const std::string& text) {
    if (std::fwrite(text.data(), 1, text.size(), file_) != text.size()) report_failure();
  }

  // A full disk should not take training down: warn once and keep going.
  void report_failure() {
    if (failed_) return;
    failed_ = true;
    HVDC_LOG_WARNING("timeline: writing the trace file failed: %s", std::strerror(errno));
  }

  std::FILE* file_;
  std::unordered_map<std::string, int> pids_;
  std::vector<int> open_{0};  // open spans per pid, indexed by pid; pid 0 is never a tensor
  bool failed_ = false;
};

Timeline::Timeline() = default;

Timeline::~Timeline() {
  stop();
}

common::Status Timeline::start(const std::string& path, bool mark_cycles) {
  std::lock_guard<std::mutex> control(control_mutex_);
  stop_locked();
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) {
    return common::make_error(HVD_ERR_SYSTEM, "cannot open timeline file '%s': %s", path.c_str(),
                              std::strerror(errno));
  }
  const auto start_time = SteadyClock::now();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.clear();
    stopping_ = false;
    start_time_ = start_time;
    mark_cycles_.store(mark_cycles, std::memory_order_relaxed);
    active_.store(true, std::memory_order_relaxed);
  }
  try {
    writer_ = std::thread(&Timeline::writer_loop, this, file, start_time);
  } catch (const std::system_error& e) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      active_.store(false, std::memory_order_relaxed);
      queue_.clear();
    }
    std::fclose(file);
    return common::make_error(HVD_ERR_SYSTEM, "cannot start the timeline writer for '%s': %s",
                              path.c_str(), e.what());
  }
  return common::Status::ok();
}

void Timeline::stop() {
  std::lock_guard<std::mutex> control(control_mutex_);
  stop_locked();
}

void Timeline::stop_locked() {
  if (!writer_.joinable()) return;
  {
    // Under mutex_, so no event can be enqueued after the writer's final drain.
    std::lock_guard<std::mutex> lock(mutex_);
    active_.store(false, std::memory_order_relaxed);
    stopping_ = true;
  }
  wake_.notify_one();
  writer_.join();
}

void Timeline::writer_loop(std::FILE* file, SteadyClock::time_point start) {
  Writer writer(file);
  std::deque<Event> batch;
  bool done = false;
  while (!done) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return !queue_.empty() || stopping_; });
      batch.swap(queue_);
      done = stopping_;  // this batch then holds everything enqueued before stop()
    }
    for (const Event& event : batch) writer.write(event);
    batch.clear();
    // Flushing per batch keeps the file close to current if the process dies without stop().
    writer.flush();
  }
  writer.finish(micros_since(start, SteadyClock::now()));
}

void Timeline::enqueue(Kind kind, const std::string& tensor, std::string name, std::string shape) {
  const auto now = SteadyClock::now();
  Event event{kind, 0, tensor, std::move(name), std::move(shape)};
  std::lock_guard<std::mutex> lock(mutex_);
  if (!active_.load(std::memory_order_relaxed)) return;  // stop() won the race
  event.ts_us = micros_since(start_time_, now);
  const bool was_empty = queue_.empty();
  queue_.push_back(std::move(event));
  // The writer only sleeps on an empty queue, so only the first event of a batch must wake it.
  if (was_empty) wake_.notify_one();
}

void Timeline::negotiate_start(const std::string& tensor, const char* op) {
  if (!active()) return;
  enqueue(Kind::kBegin, tensor, std::string("NEGOTIATE_") + op);
}

void Timeline::negotiate_rank_ready(const std::string& tensor, int rank) {
  if (!active()) return;
  enqueue(Kind::kTick, tensor, std::to_string(rank));
}

void Timeline::negotiate_end(const std::string& tensor) {
  if (!active()) return;
  enqueue(Kind::kEnd, tensor, {});
}

void Timeline::op_start(const std::string& tensor, const char* op) {
  if (!active()) return;
  enqueue(Kind::kBegin, tensor, op);
}

void Timeline::activity_start(const std::string& tensor, const char* activity) {
  if (!active()) return;
  enqueue(Kind::kBegin, tensor, activity);
}

void Timeline::activity_end(const std::string& tensor) {
  if (!active()) return;
  enqueue(Kind::kEnd, tensor, {});
}

void Timeline::op_end(const std::string& tensor, const char* dtype, const std::string& shape) {
  if (!active()) return;
  enqueue(Kind::kOpEnd, tensor, dtype, shape);
}

void Timeline::mark_cycle() {
  if (!active() || !mark_cycles_.load(std::memory_order_relaxed)) return;
  enqueue(Kind::kCycle, std::string(), {});
}

}  // namespace hvdc::core

// Timeline: a Chrome trace-event JSON file (chrome://tracing, Perfetto) of what the engine did to
// each tensor. Only global rank 0 records one; the engine decides that.
//
// Layout follows Horovod so existing habits carry over: every tensor is a trace "process" (pid
// assigned in order of first appearance in the file, named by a process_name metadata event), with
// a NEGOTIATE_<OP> span holding one tick per rank as it reports ready, then an <OP> span holding
// nested activity spans (QUEUE, MEMCPY_IN_FUSION_BUFFER, ...). The op span's end carries the dtype
// and shape. Cycle markers are global instant events on pid 0.
//
// Callers (the engine thread, op workers) only take a timestamp and enqueue; one writer thread per
// recording formats and writes, so file I/O never stalls the engine. Each file on its own is
// balanced: an end or tick whose span began in an earlier file is dropped, and spans still open at
// stop() are closed there, so every span a viewer shows has both ends.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"

namespace hvdc::core {

class Timeline {
 public:
  Timeline();
  ~Timeline();  // stops (finishes the file) if active
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // Opens `path` (truncating) and starts recording; if already recording, finishes the old file
  // first. HVD_ERR_SYSTEM with the path and strerror on failure (and then nothing is recording).
  common::Status start(const std::string& path, bool mark_cycles);
  // Finishes the file: every event enqueued before this call is written, then the file is closed
  // and is valid JSON. A no-op when inactive.
  void stop();
  bool active() const { return active_.load(std::memory_order_relaxed); }

  // Events: each is a no-op when inactive, thread-safe, and only enqueues. Timestamps are taken at
  // the call, in microseconds since start(). The const char* arguments must not be null; they are
  // copied.
  void negotiate_start(const std::string& tensor, const char* op);       // "B" NEGOTIATE_<op>
  void negotiate_rank_ready(const std::string& tensor, int rank);        // "X" tick named <rank>
  void negotiate_end(const std::string& tensor);                         // "E"
  void op_start(const std::string& tensor, const char* op);              // "B" <op>, e.g. ALLREDUCE
  void activity_start(const std::string& tensor, const char* activity);  // nested "B"
  void activity_end(const std::string& tensor);                          // "E"
  // "E" closing the op span, with args {dtype, shape}.
  void op_end(const std::string& tensor, const char* dtype, const std::string& shape);
  // A global instant event CYCLE_START; only when started with mark_cycles.
  void mark_cycle();

 private:
  enum class Kind : uint8_t { kBegin, kEnd, kTick, kOpEnd, kCycle };
  struct Event {
    Kind kind;
    int64_t ts_us = 0;
    std::string tensor;
    std::string name;   // span or tick name; the dtype for kOpEnd
    std::string shape;  // kOpEnd only
  };
  class Writer;  // one file's formatting state, owned by the writer thread

  void enqueue(Kind kind, const std::string& tensor, std::string name, std::string shape = {});
  void writer_loop(std::FILE* file, std::chrono::steady_clock::time_point start);
  void stop_locked();

  std::mutex control_mutex_;  // serialises start() and stop(); taken before mutex_
  std::thread writer_;

  std::mutex mutex_;  // guards everything below, shared by callers and the writer
  std::condition_variable wake_;
  std::deque<Event> queue_;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point start_time_;

  std::atomic<bool> active_{false};
  std::atomic<bool> mark_cycles_{false};
};

// `text` as the body of a JSON string: quotes, backslashes and control characters escaped, and
// each byte of malformed UTF-8 replaced by U+FFFD (strict readers reject the file otherwise).
std::string json_escape(const std::string& text);

}  // namespace hvdc::core

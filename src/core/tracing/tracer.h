// What the engine records in the timeline (rank 0 only): negotiation spans of cached tensors
// (the coordinator's controller records those of negotiated ones), and per executed tensor an
// op span holding QUEUE, the transport phase and any fusion-buffer copies. Engine thread, but
// start() and stop() may come from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/message.h"
#include "core/response_cache.h"
#include "core/tensor_queue.h"
#include "core/timeline.h"

namespace hvdc::core {

class Tracer {
 public:
  // mark_cycles: HVDC_TIMELINE_MARK_CYCLES (a mark per round that queued ops).
  explicit Tracer(bool mark_cycles) : mark_cycles_(mark_cycles) {}

  // Gives this rank a timeline (rank 0); returns it for the controller's negotiation spans.
  Timeline* open_timeline();
  // Starts (or switches) and stops writing; without a timeline they do nothing.
  Status start(const std::string& path);
  void stop();

  // A cached tensor's negotiation starts when the first rank reports it in a round and ends in
  // the round where every rank has; each rank's tick marks the round it reported in.
  void cached_negotiation(const ResponseCache& cache,
                          const std::vector<std::unique_ptr<RoundMessage>>& messages,
                          const std::vector<uint64_t>& hits);
  void queued(const std::vector<Response>& responses);
  // A cached op agreed on its set's board instead (the lane, core/lane/lane.h): its negotiation
  // span starts when this rank posts it, with this rank's tick, and ends when it is decided. On
  // a run every member posted (a tick each) and the op is queued as after a round; on a void the
  // span just ends, and the round that then agrees on the op records its own.
  void lane_posted(const Response& cached, int rank);
  void lane_decided(const Response& cached, bool run, const std::vector<int>& ranks, int rank);
  // The transport phase of an executed response: its start (begin) and end.
  void execute(const Response& response, bool begin);
  void done(const Response& response, const std::vector<TensorEntry>& entries);
  // Marks phases inside a collective (fusion-buffer copies); empty when not tracing.
  std::function<void(const char*, bool)> phases(const Response& response);

 private:
  bool tracing() const;
  void queue_one(const Response& response);  // its op span and QUEUE, if traced

  const bool mark_cycles_;
  std::unique_ptr<Timeline> timeline_;
  std::map<uint32_t, std::vector<bool>> traced_hits_;  // cached tensors in negotiation
};

}  // namespace hvdc::core

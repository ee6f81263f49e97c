// What the engine records in the timeline (tracer.h).
#include "core/tracing/tracer.h"

#include "common/dtype.h"

namespace hvdc::core {

Timeline* Tracer::open_timeline() {
  if (!timeline_) timeline_ = std::make_unique<Timeline>();
  return timeline_.get();
}

Status Tracer::start(const std::string& path) {
  if (!timeline_) return Status::ok();  // only rank 0 writes
  return timeline_->start(path, mark_cycles_);
}

void Tracer::stop() {
  if (timeline_) timeline_->stop();
}

bool Tracer::tracing() const {
  return timeline_ && timeline_->active();
}

namespace {

// The timeline shows the data collectives of the global set (names are unique only per set).
bool traced(const Response& r) {
  return r.kind == ResponseKind::kExecute && r.process_set == 0 &&
         static_cast<int>(r.op_type) <= static_cast<int>(OpType::kReducescatter);
}

}  // namespace

void Tracer::cached_negotiation(const ResponseCache& cache,
                                const std::vector<std::unique_ptr<RoundMessage>>& messages,
                                const std::vector<uint64_t>& hits) {
  if (!tracing()) return;
  for (size_t rank = 0; rank < messages.size(); ++rank) {
    const CacheBits* bits = nullptr;
    for (const CacheBits& b : messages[rank]->sets) {
      if (b.process_set == 0) bits = &b;
    }
    if (bits == nullptr) continue;
    for_each_set_bit(bits->hits, [&](uint32_t slot) {
      if (!cache.used(slot)) return;
      const Response& cached = cache.response(slot);
      auto [it, fresh] = traced_hits_.try_emplace(slot, messages.size(), false);
      if (fresh) timeline_->negotiate_start(cached.names[0], op_type_name(cached.op_type));
      if (!it->second[rank]) timeline_->negotiate_rank_ready(cached.names[0], rank);
      it->second[rank] = true;
    });
  }
  for (auto it = traced_hits_.begin(); it != traced_hits_.end();) {
    if (!test_bit(hits, it->first)) {
      ++it;
      continue;
    }
    timeline_->negotiate_end(cache.response(it->first).names[0]);
    it = traced_hits_.erase(it);
  }
}

void Tracer::queue_one(const Response& response) {
  if (!traced(response)) return;
  for (const std::string& name : response.names) {
    timeline_->op_start(name, op_type_name(response.op_type));
    timeline_->activity_start(name, "QUEUE");
  }
}

void Tracer::queued(const std::vector<Response>& responses) {
  if (!tracing()) return;
  if (mark_cycles_) timeline_->mark_cycle();
  for (const Response& r : responses) queue_one(r);
}

void Tracer::lane_posted(const Response& cached, int rank) {
  if (!tracing() || !traced(cached)) return;
  timeline_->negotiate_start(cached.names[0], op_type_name(cached.op_type));
  timeline_->negotiate_rank_ready(cached.names[0], rank);
}

void Tracer::lane_decided(const Response& cached, bool run, const std::vector<int>& ranks,
                          int rank) {
  if (!tracing() || !traced(cached)) return;
  const std::string& name = cached.names[0];
  if (run) {
    for (int r : ranks) {
      if (r != rank) timeline_->negotiate_rank_ready(name, r);
    }
  }
  timeline_->negotiate_end(name);
  if (!run) return;
  if (mark_cycles_) timeline_->mark_cycle();
  queue_one(cached);
}

void Tracer::execute(const Response& response, bool begin) {
  if (!tracing() || !traced(response)) return;
  static const char* const kPhase[] = {"UCX_ALLREDUCE", "UCX_ALLGATHER", "UCX_BROADCAST",
                                       "UCX_BARRIER",   "UCX_ALLTOALL",  "UCX_REDUCESCATTER"};
  for (const std::string& name : response.names) {
    if (begin) {
      timeline_->activity_end(name);  // QUEUE
      timeline_->activity_start(name, kPhase[static_cast<int>(response.op_type)]);
    } else {
      timeline_->activity_end(name);
    }
  }
}

void Tracer::done(const Response& response, const std::vector<TensorEntry>& entries) {
  if (!tracing() || !traced(response)) return;
  for (const TensorEntry& e : entries) {
    timeline_->op_end(e.request.name, common::dtype_name(e.request.dtype),
                      shape_string(e.request.shape));
  }
}

std::function<void(const char*, bool)> Tracer::phases(const Response& response) {
  if (!tracing() || !traced(response)) return nullptr;
  // By value: a backend may report phases after the response moved on.
  return [timeline = timeline_.get(), names = response.names](const char* phase, bool begin) {
    for (const std::string& name : names) {
      if (begin) {
        timeline->activity_start(name, phase);
      } else {
        timeline->activity_end(name);
      }
    }
  };
}

}  // namespace hvdc::core

// The negotiation half of the engine loop: ranks report newly submitted tensors to the
// coordinator (rank 0), which answers with ordered response lists.
#include "common/log.h"
#include "core/engine.h"

namespace hvdc::core {

using transport::make_tag;
using transport::TagKind;

bool Engine::report_local_requests() {
  std::vector<Request> fresh = queue_.pop_new();
  if (fresh.empty()) return false;
  if (controller_) {
    for (Request& r : fresh) controller_->add(topology_.rank, std::move(r));
    return true;
  }
  RequestList list;
  list.requests = std::move(fresh);
  Status st =
      transport_->send_message(0, make_tag(TagKind::kRequestList, topology_.rank, 0), encode(list));
  if (!st.is_ok()) terminate(st.with_context("reporting ready tensors to rank 0"), true);
  return true;
}

bool Engine::coordinate() {
  if (!controller_) return false;
  bool busy = false;
  transport::Tag tag;
  std::string bytes;
  while (transport_ && transport_->poll_message(make_tag(TagKind::kRequestList, 0, 0),
                                                transport::kTagKindMask, &tag, &bytes)) {
    busy = true;
    RequestList list;
    Status st = decode(bytes, &list);
    if (!st.is_ok()) {
      // Which tensors it named is unknown, so they could never complete: fail everything
      // rather than let the ranks wait.
      terminate(
          st.with_context(common::strfmt("request list from rank %d", transport::tag_source(tag))),
          true);
      return true;
    }
    for (Request& r : list.requests) controller_->add(transport::tag_source(tag), std::move(r));
  }
  ResponseList list;
  list.responses = controller_->take_ready();
  if (list.responses.empty()) return busy;
  if (transport_) {
    const std::string encoded = encode(list);
    for (int p = 1; p < topology_.size; ++p) {
      Status st = transport_->send_message(p, make_tag(TagKind::kResponseList, 0, 0), encoded);
      if (!st.is_ok()) {
        terminate(st.with_context("sending responses"), true);
        return true;
      }
    }
  }
  for (Response& r : list.responses) responses_.push_back(std::move(r));
  return true;
}

bool Engine::receive_responses() {
  if (controller_ || !transport_) return false;
  bool busy = false;
  transport::Tag tag;
  std::string bytes;
  while (transport_->poll_message(make_tag(TagKind::kResponseList, 0, 0), transport::kTagKindMask,
                                  &tag, &bytes)) {
    busy = true;
    ResponseList list;
    Status st = decode(bytes, &list);
    if (!st.is_ok()) {
      // Executing a partial list would desynchronize the ranks: give up on all of them.
      terminate(st.with_context("response list from rank 0"), true);
      return true;
    }
    for (Response& r : list.responses) responses_.push_back(std::move(r));
  }
  return busy;
}

}  // namespace hvdc::core

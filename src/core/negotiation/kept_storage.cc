// Storage the negotiation keeps between rounds, so that a warm step's round and its ops
// allocate (almost) nothing: receive buffers, round messages and their inbox entry, the round
// inputs of executed ops, and executed responses. Each is taken back only once nothing else
// holds it.
#include "core/negotiation/negotiation.h"

namespace hvdc::core {

namespace {

// Enough for the ops of a few rounds in flight; more are freed as usual.
constexpr size_t kKeptResponses = 16;
constexpr size_t kKeptRoundInputs = 8;

}  // namespace

// A receive buffer that no message's inputs view. Buffers are kept with their storage, so that a
// warm step's round message is received with no allocation; a round's inputs hold theirs
// until the ops that use them ran, hence a few of them.
const std::shared_ptr<std::string>& Negotiation::free_receive_buffer() {
  constexpr size_t kKept = 4;
  // Kept round inputs no op holds still name the buffers of the rounds they came with.
  for (const auto& inputs : round_inputs_) {
    if (inputs.use_count() == 1) inputs->keep.clear();
  }
  for (const auto& buffer : receive_buffers_) {
    if (buffer.use_count() == 1) return buffer;
  }
  if (receive_buffers_.size() == kKept) receive_buffers_.pop_back();
  receive_buffers_.insert(receive_buffers_.begin(), std::make_shared<std::string>());
  return receive_buffers_.front();
}

// A message to fill: a completed round's, with its storage, where one is kept.
std::unique_ptr<RoundMessage> Negotiation::fresh_message() {
  if (spare_messages_.empty()) return std::make_unique<RoundMessage>();
  std::unique_ptr<RoundMessage> msg = std::move(spare_messages_.back());
  spare_messages_.pop_back();
  return msg;
}

// The inbox entry of round `round`, a slot per rank.
std::vector<std::unique_ptr<RoundMessage>>& Negotiation::round_slots(uint64_t round) {
  auto it = inbox_.find(round);
  if (it != inbox_.end()) return it->second;
  if (spare_round_.empty()) {
    it = inbox_.emplace(round, std::vector<std::unique_ptr<RoundMessage>>()).first;
  } else {
    spare_round_.key() = round;
    it = inbox_.insert(std::move(spare_round_)).position;
  }
  it->second.resize(config_.size);
  return it->second;
}

// Keeps a completed round's inbox entry and messages for the next rounds, so that a warm step's
// round allocates neither. What a message views or negotiated goes now (inputs keep the
// received bytes alive); decode() overwrites the rest.
void Negotiation::recycle(RoundNode node) {
  for (std::unique_ptr<RoundMessage>& m : node.mapped()) {
    if (!m) continue;
    m->inputs.clear();
    m->responses.responses.clear();
    if (spare_messages_.size() < static_cast<size_t>(2 * config_.size)) {
      spare_messages_.push_back(std::move(m));  // leaves the slot empty, as reset() would
    } else {
      m.reset();
    }
  }
  if (!tree_ && node.mapped().size() == static_cast<size_t>(config_.size)) {
    spare_round_ = std::move(node);
  }
}

// Round inputs for a cached op: kept ones that no op holds any more, else new ones (kept while
// there is room).
std::shared_ptr<RoundInputs> Negotiation::spare_round_inputs() {
  for (const auto& inputs : round_inputs_) {
    if (inputs.use_count() == 1) return inputs;
  }
  auto inputs = std::make_shared<RoundInputs>();
  if (round_inputs_.size() < kKeptRoundInputs) round_inputs_.push_back(inputs);
  return inputs;
}

// A response to assign a cached one into: an executed one's storage, where one is kept.
Response Negotiation::spare_response() {
  if (spare_responses_.empty()) return Response();
  Response spare = std::move(spare_responses_.back());
  spare_responses_.pop_back();
  return spare;
}

void Negotiation::recycle_response(Response&& response) {
  if (spare_responses_.size() >= kKeptResponses) return;
  response.inputs.reset();  // their buffers go back to spare_round_inputs()
  response.lane = false;    // a spare is assigned whole, but not a moved-from one's flag
  spare_responses_.push_back(std::move(response));
}

}  // namespace hvdc::core

// Negotiation: how the ranks agree on what to execute, in which order. Tensors the response
// cache cannot settle go to their set's coordinator (negotiation.cc); rounds of agreement carry
// the coordinators' responses and the cache bits to every rank (rounds.cc), and every rank
// derives the same ordered list of responses from each completed round.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "core/engine_stats.h"
#include "core/message.h"
#include "core/negotiation/tree_rounds.h"
#include "core/process_set_table.h"
#include "core/set_state.h"
#include "core/tensor_queue.h"
#include "core/tracing/tracer.h"
#include "transport/transport.h"

namespace hvdc::core {

// Below this many ranks the all-to-all round (2 hops) is faster than the tree (3 log_k(n) + 1
// hops); measured in docs/performance.md ("Scale of agreement").
constexpr int kDefaultRoundTreeMinRanks = 64;
constexpr int kRoundTreeFanout = 8;

struct NegotiationConfig {
  int rank = 0;
  int size = 1;
  int timeout_seconds = 60;      // HVDC_TIMEOUT: a round without a peer's message this long fails
  int stall_check_seconds = 60;  // HVDC_STALL_CHECK_TIME: cached tensors waiting longer go to
                                 // the coordinator, which names the missing ranks
  size_t fusion_threshold = 2 << 20;
  // HVDC_ROUND_TREE_MIN_RANKS: from this many ranks on, rounds go up and down a tree
  // (tree_rounds.h) instead of from every rank to every rank.
  int round_tree_min_ranks = kDefaultRoundTreeMinRanks;
  int round_tree_fanout = kRoundTreeFanout;
  // HVDC_ROUND_INPUT_BYTES: the most input bytes of cached host allreduces a round message
  // carries (0: none); the ops they complete need no exchange of their own.
  size_t round_input_bytes = 4 << 10;
};

// What negotiation works on, owned by the engine (its passes only, one thread at a time).
struct NegotiationContext {
  transport::Transport* transport = nullptr;                     // null on a single rank
  std::map<int32_t, std::unique_ptr<SetState>>* sets = nullptr;  // this rank's process sets
  const ProcessSetTable* table = nullptr;                        // every set of the job
  TensorQueue* queue = nullptr;
  EngineStats* stats = nullptr;
  Tracer* tracer = nullptr;
  // Ends the engine's work on every rank (a peer's garbled message, a round that timed out).
  std::function<void(const Status&)> fail;
  const Status* terminated = nullptr;  // non-ok once the engine's work ended
  // Offered each cached request this rank submits (its slot in the set's cache): true if the lane
  // (lane/lane.h) took it, which then agrees on it without a round. Empty: none does.
  std::function<bool(SetState&, const Request&, uint32_t slot, const OpBuffers& buffers)>
      lane_offer;
};

class Negotiation {
 public:
  Negotiation(const NegotiationConfig& config, NegotiationContext context);
  ~Negotiation();
  // A round is under way: this rank's message for it is out, or a peer's came (taken from the
  // transport now).
  bool round_open();
  // The same as far as the last look at the transport (progress_rounds()) knows: no poll.
  bool round_under_way() const { return in_round_ || !inbox_.empty(); }
  // Whether rounds go through the tree (else all-to-all).
  bool uses_round_tree() const { return tree_ != nullptr; }

  // Reports the requests submitted since the last call: cached ones in the next round, the
  // others to their set's coordinator. True if there were any.
  bool report_local_requests();
  // Reports one request as report_local_requests() does (an op the lane voided).
  void report(Request request);
  // The calls below that take `now` are made on every pass of the engine's loop, which reads the
  // clock once per pass.
  using Clock = std::chrono::steady_clock;
  // As a coordinator: takes the peers' request lists and queues what its sets negotiated for the
  // next round. True if anything happened.
  bool coordinate(Clock::time_point now);
  // Sends cached tensors that wait past the stall check time to the coordinator instead.
  bool expose_stalled_hits(Clock::time_point now);
  // Takes round messages, joins or starts the next round, and appends each completed round's
  // responses (fused) to *agreed. True if anything happened.
  bool progress_rounds(std::deque<Response>* agreed, Clock::time_point now);
  // While ops wait, an empty round now and then tells a stopped peer from a busy one.
  void probe_liveness(std::chrono::steady_clock::time_point now,
                      std::chrono::steady_clock::duration oldest_age);
  // After a set's creation ran here: the requests that members which ran it sooner sent for it
  // go to its coordinator now.
  void release_early_requests();
  // An executed response, whose storage the next cached ones reuse (kept_storage.cc).
  void recycle_response(Response&& response);
  // Such storage (an empty response where none is kept).
  Response spare_response();
  // hvd_join was called here and its join has not completed: this rank contributes zeros.
  bool joined() const { return self_joined_; }
  void join_completed() { self_joined_ = false; }

 private:
  SetState* member_set(int32_t id);
  bool running() const { return ctx_.terminated->is_ok(); }
  // negotiation.cc
  // Moves `request` into *uncached unless the cache settles it.
  // `buffers`: the op's input and output, for the lane (null: not known).
  void report_request(Request& request, const OpBuffers& buffers,
                      std::map<SetState*, std::vector<Request>>* uncached);
  void send_uncached(SetState& set, std::vector<Request> requests);
  void add_remote_requests(int from, RequestList list);
  bool take_coordinated(SetState& set, Clock::time_point now);
  // kept_storage.cc
  using Inbox = std::map<uint64_t, std::vector<std::unique_ptr<RoundMessage>>>;
  using RoundNode = Inbox::node_type;
  const std::shared_ptr<std::string>& free_receive_buffer();
  std::unique_ptr<RoundMessage> fresh_message();
  std::vector<std::unique_ptr<RoundMessage>>& round_slots(uint64_t round);
  void recycle(RoundNode node);
  std::shared_ptr<RoundInputs> spare_round_inputs();
  // rounds.cc
  // Takes the peers' round messages that arrived into the inbox; true if there were any.
  bool receive_round_messages();
  std::unique_ptr<RoundMessage> build_round_message();
  // The message's inputs keep `bytes` alive.
  Status decode_round_message(std::shared_ptr<const std::string> bytes, RoundMessage* msg) const;
  void send_round_message();
  // Fills *bits with what this rank announces for `set`; false if nothing.
  bool announce_cache_bits(SetState& set, CacheBits* bits);
  void complete_round(std::deque<Response>* agreed);
  bool round_timed_out(const std::vector<std::unique_ptr<RoundMessage>>& messages,
                       Clock::time_point now);
  void agree_cached(SetState& set, const std::vector<std::unique_ptr<RoundMessage>>& messages,
                    const std::vector<Response>& negotiated, std::vector<Response>* cached);
  void take_cache_hits(SetState& set, const std::vector<uint64_t>& hits,
                       const std::vector<std::unique_ptr<RoundMessage>>& messages,
                       std::vector<Response>* out);
  void cache_responses(SetState& set, const std::vector<Response>& responses);
  void revalidate_pending_hits(SetState& set);
  void demote_unjoinable_hits(SetState& set);
  // round_inputs.cc
  size_t round_input_size(const SetState& set, const Request& r) const;
  void add_round_inputs(RoundMessage* mine);
  void attach_round_inputs(const SetState& set, uint32_t slot,
                           const std::vector<std::unique_ptr<RoundMessage>>& messages,
                           Response* cached);
  // rounds_by_tree.cc
  bool progress_tree_rounds(std::deque<Response>* agreed, Clock::time_point now);
  bool join_tree_round(uint64_t next, bool* busy);
  Status take_tree_round(uint64_t next, std::vector<TreeEntry> all);
  void check_tree_round_time(Clock::time_point now);

  const NegotiationConfig config_;
  NegotiationContext ctx_;
  uint64_t round_ = 0;         // rounds completed
  bool in_round_ = false;      // this rank's message for round_ + 1 is out
  bool round_wanted_ = false;  // something new to announce
  std::chrono::steady_clock::time_point round_started_;  // when this rank's message went out
  std::chrono::steady_clock::time_point last_round_done_;
  Inbox inbox_;
  // Completed rounds' messages and inbox entry, kept with their storage (recycle()).
  std::vector<std::unique_ptr<RoundMessage>> spare_messages_;
  RoundNode spare_round_;
  std::unique_ptr<TreeRounds> tree_;  // rounds up and down a tree; null: all-to-all
  struct AgreeBits {
    std::vector<uint64_t> hits, wanted, invalid;
  } agree_bits_;  // agree_cached()'s, reused
  // progress_rounds()' receive buffers (free_receive_buffer()).
  std::vector<std::shared_ptr<std::string>> receive_buffers_;
  std::vector<Request> fresh_requests_;   // report_local_requests()'s, kept for their storage
  std::vector<OpBuffers> fresh_buffers_;  // their buffers (TensorQueue::pop_new)
  std::vector<Response> round_list_, round_cached_;  // complete_round()'s, kept likewise
  // Executed responses and round inputs no op holds any more, kept for their storage
  // (recycle_response(), spare_round_inputs()).
  std::vector<Response> spare_responses_;
  std::vector<std::shared_ptr<RoundInputs>> round_inputs_;
  std::string round_out_;     // this rank's last round message, encoded (its storage is reused)
  bool tree_probed_ = false;  // the round in progress probed the ranks it lacks
  std::chrono::steady_clock::time_point next_stall_check_;
  bool warned_eviction_ = false;
  bool self_joined_ = false;
  // Requests for sets not created here yet, by set id and sender.
  std::map<int32_t, std::map<int, RequestList>> early_requests_;
};

}  // namespace hvdc::core

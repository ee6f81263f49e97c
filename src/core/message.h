// Negotiation messages: what a rank has ready (RequestList), what every rank executes and in
// which order (ResponseList), and the notice that a rank aborted or shut down (Terminate).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace hvdc::core {

using common::Status;

enum class OpType : int32_t {
  kAllreduce = 0,
  kAllgather = 1,
  kBroadcast = 2,
  kBarrier = 3,
  kAlltoall = 4,
  kReducescatter = 5,
  kJoin = 6,
  kProcessSetCreate = 7,  // on set 0; the request's shape carries the member ranks
  kProcessSetDestroy = 8  // on set 0; the request's root carries the set's id
};
constexpr int32_t kMaxOpType = 8;
const char* op_type_name(OpType type);  // "ALLREDUCE", ... (Horovod's spelling)
std::string op_label(OpType type);      // "allreduce", ...: for names and messages

// "[2, 3]": a shape as messages, logs and the timeline print it.
std::string shape_string(const std::vector<int64_t>& shape);

// Elements in a tensor of this shape from dimension `from` on (shapes were checked on submit).
size_t element_count(const std::vector<int64_t>& shape, size_t from = 0);

constexpr size_t kMaxNameLength = 4096;
// The op flags every rank must pass alike (HVD_OP_STREAM_ORDERED concerns only the caller's own
// stream, so it stays with the rank's tensor entry).
constexpr uint32_t kNegotiatedFlags = HVD_OP_HOST_PATH;
constexpr const char* kJoinName = "join";  // hvd_join's tensor name on every rank

// The parameters of an op that every rank must agree on and that every rank needs to run it:
// one struct, in the request a rank submits and in the response every rank executes.
struct OpParams {
  OpType op_type = OpType::kAllreduce;
  int32_t dtype = 0;
  int32_t reduce_op = 0;
  int32_t root = 0;
  int32_t device_type = 1;
  int32_t device_id = 0;
  double prescale = 1.0;
  double postscale = 1.0;
  // HVD_OP_* flags that change how every rank runs the op (kNegotiatedFlags): they must agree.
  uint32_t flags = 0;

  OpParams& params() { return *this; }
  const OpParams& params() const { return *this; }
};

struct Request : OpParams {
  std::string name;
  int32_t process_set = 0;
  std::vector<int64_t> shape;
};

struct RequestList {
  std::vector<Request> requests;
};

enum class ResponseKind : int32_t { kExecute = 0, kError = 1 };

// Every member's input to a cached host allreduce, carried by the round that agreed on it
// (rounds.cc), so that the members reduce without another exchange.
struct RoundInputs {
  // members[t][m]: tensor t's input (in the response's name order) on member m (in set order).
  std::vector<std::vector<const char*>> members;
  // What the views point into: the received round messages' bytes.
  std::vector<std::shared_ptr<const std::string>> keep;
};

// Its parameters (OpParams) are the first request's: what every rank needs to run the op without
// its own request (fusion, the cache). An error response carries only their op type.
struct Response : OpParams {
  ResponseKind kind = ResponseKind::kExecute;
  int32_t process_set = 0;
  std::vector<std::string> names;
  int32_t error_code = 0;
  std::string error_message;
  std::vector<int64_t> sizes;   // allgather: each rank's first dimension; set creation: ranks
  std::vector<int64_t> counts;  // elements of each named tensor (allreduce)
  // Not on the wire: every member's input, when they came with the round (null: they did not).
  std::shared_ptr<RoundInputs> inputs;
  // Not on the wire: agreed on the lane (lane/lane.h), by every member alike, which reduces it in
  // place among the ranks of one host whatever its size (HVDC_LOCAL_MIN_BYTES is for the others).
  bool lane = false;
};

// Bytes an allreduce response moves per rank (its fused size).
size_t response_bytes(const Response& response);

struct ResponseList {
  std::vector<Response> responses;
};

// One process set's part of a round message: which of the set's cached tensors the sender has
// ready and which of its cache entries it found stale.
struct CacheBits {
  int32_t process_set = 0;
  std::vector<uint64_t> hits;     // bit i: cache slot i is ready here
  std::vector<uint64_t> invalid;  // bit i: cache slot i no longer matches what was submitted
};

// A cached host allreduce's input, sent with the round in which the sender announces it ready.
// The sender's own message views the caller's buffer; a decoded one views the decoded bytes,
// which whoever decoded them keeps alive (owner) as long as the views are used.
struct RoundInput {
  int32_t process_set = 0;
  uint32_t slot = 0;  // the tensor's cache slot in that set
  const char* data = nullptr;
  uint32_t size = 0;
  std::shared_ptr<const std::string> owner;
};

// One round of agreement among the ranks (see rounds.cc): per process set of the sender, its
// cache bits, the responses it negotiated as the coordinator of some sets, and the inputs of
// small cached allreduces.
struct RoundMessage {
  uint64_t round = 0;
  std::vector<CacheBits> sets;  // only sets with a bit set
  int32_t joined = 0;           // 1: the sender has joined (hvd_join) and has no data
  ResponseList responses;       // negotiated by the sender as a coordinator
  std::vector<RoundInput> inputs;
};

// Rounds of agreement at scale go up and down a tree of the ranks (tree_rounds.cc) in these.
enum class TreeKind : int32_t {
  kWant = 0,         // rank -> root: this rank has something for round `round`
  kOpen = 1,         // parent -> children: round `round` is open, join it
  kUp = 2,           // child -> parent: the round messages of the child's subtree
  kDown = 3,         // parent -> children: every rank's round message; `open_next`
  kProbe = 4,        // a rank whose round waits too long -> a rank it lacks: are you alive?
  kProbeAnswer = 5,  // the answer, at once, from any live engine thread
};
constexpr int32_t kMaxTreeKind = 5;

// One rank's encoded RoundMessage, carried as bytes through the tree (decoded at the end).
struct TreeEntry {
  int32_t rank = 0;
  std::string bytes;
};

struct TreeMessage {
  TreeKind kind = TreeKind::kWant;
  uint64_t round = 0;
  int32_t open_next = 0;  // kDown: 1 when round + 1 is open too (saves an kOpen)
  std::vector<TreeEntry> entries;
};

struct Terminate {
  int32_t code = 0;  // HVD_ERR_ABORTED or HVD_ERR_SHUT_DOWN
  int32_t rank = -1;
  std::string reason;
  // Shutdown: collectives the sender completed, per process set it belongs to (pairs of set id
  // and count). Peers finish those too (their data is already on the way) before they give up
  // on the sender.
  std::vector<int64_t> completed_ops;
};

// A rank whose collective timed out, to every peer: the ranks it was still waiting for. The
// stalled ranks follow these reports to the rank(s) nobody heard from (see stall_agreement.cc).
struct StallReport {
  std::vector<int64_t> waiting_for;
};

std::string encode(const RequestList& list);
std::string encode(const ResponseList& list);
// Into `reuse`'s storage (the last message's encoding, say).
std::string encode(const RoundMessage& msg, std::string reuse = {});
std::string encode(const Terminate& msg);
std::string encode(const StallReport& msg);
std::string encode(const TreeMessage& msg);
Status decode(const std::string& bytes, RequestList* out);
Status decode(const std::string& bytes, ResponseList* out);
Status decode(const std::string& bytes, RoundMessage* out);  // out's inputs view bytes
Status decode(const std::string& bytes, Terminate* out);
Status decode(const std::string& bytes, StallReport* out);
Status decode(const std::string& bytes, TreeMessage* out);

// Decoding accepts any well-formed message; these check what the engine relies on when it acts
// on one from a peer, which a corrupt or hostile peer could otherwise break: a request's shape
// (dims >= 0; allgather, alltoall and reducescatter need a first dimension), a response's names
// (at least one), its error code (negative), and its counts and sizes (one count >= 0 per name
// for an allreduce, sizes >= 0). Checks against a process set (its size, membership) stay with
// the caller, which knows the set.
Status check_request(const Request& request);
Status check_response(const Response& response);

}  // namespace hvdc::core

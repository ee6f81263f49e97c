// The allreduce among ranks of one host that works on the peers' buffers in place: member m
// reduces chunk m of every member's input (mapped, or read through the kernel a segment at a
// time) and writes each finished segment into every member's output, its own and its peers'.
// Only tiny messages cross the transport: the buffer descriptions and one "written" notice.
// Large ops run as windows where a member copies its buffers through its stage, so that each
// window's copies and reduction stay in the cache.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/copy_bytes.h"
#include "common/dtype.h"
#include "common/log.h"
#include "ops/cpu/allreduce/allreduce.h"
#include "ops/cpu/allreduce/in_place_views.h"
#include "ops/cpu/allreduce/phases.h"
#include "ops/cpu/local/local_access.h"
#include "ops/cpu/local/peer_view.h"
#include "ops/cpu/local/stage.h"
#include "ops/cpu/local/stream_copy.h"
#include "ops/cpu/reduce/reduce.h"

namespace hvdc::ops::cpu {
namespace {

using common::make_error;
using local::Board;
using local::LocalAccess;
using local::PeerViews;
using local::SetAccess;
using local::Verdict;

// Steps far above the ring's (2(n - 1)), so that a fallback in the same op never shares a tag.
constexpr int kStepDescribe = 0x4000;
constexpr int kStepAgree = 0x4001;
constexpr int kStepWritten = 0x4002;

// Sends `bytes` of `mine` to every other member and receives theirs: member m's at
// all + m * bytes (this member's own slot is a copy of mine).
Status exchange_all(Comm& comm, int step, const char* mine, size_t bytes, std::vector<char>* all) {
  const int n = comm.size();
  all->resize(bytes * n);
  std::memcpy(all->data() + comm.index * bytes, mine, bytes);
  std::vector<transport::Request> reqs(2 * (n - 1));
  size_t r = 0;
  for (int m = 0; m < n; ++m) {
    if (m == comm.index) continue;
    HVDC_RETURN_IF_ERROR(comm.transport->irecv(comm.members[m], comm.tag(m, step),
                                               all->data() + m * bytes, bytes, &reqs[r++]));
    HVDC_RETURN_IF_ERROR(comm.transport->isend(comm.members[m], comm.tag(comm.index, step), mine,
                                               bytes, &reqs[r++]));
  }
  return comm.transport->wait(reqs.data(), r, comm.interrupt);
}

// A member's outcome as its peers hear it: the status code and the start of the message (which
// names the rank that failed, where one did), and whether it opened every peer's board.
struct Outcome {
  int32_t code;
  int32_t boards_open;
  char message[248];
};

// *agreed = mine if every member succeeded, else one naming the first member that failed, with
// that member's code and reason (outcome_of(m)): a peer failure seen by one member is a peer
// failure everywhere (fatal, so every rank's work ends).
template <typename OutcomeOf>
Status agree_outcomes(const Comm& comm, const Status& mine, const char* what,
                      OutcomeOf outcome_of) {
  for (int m = 0; m < comm.size() && mine.is_ok(); ++m) {
    if (m == comm.index) continue;
    const Status theirs = outcome_of(m);
    if (!theirs.is_ok()) {
      return make_error(theirs.code(), "rank %d could not %s: %s", comm.members[m], what,
                        theirs.message().c_str());
    }
  }
  return mine;
}

// Tells every member whether this one succeeded and hears from them. Returns the transport's
// failures; *agreed as agree_outcomes() says. *all_boards_open: every member opened every peer's
// board (this one: boards_open).
Status share_outcome(Comm& comm, int step, const Status& mine, const char* what, bool boards_open,
                     Status* agreed, bool* all_boards_open) {
  Outcome out{};
  out.code = mine.code();
  out.boards_open = boards_open ? 1 : 0;
  std::snprintf(out.message, sizeof out.message, "%s", mine.message().c_str());
  std::vector<char> all;
  HVDC_RETURN_IF_ERROR(
      exchange_all(comm, step, reinterpret_cast<const char*>(&out), sizeof out, &all));
  std::vector<Outcome> outcomes(comm.size());
  std::memcpy(outcomes.data(), all.data(), all.size());
  *all_boards_open = true;
  for (Outcome& o : outcomes) {
    o.message[sizeof o.message - 1] = '\0';
    *all_boards_open = *all_boards_open && o.boards_open != 0;
  }
  *agreed = agree_outcomes(comm, mine, what, [&](int m) {
    const Outcome& o = outcomes[m];
    return o.code == HVD_SUCCESS ? Status::ok()
                                 : Status(static_cast<hvd_status_t>(o.code), o.message);
  });
  return Status::ok();
}

// This member's buffers in one op: where it reads its input and writes its result (in, out),
// and what its peers read and write (shown_in, shown_out): the same views, or its stage, where
// the peers' chunks pass through while this member reduces its own chunk from and into its
// own buffers. stream_out: `out` is cold (output_reuse.h), and this member writes its own
// chunk there through non-temporal stores. The views are one window of an op of op_bytes;
// staging: this member copies the op through its stage (this window, or the later ones).
struct OwnBuffers {
  const Pieces& in;
  const Pieces& out;
  const Pieces& shown_in;
  const Pieces& shown_out;
  bool stream_out;
  size_t op_bytes;
  bool staging;
  bool staged() const { return &shown_out != &out; }
};

// What members learn from one window: whether it ran in place (the verdict allowed it), and
// whether some member stages the op (each reads every member's description, so all agree).
struct WindowOutcome {
  bool ran = false;
  bool staging = false;
};

// Whether any of the descriptions desc_of(m, &bytes) says its member stages.
template <typename DescOf>
bool any_staging(const Comm& comm, DescOf desc_of) {
  for (int m = 0; m < comm.size(); ++m) {
    size_t bytes = 0;
    const char* desc = desc_of(m, &bytes);
    if (local::described_staging(desc, bytes)) return true;
  }
  return false;
}

void log_fallback(LocalAccess& access, const Status& why) {
  if (access.fallback_logged) return;
  access.fallback_logged = true;
  HVDC_LOG_WARNING(
      "allreduces among the ranks of this host move through the transport instead of reading "
      "each other's memory in place: %s",
      why.message().c_str());
}

// The first op of a member set with a kind of access (kernel reads or mappings) tries it and
// the members agree; the verdict holds for the set's later ops.
Status decide(Comm& comm, LocalAccess& access, SetAccess& set, bool needs_cma,
              const std::vector<PeerViews>& views, Status opened, bool* use) {
  Verdict& verdict = needs_cma ? set.cma : set.mapping;
  *use = verdict == Verdict::kAllowed;
  if (verdict != Verdict::kUnknown) return Status::ok();
  for (int m = 0; m < comm.size() && opened.is_ok() && needs_cma; ++m) {
    if (m == comm.index) continue;
    opened = views[m].in.probe_cma(false);
    if (opened.is_ok()) opened = views[m].out.probe_cma(true);
  }
  if (opened.is_ok() && !access.reads_allowed) {
    opened = Status(HVD_ERR_UNSUPPORTED, "HVDC_PEER_READS=0 forbids it");
  }
  Status agreed;
  bool ignored = false;
  HVDC_RETURN_IF_ERROR(share_outcome(comm, kStepAgree, opened,
                                     "or may not read its local peers' memory", false, &agreed,
                                     &ignored));
  if (agreed.code() == HVD_ERR_PEER_FAILURE) return agreed;  // a peer died: no verdict
  verdict = agreed.is_ok() ? Verdict::kAllowed : Verdict::kRefused;
  if (!agreed.is_ok()) log_fallback(access, agreed);
  if (agreed.is_ok()) {
    HVDC_LOG_INFO("allreduces among %d ranks of this host read each other's %s in place",
                  comm.size(),
                  needs_cma ? "buffers (cross-memory attach)" : "hvd_mem_alloc buffers (mapped)");
  }
  *use = agreed.is_ok();
  return Status::ok();
}

// Where this member's own contribution to segment s comes from: its input in place, or a copy
// where the segment is staged, or where the sum (into its output) would overwrite it first.
const char* own_source(const Comm& comm, const Pieces& in, bool in_place, const Segment& s,
                       char* slot) {
  if (in_place) {
    if (s.staged) in.gather(s.offset, s.bytes, s.addr);
    if (comm.index < 2) return s.addr;
    common::copy_bytes(slot, s.addr, s.bytes);
    return slot;
  }
  if (const char* direct = in.contiguous(s.offset, s.bytes)) return direct;
  in.gather(s.offset, s.bytes, slot);
  return slot;
}

// Two members, each in place with nothing left to finish: the sum goes into both buffers in one
// pass, two stores per element (LocalAccess::one_pass_max_bytes says up to which op size).
// False where it does not apply.
bool reduce_into_both_in_place(const Comm& comm, const Segment& s,
                               const std::vector<const char*>& src, const std::vector<char*>& outs,
                               size_t esize, const ReduceSpec& spec) {
  const int me = comm.index, peer = 1 - me;
  if (comm.size() != 2 || spec.divisor > 1 || spec.postscale != 1.0) return false;
  if (src[me] != s.addr || src[peer] != outs[peer]) return false;  // not in place on both sides
  char* first = me == 0 ? s.addr : outs[0];
  char* second = me == 0 ? outs[1] : s.addr;
  return reduce_into_both(first, second, s.bytes / esize, spec.dtype, spec.op);
}

// Where every peer's output of segment s is mapped here: reduces the segment into s.addr and
// copies it to the peers' outputs a block at a time, each block while it is still in the first
// level cache, so that the peers' copies cost no second pass through memory (the sum's
// segment is larger than that cache); with `one_pass`, two members in place use one pass
// instead (reduce_into_both_in_place). With `stream_own`, each block is reduced into a
// scratch block instead and streamed to this member's own output (s.addr). Returns false,
// touching nothing, if some output is not mapped (the kernel's copies are worth their call only
// by the segment).
bool reduce_into_mapped(const Comm& comm, const Segment& s, const std::vector<PeerViews>& views,
                        const std::vector<const char*>& src, size_t esize, const ReduceSpec& spec,
                        bool one_pass, bool stream_own) {
  const int n = comm.size();
  std::vector<char*>& outs = comm.local->mapped_outputs;
  outs.assign(n, nullptr);
  for (int m = 0; m < n; ++m) {
    if (m == comm.index) continue;
    outs[m] = const_cast<char*>(views[m].out.mapped(s.offset, s.bytes));
    if (outs[m] == nullptr) return false;
  }
  if (one_pass && reduce_into_both_in_place(comm, s, src, outs, esize, spec)) return true;
  const size_t block = std::max(esize, comm.local->block_bytes - comm.local->block_bytes % esize);
  std::vector<char>& scratch = comm.local->sum;
  if (stream_own && scratch.size() < block) scratch.resize(block);
  for (size_t at = 0; at < s.bytes; at += block) {
    const size_t bytes = std::min(block, s.bytes - at);
    char* sum = stream_own ? scratch.data() : s.addr + at;
    reduce_in_member_order(
        sum, n, [&](int m) { return src[m] + at; }, bytes / esize, spec);
    for (int m = 0; m < n; ++m) {
      if (outs[m] != nullptr) common::copy_bytes(outs[m] + at, sum, bytes);
    }
    if (stream_own) local::stream_copy(s.addr + at, sum, bytes);
  }
  return true;
}

// Reduces this member's chunk of every member's input, in member order, finishes it (average,
// postscale) and writes it into every member's output. No other member touches this chunk of
// any buffer, in place or not, so no peer's own work can race with these writes. With
// `stream_own` (a cold output, out of place) this member's own output is written through
// non-temporal stores. The choices by size look at the whole op (op_bytes), not the window.
Status reduce_own_chunk(Comm& comm, const Pieces& in, const Pieces& out, const Chunks& ch,
                        const std::vector<PeerViews>& views, bool mapped, bool stream_own,
                        size_t op_bytes, const ReduceSpec& spec) {
  const int n = comm.size();
  const int me = comm.index;
  const SegmentLimits limits = reduce_limits(comm, ch.esize);
  std::vector<Segment>& segs = comm.local->segments;
  split_segments(out, ch.offset(me), ch.bytes(me), limits, &segs);
  place_staged(segs, comm.staging_bytes(staged_bytes(segs)));
  // A page more per slot, so that each read through the kernel can land at its source's page
  // offset (PeerView::page_offset).
  const size_t slot_bytes = limits.max_staged + local::kPageBytes;
  std::vector<char>& bounce = comm.local->bounce;
  if (bounce.size() < n * slot_bytes + local::kPageBytes) {
    bounce.resize(n * slot_bytes + local::kPageBytes);
  }
  char* slots = bounce.data() + (local::kPageBytes -
                                 reinterpret_cast<uintptr_t>(bounce.data()) % local::kPageBytes);
  const bool in_place = same_pieces(in, out);  // the views of one op have equal piece sizes
  // Out of place and large, no output line is cached, and a normal store reads its line from
  // memory first: the sum goes to a cache-sized scratch and is streamed to every output
  // instead. In place the lines were just read, so normal stores cost nothing extra; and where
  // some buffer is reached through the kernel, streaming measured slower (docs/performance.md).
  const bool stream = mapped && !in_place && op_bytes >= comm.local->stream_min_bytes;
  const bool one_pass = op_bytes <= comm.local->one_pass_max_bytes;
  std::vector<char>& scratch = comm.local->sum;
  if ((stream || stream_own) && scratch.size() < limits.max_direct) {
    scratch.resize(limits.max_direct);
  }
  std::vector<const char*>& src = comm.local->sources;
  src.assign(n, nullptr);
  for (const Segment& s : segs) {
    for (int m = 0; m < n; ++m) {
      char* slot = slots + m * slot_bytes;
      if (m == me) {
        src[m] = own_source(comm, in, in_place, s, slot);
      } else if ((src[m] = views[m].in.mapped(s.offset, s.bytes)) == nullptr) {
        const size_t page_offset = views[m].in.page_offset(s.offset);
        slot += page_offset - page_offset % ch.esize;  // the kernels read whole elements
        HVDC_RETURN_IF_ERROR(views[m].in.read(s.offset, s.bytes, slot));
        src[m] = slot;
      }
    }
    if (!stream && reduce_into_mapped(comm, s, views, src, ch.esize, spec, one_pass,
                                      stream_own && !s.staged)) {
      if (s.staged) out.scatter(s.offset, s.bytes, s.addr);
      continue;
    }
    const size_t count = s.bytes / ch.esize;
    char* sum = (stream || stream_own) && !s.staged ? scratch.data() : s.addr;
    reduce_in_member_order(
        sum, n, [&](int m) { return src[m]; }, count, spec);
    for (int m = 0; m < n; ++m) {
      if (m != me) HVDC_RETURN_IF_ERROR(views[m].out.write(s.offset, s.bytes, sum, stream));
    }
    if (sum != s.addr) local::stream_copy(s.addr, sum, s.bytes);
    if (s.staged) out.scatter(s.offset, s.bytes, s.addr);
  }
  if (stream || stream_own) local::stream_fence();  // before the "written" notice
  return Status::ok();
}

// The reduction once the views are open and the verdict is known; what this member tells the
// others when it is done.
Status reduce_opened(Comm& comm, const OwnBuffers& own, const ReduceSpec& spec,
                     const std::vector<PeerViews>& views, bool needs_cma, const Status& opened) {
  if (!opened.is_ok()) return opened;
  const Chunks ch = make_chunks(own.out, comm.size(), common::dtype_size(spec.dtype));
  // A staged member's own buffers are its heap's, where streaming measured slower.
  return reduce_own_chunk(comm, own.in, own.out, ch, views, !needs_cma && !own.staged(),
                          own.stream_out, own.op_bytes, spec);
}

// The buffers a description names where it can be kept on the board (board.h): one tensor's
// input and output, one piece each, the whole op in one window, shown to the peers as they are.
// Their description is then the same op after op while no region is allocated or freed in the
// process, which the board checks before a post names it; only the cut of an op of more than a
// window changes, after an op that some member staged (note_described). A staged op's exchange
// is its members' meeting after each copied its input into its stage: it cannot be skipped.
ops::LaneBuffer kept_buffer(const OwnBuffers& own) {
  if (own.in.count() != 1 || own.out.count() != 1 || own.op_bytes != own.out.bytes() ||
      own.staged()) {
    return {};
  }
  return {own.in.piece(0).data, own.out.piece(0).data, own.out.bytes()};
}

// What the op leaves described on the board, for the lane's next post to name (board.h): its
// kept buffers, where it ran. Where some member staged, the set's next op of more than a window
// is cut into windows from its start (SetAccess::last_op_staging), which no kept description
// names: no area then names buffers of more than a window.
void note_described(Board& board, const ops::LaneBuffer& kept, const local::OwnDescription& mine,
                    const WindowOutcome& outcome, bool ran, size_t window_bytes) {
  if (outcome.staging) board.forget_every_described(window_bytes);
  if (ran && kept.data != nullptr && (!outcome.staging || kept.bytes <= window_bytes)) {
    board.note_described(kept, mine.regions);
  } else {
    board.forget_described();
  }
}

// The descriptions' exchange on the boards, or none where every member posted this lane op as
// described already (board.h). Then `mine` must be what this member's board holds, as the
// peers read that one: where it is not, *broken says so, for the op's outcome.
Status exchange_descriptions(Comm& comm, Board& board, const ops::LaneBuffer& kept,
                             const std::string& mine, uint64_t op, Status* broken) {
  if (!comm.lane || !board.take_described_run()) {
    board.post_description(mine, op, kept);
    return board.wait(comm, /*written=*/false, op);
  }
  if (!board.holds_description(mine)) {
    *broken = make_error(HVD_ERR_INTERNAL,
                         "rank %d posted a lane allreduce as described already, but its "
                         "description changed",
                         comm.members[comm.index]);
  }
  return Status::ok();
}

// The op with both exchanges on the members' boards (board.h).
Status reduce_on_board(Comm& comm, const OwnBuffers& own, const ReduceSpec& spec,
                       const local::OwnDescription& mine, SetAccess& set, WindowOutcome* outcome) {
  LocalAccess& access = *comm.local;
  Board& board = *set.board;
  const uint64_t op = board.next_op();
  Status broken;
  const ops::LaneBuffer kept_as = kept_buffer(own);
  HVDC_RETURN_IF_ERROR(exchange_descriptions(comm, board, kept_as, mine.encoded, op, &broken));
  outcome->staging =
      any_staging(comm, [&](int m, size_t* bytes) { return board.description(m, bytes); });
  Status opened;
  const local::OpenedViews& kept = board_views(comm, own.shown_out, set, board, &opened);
  const std::vector<PeerViews>& views = kept.views;
  const bool needs_cma = kept.need_cma;
  bool use = false;
  HVDC_RETURN_IF_ERROR(decide(comm, access, set, needs_cma, views, opened, &use));
  // A member whose description changed reduces nothing (its views may be of another buffer)
  // and fails the op; the peers hear of it with the outcome.
  const Status st = !broken.is_ok() ? broken
                    : use           ? reduce_opened(comm, own, spec, views, needs_cma, opened)
                                    : opened;
  // Also when the verdict turned this op away: no member may post its next description while
  // another still reads this one.
  board.post_outcome(st, op);
  HVDC_RETURN_IF_ERROR(board.wait(comm, /*written=*/true, op));
  note_described(board, kept_as, mine, *outcome, use && st.is_ok(), access.window_bytes);
  outcome->ran = use;
  if (!use) return Status::ok();
  return agree_outcomes(comm, st, "reduce its part and write it in place",
                        [&](int m) { return board.outcome(m); });
}

// The set's board, created on its first op; a set whose board cannot be had keeps to the
// transport's exchanges, and says so once.
void ensure_board(const Comm& comm, SetAccess& set) {
  if (set.board || set.board_failed) return;
  auto board = std::make_unique<Board>(comm.size(), comm.index);
  Status st = board->create();
  if (st.is_ok()) {
    set.board = std::move(board);
    return;
  }
  set.board_failed = true;
  HVDC_LOG_WARNING("%s; the in-place allreduce exchanges its notices through the transport",
                   st.message().c_str());
}

// The whole op on the views given: the descriptions, the verdict, the reduction, the notice,
// exchanged through the transport until every member has opened every peer's board, then on
// the boards.
Status reduce_in_place(Comm& comm, const OwnBuffers& own, const ReduceSpec& spec, SetAccess& set,
                       WindowOutcome* outcome) {
  LocalAccess& access = *comm.local;
  ensure_board(comm, set);
  const local::OwnDescription& described =
      describe_mine(own.shown_in, own.shown_out, own.staging, set);
  const std::string& mine = described.encoded;
  if (set.board && set.board->ready && set.board->fits(mine.size())) {
    return reduce_on_board(comm, own, spec, described, set, outcome);
  }
  std::vector<char> all;
  HVDC_RETURN_IF_ERROR(exchange_all(comm, kStepDescribe, mine.data(), mine.size(), &all));
  std::vector<DescriptionAt> descs(comm.size());
  for (int m = 0; m < comm.size(); ++m) descs[m] = {all.data() + m * mine.size(), mine.size()};
  std::vector<PeerViews> views;
  bool needs_cma = false;
  Status opened;
  open_views(comm, own.shown_out, descs, set.board.get(), &views, &needs_cma, &opened);
  auto desc_of = [&](int m, size_t* bytes) {
    *bytes = descs[m].second;
    return descs[m].first;
  };
  outcome->staging = any_staging(comm, desc_of);
  // The next op of more than a window is cut into windows: no description kept on the board
  // names one (note_described).
  if (outcome->staging && set.board) set.board->forget_every_described(access.window_bytes);
  bool use = false;
  HVDC_RETURN_IF_ERROR(decide(comm, access, set, needs_cma, views, opened, &use));
  if (!use) return Status::ok();
  outcome->ran = true;
  const Status st = reduce_opened(comm, own, spec, views, needs_cma, opened);
  // Every member's output is complete, and no member reads any buffer again, only once every
  // member has written its chunk everywhere.
  Status agreed;
  bool boards = false;
  HVDC_RETURN_IF_ERROR(share_outcome(comm, kStepWritten, st,
                                     "reduce its part and write it in place",
                                     set.board && set.board->peers_open(), &agreed, &boards));
  if (boards) set.board->ready = true;
  return agreed;
}

// Copies every byte of `from` into `to` except member `me`'s chunk; with `stream`, through
// non-temporal stores, fenced.
void copy_other_chunks(const Pieces& from, const Pieces& to, const Chunks& ch, int me,
                       bool stream) {
  auto copy = [&](size_t offset, size_t len) {
    if (!stream) return from.copy_to(to, offset, len);
    from.for_each_with(to, offset, len, [](const char* src, char* dst, size_t n) {
      local::stream_copy(dst, src, n);
    });
  };
  copy(0, ch.offset(me));
  const size_t end = ch.offset(me) + ch.bytes(me);
  copy(end, from.bytes() - end);
  if (stream) local::stream_fence();
}

// One window of an op of op_bytes (the whole op where it is one window).
Status reduce_window(Comm& comm, const Pieces& in, const Pieces& out, const ReduceSpec& spec,
                     size_t op_bytes, SetAccess& set, WindowOutcome* outcome) {
  LocalAccess& access = *comm.local;
  // Out of place, a cold output (one this rank wrote long ago) is written past the cache.
  const bool stream_out = !same_pieces(in, out) && access.reuse.cold(out);
  access.reuse.written(out);
  // Where a piece lies is looked up once per window, for both questions.
  const bool heap = out.bytes() > 0 && local::needs_stage(in, out);
  const bool staging = heap && local::stage_holds_windows(access);
  Pieces staged;
  if (heap && local::stage_fits(access, out.bytes())) {
    // Staging is this member's own choice (it only changes the views it describes), so a stage
    // that cannot be mapped leaves this op on the heap buffers instead of failing it.
    Status st = local::stage_view(access, out, &staged);
    if (!st.is_ok()) {
      HVDC_LOG_WARNING("%s; this allreduce reads the heap buffers instead", st.message().c_str());
      access.stage_max_bytes = 0;
    }
  }
  if (staged.bytes() == 0) {
    return reduce_in_place(comm, {in, out, in, out, stream_out, op_bytes, staging}, spec, set,
                           outcome);
  }
  // The peers read their chunks of this member's input from the stage and write their results
  // there; this member reduces its own chunk from its input into its output directly.
  const Chunks ch = make_chunks(out, comm.size(), common::dtype_size(spec.dtype));
  copy_other_chunks(in, staged, ch, comm.index, false);
  HVDC_RETURN_IF_ERROR(reduce_in_place(
      comm, {in, out, staged, staged, stream_out, op_bytes, staging}, spec, set, outcome));
  if (outcome->ran) copy_other_chunks(staged, out, ch, comm.index, stream_out);
  return Status::ok();
}

// The window length of an op: about window_bytes, in whole pages, the windows of even length
// but the last.
size_t window_of(const LocalAccess& access, size_t op_bytes) {
  if (op_bytes <= access.window_bytes) return op_bytes;
  const size_t windows = (op_bytes + access.window_bytes - 1) / access.window_bytes;
  const size_t even = (op_bytes + windows - 1) / windows;
  return (even + local::kPageBytes - 1) / local::kPageBytes * local::kPageBytes;
}

}  // namespace

Status allreduce_in_place_local(Comm& comm, const Pieces& in, const Pieces& out,
                                const ReduceSpec& spec, size_t* done) {
  *done = 0;
  LocalAccess& access = *comm.local;
  // Looked up once per op: the set's verdicts, board and description live here.
  SetAccess& set = access.sets[comm.members];
  set.first_op_done = true;
  if (set.cma == Verdict::kRefused && set.mapping == Verdict::kRefused) return Status::ok();
  const size_t bytes = out.bytes();
  // Windows pay off where a member copies through its stage, which holds one window, so that
  // the copies and the reduction stay in the cache; elsewhere each window only costs the
  // members two more exchanges. Whether some member stages is known once the descriptions of
  // the first window are read: the set's last op tells whether to cut that one short.
  const size_t window = set.last_op_staging ? window_of(access, bytes) : bytes;
  bool windowed = true;
  while (*done < bytes) {
    const size_t len = windowed ? std::min(window, bytes - *done) : bytes - *done;
    WindowOutcome outcome;
    const Status st = len == bytes
                          ? reduce_window(comm, in, out, spec, bytes, set, &outcome)
                          : reduce_window(comm, in.slice(*done, len), out.slice(*done, len), spec,
                                          bytes, set, &outcome);
    // Known to every member once the descriptions were read, whatever came after.
    if (*done == 0) windowed = set.last_op_staging = outcome.staging;
    HVDC_RETURN_IF_ERROR(st);
    if (!outcome.ran) return Status::ok();
    *done += len;
  }
  return Status::ok();
}

}  // namespace hvdc::ops::cpu

// Mode "lane": allreduces that the ranks of one host agree on through their set's board instead
// of a negotiation round (src/core/lane/lane.h): a loop that waits for each op, the way the lane
// is taken, with every result checked exactly; and the cases the lane must hand to the
// negotiation: ops that differ between ranks (other names first, other metadata), other ops in
// flight, collectives that never take the lane between lane ops. HVDC_LANE=0 (the lane-off run)
// must show a round for every op of a tight loop, the default run far fewer rounds than ops,
// also where odd ranks come late to every op (the early ones sleep with their posts held).
// Then the ops that a driving caller leaves to the engine thread (test_hand_over.cc).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "harness.h"
#include "suites.h"

namespace hvdc_test {
namespace {

// The lane takes an allreduce of one host's ranks of any size, and runs it in place whatever
// HVDC_LOCAL_MIN_BYTES says; most cases use 64 KiB, test_small_ops the rest.
constexpr size_t kLaneFloats = 16 << 10;  // 64 KiB

uint64_t rounds_so_far() {
  hvd_stats_t s;
  std::memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  return hvd_stats_get(&s) == HVD_SUCCESS ? s.rounds : 0;
}

// Float32 allreduce of `input` (count elements) into `output` under `name`; waits.
hvd_status_t allreduce_into(float* input, float* output, size_t count, const std::string& name,
                            int32_t op) {
  int64_t shape[1] = {static_cast<int64_t>(count)};
  hvd_tensor_t t = {input, HVD_FLOAT32, 1, shape, {HVD_DEVICE_CPU, 0}};
  hvd_handle_t h = 0;
  hvd_status_t s = hvd_allreduce_async(&t, output, op, name.c_str(), nullptr, &h);
  if (s == HVD_SUCCESS) s = hvd_wait(h);
  hvd_handle_free(h);
  return s;
}

hvd_status_t allreduce_in_place(float* data, size_t count, const std::string& name, int32_t op) {
  return allreduce_into(data, data, count, name, op);
}

// Element i of rank r's input in step `step`: small integers, so every sum is exact.
float input_value(int r, size_t i, int step) {
  return static_cast<float>((r + 1) * ((i + step) % 7));
}

// Whether data holds the SUM over ranks of input_value; *detail names the first wrong element.
bool check_sum(const float* data, size_t count, int step, std::string* detail) {
  for (size_t i = 0; i < count; ++i) {
    float want = 0;
    for (int r = 0; r < hvd_size(); ++r) want += input_value(r, i, step);
    if (data[i] != want) {
      *detail = "element " + std::to_string(i) + ": " + std::to_string(data[i]) + ", want " +
                std::to_string(want);
      return false;
    }
  }
  return true;
}

void fill(float* data, size_t count, int step) {
  for (size_t i = 0; i < count; ++i) data[i] = input_value(hvd_rank(), i, step);
}

// A loop that waits for each op, on a buffer from hvd_mem_alloc (the peers map it) or the heap.
void wait_loop(Results& results, const char* label, float* data, size_t count, int steps) {
  bool ok = true;
  std::string detail;
  for (int step = 0; step < steps && ok; ++step) {
    fill(data, count, step);
    const hvd_status_t s =
        allreduce_in_place(data, count, std::string("lane.") + label, HVD_OP_SUM);
    ok = s == HVD_SUCCESS && check_sum(data, count, step, &detail);
    if (s != HVD_SUCCESS) detail = "step " + std::to_string(step) + ": " + status_text(s);
  }
  record(results, std::string("lane.") + label, ok, detail);
}

bool lane_enabled() {
  const char* v = std::getenv("HVDC_LANE");
  return v == nullptr || std::strcmp(v, "0") != 0;
}

// `count` floats from hvd_mem_alloc; null (and case `name` failed) if it refused.
float* shared_floats(Results& results, const char* name, size_t count = kLaneFloats) {
  void* shared = nullptr;
  if (hvd_mem_alloc(count * sizeof(float), &shared) == HVD_SUCCESS) {
    return static_cast<float*>(shared);
  }
  record(results, name, false, hvd_last_error_message());
  return nullptr;
}

void test_wait_loops(Results& results) {
  constexpr int kSteps = 300;
  float* shared = shared_floats(results, "lane.mem-alloc");
  if (shared == nullptr) return;
  wait_loop(results, "mem-alloc", shared, kLaneFloats, kSteps);
  hvd_mem_free(shared);
  // Odd sizes on the heap, through the stage.
  std::vector<float> heap(kLaneFloats * 4 + 3);
  wait_loop(results, "heap", heap.data(), heap.size(), kSteps);
}

// `ops` allreduces of `count` floats taking the maximum in place under `name` (so that every op
// after the first holds the same values), odd ranks sleeping late_us before each; records whether
// the result is right and returns the most rounds a rank took for them (-1 if they did not run).
int64_t max_loop(Results& results, const std::string& name, int ops, int late_us,
                 size_t count = kLaneFloats) {
  float* data = shared_floats(results, name.c_str(), count);
  if (data == nullptr) return -1;
  fill(data, count, 0);
  const uint64_t before = rounds_so_far();
  hvd_status_t s = HVD_SUCCESS;
  for (int op = 0; op < ops && s == HVD_SUCCESS; ++op) {
    if (late_us > 0 && hvd_rank() % 2 == 1) usleep(late_us);
    s = allreduce_in_place(data, count, name, HVD_OP_MAX);
  }
  const uint64_t rounds = rounds_so_far() - before;
  std::string detail = status_text(s);
  bool ok = s == HVD_SUCCESS;
  for (size_t i = 0; ok && i < count; ++i) {
    ok = data[i] == input_value(hvd_size() - 1, i, 0);
    if (!ok) detail = "element " + std::to_string(i) + ": " + std::to_string(data[i]);
  }
  hvd_mem_free(data);
  record(results, name + "-results", ok, detail);
  // Every rank must agree: the lane is the set's, never one rank's.
  const int64_t most = all_max(static_cast<int64_t>(rounds), name + ".rounds");
  if (hvd_rank() == 0) {
    std::printf("%s: %lld rounds for %d ops at np %d\n", name.c_str(), static_cast<long long>(most),
                ops, hvd_size());
  }
  return most;
}

// Off, every op of such a loop needs a round; on, the lane takes most: fewer than `most_rounds`.
void record_rounds(Results& results, const std::string& name, int64_t rounds, int ops,
                   int64_t most_rounds) {
  if (rounds < 0) return;
  const bool ok = lane_enabled() ? rounds < most_rounds : rounds >= ops;
  record(results, name, ok,
         std::to_string(rounds) + " rounds for " + std::to_string(ops) + " ops, HVDC_LANE " +
             (lane_enabled() ? "on" : "off"));
}

// Whether the lane takes the ops of a loop that does nothing between its ops.
void test_lane_taken(Results& results) {
  constexpr int kOps = 500;
  record_rounds(results, "lane.taken", max_loop(results, "lane.taken", kOps, 0), kOps, kOps / 4);
}

// Small ops take the lane too: fewer elements than members (members that own no chunk), a
// 4 KiB op, odd counts, on the heap (through the stage) and on hvd_mem_alloc buffers, each result
// checked; and a loop of 4 KiB ops needs far fewer rounds than ops (all of them, lane off).
void test_small_ops(Results& results) {
  constexpr int kSteps = 100;
  for (size_t count : {size_t{1}, size_t{2}, size_t{3}, size_t{5}, size_t{1024}, size_t{1027}}) {
    const std::string label = "small-" + std::to_string(count);
    std::vector<float> heap(count);
    wait_loop(results, (label + "-heap").c_str(), heap.data(), count, kSteps);
    float* shared = shared_floats(results, ("lane." + label + "-mem-alloc").c_str(), count);
    if (shared == nullptr) continue;
    wait_loop(results, (label + "-mem-alloc").c_str(), shared, count, kSteps);
    hvd_mem_free(shared);
  }
  constexpr int kOps = 500;
  record_rounds(results, "lane.small-taken", max_loop(results, "lane.small-taken", kOps, 0, 1024),
                kOps, kOps / 4);
}

// Odd ranks come 3 ms after the others to every op, far past the spin after which an engine
// thread sleeps: the early ranks sleep with their posts held, and the late ones wake them when
// they decide, so the lane still takes most ops.
void test_late_ranks(Results& results) {
  constexpr int kOps = 30;
  record_rounds(results, "lane.late-ranks", max_loop(results, "lane.late", kOps, 3000), kOps,
                kOps / 2);
}

// Two ops in flight, submitted in another order on odd ranks: each rank may post its first op
// alone, and the posts differ; the negotiation runs both.
void test_other_order(Results& results) {
  bool ok = true;
  std::string detail;
  std::vector<float> a(kLaneFloats), b(kLaneFloats + 5);
  for (int step = 0; step < 40 && ok; ++step) {
    fill(a.data(), a.size(), step);
    fill(b.data(), b.size(), step + 1);
    int64_t shape_a[1] = {static_cast<int64_t>(a.size())};
    int64_t shape_b[1] = {static_cast<int64_t>(b.size())};
    hvd_tensor_t ta = {a.data(), HVD_FLOAT32, 1, shape_a, {HVD_DEVICE_CPU, 0}};
    hvd_tensor_t tb = {b.data(), HVD_FLOAT32, 1, shape_b, {HVD_DEVICE_CPU, 0}};
    hvd_handle_t ha = 0, hb = 0;
    hvd_status_t sa = HVD_SUCCESS, sb = HVD_SUCCESS;
    if (hvd_rank() % 2 == 0) {
      sa = hvd_allreduce_async(&ta, a.data(), HVD_OP_SUM, "lane.order.a", nullptr, &ha);
      sb = hvd_allreduce_async(&tb, b.data(), HVD_OP_SUM, "lane.order.b", nullptr, &hb);
    } else {
      sb = hvd_allreduce_async(&tb, b.data(), HVD_OP_SUM, "lane.order.b", nullptr, &hb);
      sa = hvd_allreduce_async(&ta, a.data(), HVD_OP_SUM, "lane.order.a", nullptr, &ha);
    }
    if (sa == HVD_SUCCESS) sa = hvd_wait(ha);
    if (sb == HVD_SUCCESS) sb = hvd_wait(hb);
    hvd_handle_free(ha);
    hvd_handle_free(hb);
    ok = sa == HVD_SUCCESS && sb == HVD_SUCCESS && check_sum(a.data(), a.size(), step, &detail) &&
         check_sum(b.data(), b.size(), step + 1, &detail);
    if (sa != HVD_SUCCESS || sb != HVD_SUCCESS) detail = status_text(sa) + " / " + status_text(sb);
  }
  record(results, "lane.other-order", ok, detail);
}

// Lane ops between other collectives (a broadcast, which never takes the lane, and a small
// allreduce of another name, which takes it too): every result right, in every order.
void test_between_other_collectives(Results& results) {
  bool ok = true;
  std::string detail;
  std::vector<float> big(kLaneFloats), small(16);
  for (int step = 0; step < 60 && ok; ++step) {
    fill(big.data(), big.size(), step);
    hvd_status_t s = allreduce_in_place(big.data(), big.size(), "lane.between", HVD_OP_SUM);
    ok = s == HVD_SUCCESS && check_sum(big.data(), big.size(), step, &detail);
    if (!ok) break;
    if (step % 3 == 0) {
      float value = hvd_rank() == 0 ? static_cast<float>(step) : -1.0f;
      int64_t shape[1] = {1};
      hvd_tensor_t t = {&value, HVD_FLOAT32, 1, shape, {HVD_DEVICE_CPU, 0}};
      hvd_handle_t h = 0;
      s = hvd_broadcast_async(&t, &value, 0, "lane.between.bcast", nullptr, &h);
      if (s == HVD_SUCCESS) s = hvd_wait(h);
      hvd_handle_free(h);
      ok = s == HVD_SUCCESS && value == static_cast<float>(step);
    } else {
      s = allreduce_constant("lane.between.small", HVD_OP_SUM, small.size(), 1.0f, &small);
      ok = s == HVD_SUCCESS && small[0] == static_cast<float>(hvd_size());
    }
    if (!ok) detail = "step " + std::to_string(step) + ": " + status_text(s);
  }
  record(results, "lane.between-other-collectives", ok, detail);
}

// Once cached, the last rank submits the name with another size: every rank gets the mismatch
// from the negotiation, and the next op runs.
void test_metadata_changes(Results& results) {
  const bool last = hvd_rank() == hvd_size() - 1;
  std::vector<float> buf(2 * kLaneFloats);
  for (int step = 0; step < 6; ++step) {
    const bool mismatch_step = step == 4 && hvd_size() > 1;
    const size_t count = mismatch_step && last ? 2 * kLaneFloats : kLaneFloats;
    fill(buf.data(), count, step);
    const hvd_status_t s = allreduce_in_place(buf.data(), count, "lane.meta", HVD_OP_SUM);
    std::string detail;
    bool ok = mismatch_step ? s == HVD_ERR_MISMATCH : s == HVD_SUCCESS;
    if (!ok) detail = status_text(s);
    if (ok && !mismatch_step) ok = check_sum(buf.data(), count, step, &detail);
    record(results, "lane.metadata-step" + std::to_string(step), ok, detail);
  }
}

// Values no sum of inputs holds: a peer reading this buffer instead of the op's shows up.
void poison(float* data, size_t count) {
  for (size_t i = 0; i < count; ++i) data[i] = 1e6f + static_cast<float>(hvd_rank());
}

// One name on hvd_mem_alloc buffers that change between lane ops: a lane op skips the
// descriptions' exchange where every rank's buffer is the one it described last (board.h), so
// each phase changes what some rank reduces (every rank, one rank, a region freed and allocated
// again, out of place in between) with the buffer it left poisoned. Every result is checked.
void test_buffer_changes(Results& results) {
  constexpr size_t kCount = kLaneFloats;
  float* a = shared_floats(results, "lane.buffer-changes", kCount);
  float* b = shared_floats(results, "lane.buffer-changes", kCount);
  float* c = shared_floats(results, "lane.buffer-changes", kCount);
  bool ok = a != nullptr && b != nullptr && c != nullptr;
  std::string detail = ok ? "" : "hvd_mem_alloc failed";
  const bool last = hvd_rank() == hvd_size() - 1;
  for (int step = 0; step < 60 && ok; ++step) {
    const int phase = step / 10;
    if (phase == 3) {  // a region freed and allocated again, often at the same address
      hvd_mem_free(a);
      a = shared_floats(results, "lane.buffer-changes", kCount);
      if (a == nullptr) break;
    }
    float* mine = a;
    if (phase == 1 && step % 2 == 1) mine = b;
    if (phase == 2 && last) mine = b;
    const bool out_of_place = phase == 4 && step % 2 == 1;
    poison(mine == a ? b : a, kCount);
    poison(c, kCount);
    fill(mine, kCount, step);
    float* result = out_of_place ? c : mine;
    const hvd_status_t s =
        out_of_place ? allreduce_into(mine, c, kCount, "lane.buffer-changes", HVD_OP_SUM)
                     : allreduce_in_place(mine, kCount, "lane.buffer-changes", HVD_OP_SUM);
    ok = s == HVD_SUCCESS && check_sum(result, kCount, step, &detail);
    if (s != HVD_SUCCESS) detail = status_text(s);
    if (!ok) detail = "step " + std::to_string(step) + ": " + detail;
  }
  record(results, "lane.buffer-changes", ok, detail);
  for (float* p : {a, b, c}) {
    if (p != nullptr) hvd_mem_free(p);
  }
}

// Ops on hvd_mem_alloc buffers taken in turn, each under its own name: each rank keeps the
// description of up to 512 such buffers on its board (board.h), so each op may skip the
// descriptions' exchange and read its peers' buffers through views opened for an earlier op.
// Every phase changes what could go stale: three tensors in turn, more tensors than are kept,
// one rank's buffers of two tensors swapped, a region freed and allocated again, heap and
// out-of-place ops in between, and a 2 MiB op after a 2 MiB heap op (which its ranks copy
// through their stages: the op after it is cut into windows, which no kept description names).
// Every buffer but the op's holds poison, so that reading a stale one shows.
constexpr int kInTurnTensors = 520;
// The phase of a step: 40 steps each, but the second, which takes more tensors than are kept
// (520 of them, twice and more) so that every op of it finds its area given to another.
int in_turn_phase(int step) {
  constexpr int kEnds[] = {40, 40 + 2 * kInTurnTensors + 60, 2 * kInTurnTensors + 140,
                           2 * kInTurnTensors + 180};
  int phase = 0;
  while (phase < 4 && step >= kEnds[phase]) ++phase;
  return phase;
}

// Fills *bufs with hvd_mem_alloc buffers of `count` floats holding poison; false where one could
// not be had (those had are in *bufs, the rest null).
bool poisoned_buffers(Results& results, std::vector<float*>* bufs, size_t count) {
  for (float*& b : *bufs) {
    if ((b = shared_floats(results, "lane.in-turn", count)) == nullptr) return false;
    poison(b, count);
  }
  return true;
}

void test_tensors_in_turn(Results& results) {
  constexpr int kTensors = kInTurnTensors;
  constexpr size_t kCount = 4 << 10;       // 16 KiB
  constexpr size_t kBigCount = 512 << 10;  // 2 MiB
  std::vector<float*> bufs(kTensors, nullptr);
  bool ok = poisoned_buffers(results, &bufs, kCount);
  float* big = shared_floats(results, "lane.in-turn", kBigCount);
  std::vector<float> heap(kBigCount), out(kCount);
  std::string detail = ok && big != nullptr ? "" : "hvd_mem_alloc failed";
  ok = ok && big != nullptr;
  const bool last = hvd_rank() == hvd_size() - 1;
  float* written = nullptr;  // the one buffer of bufs that does not hold poison
  for (int step = 0; step < 2 * kTensors + 220 && ok; ++step) {
    const int phase = in_turn_phase(step);
    int t = step % (phase == 1 ? kTensors : 3);
    if (phase == 2 && last && t < 2) t = 1 - t;  // this rank's tensor t lies in the other's buffer
    if (phase == 3 && step % 40 == 10) {
      if (written == bufs[0]) written = nullptr;
      hvd_mem_free(bufs[0]);
      ok = (bufs[0] = shared_floats(results, "lane.in-turn", kCount)) != nullptr;
      if (!ok) break;
      poison(bufs[0], kCount);
    }
    const std::string name = "lane.in-turn." + std::to_string(step % (phase == 1 ? kTensors : 3));
    float* mine = bufs[t];
    if (written != nullptr && written != mine) poison(written, kCount);
    written = nullptr;
    hvd_status_t s = HVD_SUCCESS;
    float* result = mine;
    size_t count = kCount;
    if (phase == 3 && step % 5 == 4) {  // out of place, from the heap, in between
      fill(heap.data(), kCount, step);
      s = allreduce_into(heap.data(), out.data(), kCount, "lane.in-turn.heap", HVD_OP_SUM);
      result = out.data();
    } else if (phase == 4 && step % 6 >= 2) {  // 2 MiB: twice, then on the heap, then again
      const bool on_heap = step % 6 == 4;
      result = on_heap ? heap.data() : big;
      count = kBigCount;
      fill(result, count, step);
      s = allreduce_in_place(result, count, on_heap ? "lane.in-turn.heap-big" : "lane.in-turn.big",
                             HVD_OP_SUM);
    } else {
      fill(mine, kCount, step);
      written = mine;
      s = allreduce_in_place(mine, kCount, name, HVD_OP_SUM);
    }
    ok = s == HVD_SUCCESS && check_sum(result, count, step, &detail);
    if (s != HVD_SUCCESS) detail = status_text(s);
    if (!ok) detail = "step " + std::to_string(step) + ": " + detail;
  }
  record(results, "lane.tensors-in-turn", ok, detail);
  for (float* b : bufs) {
    if (b != nullptr) hvd_mem_free(b);
  }
  if (big != nullptr) hvd_mem_free(big);
}

// Out of place on hvd_mem_alloc buffers, a kept description names the input and the output: two
// tensors in turn, each into its own output; then one rank's tensor 0 into tensor 1's output,
// into the other tensor's input, and in place on its input, each of which is other buffers than
// the ones kept. Every buffer the op does not name is poisoned first.
void test_out_of_place_in_turn(Results& results) {
  constexpr size_t kCount = 4 << 10;
  std::vector<float*> in(2, nullptr), out(2, nullptr);
  bool ok = true;
  for (int t = 0; t < 2; ++t) {
    ok = ok && (in[t] = shared_floats(results, "lane.out-of-place", kCount)) != nullptr;
    ok = ok && (out[t] = shared_floats(results, "lane.out-of-place", kCount)) != nullptr;
  }
  std::string detail = ok ? "" : "hvd_mem_alloc failed";
  const bool last = hvd_rank() == hvd_size() - 1;
  for (int step = 0; step < 120 && ok; ++step) {
    const int t = step % 2, phase = step / 30;
    float* src = in[t];
    float* dst = out[t];
    if (last && t == 0 && phase == 1) dst = out[1];
    if (last && t == 0 && phase == 2) dst = in[1];
    if (last && t == 0 && phase == 3) dst = src;
    for (float* b : {in[0], in[1], out[0], out[1]}) {
      if (b != src && b != dst) poison(b, kCount);
    }
    fill(src, kCount, step);
    const std::string name = "lane.out-of-place." + std::to_string(t);
    const hvd_status_t s = dst == src ? allreduce_in_place(src, kCount, name, HVD_OP_SUM)
                                      : allreduce_into(src, dst, kCount, name, HVD_OP_SUM);
    ok = s == HVD_SUCCESS && check_sum(dst, kCount, step, &detail);
    if (s != HVD_SUCCESS) detail = status_text(s);
    if (!ok) detail = "step " + std::to_string(step) + ": " + detail;
  }
  record(results, "lane.out-of-place-in-turn", ok, detail);
  for (int t = 0; t < 2; ++t) {
    if (in[t] != nullptr) hvd_mem_free(in[t]);
    if (out[t] != nullptr) hvd_mem_free(out[t]);
  }
}

// More hvd_mem_alloc tensors in turn than a member keeps descriptions of (512), and than the
// peers' regions once stayed mapped for (256): each op describes its buffer again and reads the
// peer's through the mappings kept from the first pass (the unit suite checks that none is
// mapped again); every sum exact, the buffers of the other tensors untouched.
void test_many_regions_in_turn(Results& results) {
  constexpr int kTensors = 600;
  constexpr size_t kCount = 256;
  std::vector<float*> bufs(kTensors, nullptr);
  bool ok = true;
  for (int t = 0; t < kTensors && ok; ++t) {
    ok = (bufs[t] = shared_floats(results, "lane.many-regions", kCount)) != nullptr;
  }
  std::string detail = ok ? "" : "hvd_mem_alloc failed";
  for (int step = 0; step < 2 * kTensors && ok; ++step) {
    const int t = step % kTensors;
    fill(bufs[t], kCount, step);
    const hvd_status_t s =
        allreduce_in_place(bufs[t], kCount, "lane.many." + std::to_string(t), HVD_OP_SUM);
    ok = s == HVD_SUCCESS && check_sum(bufs[t], kCount, step, &detail);
    if (s != HVD_SUCCESS) detail = status_text(s);
    if (!ok) detail = "step " + std::to_string(step) + ": " + detail;
  }
  record(results, "lane.many-regions-in-turn", ok, detail);
  for (float* b : bufs) {
    if (b != nullptr) hvd_mem_free(b);
  }
}

// An average of integers reduces a widened copy of its buffer, never the buffer itself: a lane
// post of one must not name the buffer as described, even right after a sum on that buffer
// described it (which skipped the descriptions' exchange for the copy once, and failed).
void test_integer_average_between(Results& results) {
  constexpr size_t kCount = 4 << 10;
  void* shared = nullptr;
  if (hvd_mem_alloc(kCount * sizeof(int32_t), &shared) != HVD_SUCCESS) {
    record(results, "lane.integer-average", false, hvd_last_error_message());
    return;
  }
  auto* data = static_cast<int32_t*>(shared);
  const int n = hvd_size();
  bool ok = true;
  std::string detail;
  for (int step = 0; step < 40 && ok; ++step) {
    const bool average = step % 2 == 1;
    for (size_t i = 0; i < kCount; ++i) data[i] = static_cast<int32_t>((hvd_rank() + 1) * (i % 9));
    int64_t shape[1] = {static_cast<int64_t>(kCount)};
    hvd_tensor_t t = {data, HVD_INT32, 1, shape, {HVD_DEVICE_CPU, 0}};
    hvd_handle_t h = 0;
    hvd_status_t s =
        hvd_allreduce_async(&t, data, average ? HVD_OP_AVERAGE : HVD_OP_SUM,
                            average ? "lane.int-average" : "lane.int-sum", nullptr, &h);
    if (s == HVD_SUCCESS) s = hvd_wait(h);
    hvd_handle_free(h);
    if (s != HVD_SUCCESS) {
      ok = false;
      detail = "step " + std::to_string(step) + ": " + status_text(s);
      break;
    }
    for (size_t i = 0; i < kCount && ok; ++i) {
      const int64_t sum = static_cast<int64_t>(n) * (n + 1) / 2 * (i % 9);
      const int64_t want = average ? sum / n : sum;
      if (data[i] != want) {
        ok = false;
        detail = "step " + std::to_string(step) + ", element " + std::to_string(i) + ": " +
                 std::to_string(data[i]) + ", want " + std::to_string(want);
      }
    }
  }
  record(results, "lane.integer-average", ok, detail);
  hvd_mem_free(shared);
}

}  // namespace

int run_lane_suite() {
  if (hvd_init() != HVD_SUCCESS) {
    std::fprintf(stderr, "hvd_init failed: %s\n", hvd_last_error_message());
    return 1;
  }
  Results results;
  // Small ops first: the lane must start on a set whose ops were all below HVDC_LOCAL_MIN_BYTES
  // (its first op opens the board).
  test_small_ops(results);
  test_wait_loops(results);
  test_lane_taken(results);
  test_late_ranks(results);
  test_other_order(results);
  test_between_other_collectives(results);
  test_metadata_changes(results);
  test_buffer_changes(results);
  test_tensors_in_turn(results);
  test_out_of_place_in_turn(results);
  test_many_regions_in_turn(results);
  test_integer_average_between(results);
  test_wait_loops(results);  // the lane again after all that
  test_lane_taken(results);
  test_hand_over(results);  // last: its callback op ends caller driving for good
  const int rc = finish(results, "lane");
  return hvd_shutdown() == HVD_SUCCESS ? rc : 1;
}

}  // namespace hvdc_test

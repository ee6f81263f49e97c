// hvdc_soak: many random ops, every result checked, resident memory watched (item 7 of the
// fault issue). Run under mpirun; every rank derives the same plan from --seed:
//
//   bash tests/mpi/run_mpi.sh 4 BUILD/tests/soak/hvdc_soak --ops 100000
//
// Each batch (up to --batch-max ops, after an occasional process-set create or destroy) is
// submitted by every member in an order of its own, then waited and checked against a reference
// each rank computes alone. A wrong result, a failed op or a hang prints a FAIL line with the op
// and a command to reproduce it, and the rank exits non-zero (hvd_abort stops the others).
// Memory: VmRSS after the warm-up (--warmup-percent of the ops), halfway and at the end, each
// after malloc_trim so that free heap pages do not count, and the largest sample; the end may
// exceed the warm-up by at most --rss-limit-mib.
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "soak.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  uint64_t seed = 20240607;
  uint64_t ops = 100000;
  uint64_t report_every = 10000;
  int batch_max = 16;
  uint64_t first = 0;
  uint64_t last = UINT64_MAX;
  double rss_limit_mib = 16;
  double warmup_percent = 10;
  int hang_seconds = 300;
};

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return false;
    const char* v = argv[++i];
    const uint64_t n = std::strtoull(v, nullptr, 0);
    if (a == "--seed") {
      o->seed = n;
    } else if (a == "--ops") {
      o->ops = n;
    } else if (a == "--report-every") {
      o->report_every = n;
    } else if (a == "--batch-max") {
      o->batch_max = static_cast<int>(n);
    } else if (a == "--first") {
      o->first = n;
    } else if (a == "--last") {
      o->last = n;
    } else if (a == "--only") {
      o->first = o->last = n;
    } else if (a == "--rss-limit-mib") {
      o->rss_limit_mib = std::atof(v);
    } else if (a == "--warmup-percent") {
      o->warmup_percent = std::atof(v);
    } else if (a == "--hang-seconds") {
      o->hang_seconds = static_cast<int>(n);
    } else {
      return false;
    }
  }
  return o->batch_max >= 1 && o->hang_seconds >= 1;
}

double rss_mib() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  double kib = -1;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::strncmp(line, "VmRSS:", 6) == 0) kib = std::atof(line + 6);
  }
  std::fclose(f);
  return kib / 1024;
}

// Fails the run when no batch completes for --hang-seconds: prints the batch and the engine's
// report of its pending ops, then exits (mpirun then stops the other ranks).
class Watchdog {
 public:
  Watchdog(int rank, int seconds) : rank_(rank), seconds_(seconds), thread_([this] { loop(); }) {}
  ~Watchdog() {
    stop_.store(true);
    thread_.join();
  }
  void watch(const soak::Batch* batch, const std::vector<int32_t>* ids) {
    std::lock_guard<std::mutex> lock(mutex_);
    batch_ = batch, ids_ = ids, last_ = Clock::now();
  }

 private:
  void loop() {
    while (!stop_.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      std::lock_guard<std::mutex> lock(mutex_);
      if (batch_ == nullptr || Clock::now() - last_ < std::chrono::seconds(seconds_)) continue;
      std::fprintf(stderr, "FAIL rank %d: hang: batch %llu made no progress for %d s; its ops:\n",
                   rank_, static_cast<unsigned long long>(batch_->number), seconds_);
      for (const soak::Op& op : batch_->ops) {
        std::fprintf(stderr, "  %s\n", soak::describe(op, *ids_).c_str());
      }
      size_t length = 0;
      hvd_dump_pending(nullptr, 0, &length);  // logs the engine's view of the pending ops
      std::fflush(stderr);
      std::_Exit(3);
    }
  }

  int rank_;
  int seconds_;
  std::mutex mutex_;
  const soak::Batch* batch_ = nullptr;
  const std::vector<int32_t>* ids_ = nullptr;
  Clock::time_point last_ = Clock::now();
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Every rank must get the same id for a new set; a MIN and a MAX over set 0 prove it.
bool same_everywhere(int64_t value) {
  int64_t v[2] = {value, -value};
  int64_t shape[1] = {2};
  hvd_tensor_t t = {v, HVD_INT64, 1, shape, {HVD_DEVICE_CPU, 0}};
  hvd_handle_t h = 0;
  hvd_status_t s = hvd_allreduce_async(&t, v, HVD_OP_MIN, "soak.set_id_check", nullptr, &h);
  if (s == HVD_SUCCESS) s = hvd_wait(h);
  if (h != 0) hvd_handle_free(h);
  return s == HVD_SUCCESS && v[0] == value && -v[1] == value;
}

bool run_event(const soak::SetEvent& e, int rank, std::vector<int32_t>* ids) {
  std::string what = e.create ? "create" : "destroy";
  for (int r : e.members) what += " " + std::to_string(r);
  hvd_status_t s = HVD_SUCCESS;
  if (e.create) {
    int32_t id = -1;
    s = hvd_process_set_create(e.members.data(), static_cast<int32_t>(e.members.size()), &id);
    (*ids)[e.slot] = id;
    if (s == HVD_SUCCESS && !same_everywhere(id)) {
      std::fprintf(stderr, "FAIL rank %d: set %s: ranks got different ids (here %d)\n", rank,
                   what.c_str(), id);
      return false;
    }
  } else {
    s = hvd_process_set_destroy((*ids)[e.slot]);
  }
  if (s == HVD_SUCCESS) return true;
  std::fprintf(stderr, "FAIL rank %d: set %s (id %d): %s: %s\n", rank, what.c_str(), (*ids)[e.slot],
               hvd_status_string(s), hvd_last_error_message());
  return false;
}

struct Progress {
  double warm = -1, mid = -1, end = -1, max = 0;  // mid: halfway, to tell a leak from a plateau
  bool warm_taken = false;
  uint64_t next_report = 0;  // ops drawn at the next progress line
  double trimmed() {
    malloc_trim(0);
    return rss_mib();
  }
};

void print_stats(double seconds, uint64_t ops) {
  hvd_stats_t st;
  std::memset(&st, 0, sizeof(st));
  st.struct_size = sizeof(st);
  hvd_stats_get(&st);
  std::printf(
      "soak: %llu ops in %.1f s: %.0f ops/s; rank 0 engine: %llu collectives, %llu fused, "
      "cache %llu hits / %llu misses / %llu evictions, %llu coordinator requests\n",
      static_cast<unsigned long long>(ops), seconds, ops / seconds,
      static_cast<unsigned long long>(st.collectives),
      static_cast<unsigned long long>(st.fused_collectives),
      static_cast<unsigned long long>(st.cache_hits),
      static_cast<unsigned long long>(st.cache_misses),
      static_cast<unsigned long long>(st.cache_evictions),
      static_cast<unsigned long long>(st.coordinator_requests));
}

// Memory samples and the progress line, after each batch that ended with `done` ops drawn.
void after_batch(const Options& o, int rank, uint64_t done, Clock::time_point start,
                 Progress* mem) {
  mem->max = std::max(mem->max, rss_mib());
  if (!mem->warm_taken && done >= static_cast<uint64_t>(o.ops * o.warmup_percent / 100)) {
    mem->warm = mem->trimmed();
    mem->warm_taken = true;
  }
  if (mem->mid < 0 && done >= o.ops / 2) mem->mid = mem->trimmed();
  if (o.report_every == 0 || done < mem->next_report) return;
  mem->next_report += o.report_every;
  if (rank != 0) return;
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("soak: %llu/%llu ops, %.1f s, %.0f ops/s, rss %.1f MiB\n",
              static_cast<unsigned long long>(done), static_cast<unsigned long long>(o.ops), s,
              done / s, rss_mib());
  std::fflush(stdout);
}

// The batches; false after a failure (already printed, the others aborted).
bool soak_loop(const Options& o, int rank, const std::string& repro, Progress* mem) {
  soak::Plan plan(o.seed, hvd_size(), o.batch_max);
  std::vector<int32_t> ids(plan.slot_count(), 0);
  for (const soak::SetEvent& e : plan.static_sets()) {
    if (!run_event(e, rank, &ids)) return false;
  }
  Watchdog watchdog(rank, o.hang_seconds);
  const Clock::time_point start = Clock::now();
  while (plan.next_index() < o.ops) {
    const soak::Batch batch = plan.next(o.ops - plan.next_index());
    ids.resize(plan.slot_count(), -1);
    watchdog.watch(&batch, &ids);
    for (const soak::SetEvent& e : batch.events) {
      if (!run_event(e, rank, &ids)) return false;
    }
    std::vector<const soak::Op*> mine;
    for (const soak::Op& op : batch.ops) {
      const bool member = std::find(op.members.begin(), op.members.end(), rank) != op.members.end();
      if (member && op.index >= o.first && op.index <= o.last) mine.push_back(&op);
    }
    const uint64_t order_seed =
        soak::mix(o.seed ^ soak::mix(batch.number) ^ (uint64_t(rank) << 56));
    if (!run_batch(mine, ids, rank, order_seed, repro)) return false;
    watchdog.watch(nullptr, nullptr);  // the batch goes out of scope
    after_batch(o, rank, plan.next_index(), start, mem);
  }
  mem->end = mem->trimmed();
  if (rank == 0) print_stats(std::chrono::duration<double>(Clock::now() - start).count(), o.ops);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: %s [--seed S] [--ops N] [--report-every K] [--batch-max B] [--first I] "
                 "[--last I] [--only I] [--rss-limit-mib M] [--warmup-percent P] "
                 "[--hang-seconds H]\n",
                 argv[0]);
    return 2;
  }
  hvd_status_t s = hvd_init();
  if (s != HVD_SUCCESS) {
    std::fprintf(stderr, "FAIL: hvd_init: %s: %s\n", hvd_status_string(s),
                 hvd_last_error_message());
    return 1;
  }
  const int rank = hvd_rank(), size = hvd_size();
  const std::string repro = "bash tests/mpi/run_mpi.sh " + std::to_string(size) + " " + argv[0] +
                            " --seed " + std::to_string(o.seed) + " --ops " +
                            std::to_string(o.ops) + " --batch-max " + std::to_string(o.batch_max);
  if (rank == 0) std::printf("soak: %s\n", repro.c_str());
  Progress mem;
  mem.next_report = o.report_every;
  if (!soak_loop(o, rank, repro, &mem)) {
    hvd_shutdown();
    return 1;
  }
  if (!mem.warm_taken) mem.warm = mem.end;
  const double growth = mem.end - mem.warm;
  const bool flat = growth <= o.rss_limit_mib;
  std::printf(
      "soak: rank %d rss: after warm-up %.1f MiB, halfway %.1f MiB, end %.1f MiB, max %.1f MiB; "
      "end - warm-up %.1f MiB (limit %.1f): %s\n",
      rank, mem.warm, mem.mid, mem.end, mem.max, growth, o.rss_limit_mib, flat ? "flat" : "FAIL");
  std::fflush(stdout);
  int64_t verdict[1] = {flat ? 1 : 0};
  int64_t shape[1] = {1};
  hvd_tensor_t t = {verdict, HVD_INT64, 1, shape, {HVD_DEVICE_CPU, 0}};
  hvd_handle_t h = 0;
  s = hvd_allreduce_async(&t, verdict, HVD_OP_MIN, "soak.verdict", nullptr, &h);
  if (s == HVD_SUCCESS) s = hvd_wait(h);
  if (h != 0) hvd_handle_free(h);
  const bool pass = s == HVD_SUCCESS && verdict[0] == 1 && flat;
  if (rank == 0) std::printf("soak: %s\n", pass ? "PASS" : "FAIL");
  hvd_shutdown();
  return pass ? 0 : 1;
}

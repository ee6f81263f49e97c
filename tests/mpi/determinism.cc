// HVDC_DETERMINISTIC: random float32 tensors reduced under fusion thresholds 0, 4 KiB and
// 64 MiB must give identical bits, on one host's in-place path and on the transport's
// member-ordered algorithm alike; the transport's ring under the default mode is allowed to
// differ, and (as a control that the comparison can see a difference) at 3 or more ranks it
// does. One process per rank initializes MPI itself so that hvdc can be initialized once per
// setting.
#include <stdlib.h>

#include <hvdc.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace {

struct Setting {
  const char* label;
  int deterministic;
  int64_t threshold;
  const char* peer_reads;  // HVDC_PEER_READS: "0" keeps one host's allreduces on the transport
};

// 40 tensors, the same sizes on every rank: most beyond the direct algorithm's 64 KiB, so the
// chunked algorithms run, and their chunk boundaries move with the fusion layout.
std::vector<size_t> tensor_sizes() {
  std::mt19937 rng(7);
  std::vector<size_t> sizes;
  for (int k = 0; k < 40; ++k)
    sizes.push_back(k % 5 == 0 ? 1 + rng() % 500 : 20000 + rng() % 200000);
  return sizes;
}

// Values of mixed magnitude, so that the order of additions changes the rounding.
std::vector<float> input(size_t count, int rank, size_t tensor) {
  std::mt19937 rng(static_cast<unsigned>(rank * 1000 + tensor));
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = mantissa(rng) * static_cast<float>(1 << (rng() % 20));
  return v;
}

uint64_t fnv1a(const void* data, size_t bytes, uint64_t h) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// Runs every tensor once under `setting`, submitted in an order that depends on the rank and
// the setting; returns a hash of all results (0 on failure).
uint64_t run(const Setting& setting, int rank, int index) {
  setenv("HVDC_PEER_READS", setting.peer_reads, 1);
  hvd_config_t* config = nullptr;
  hvd_config_create(&config);
  hvd_config_set_int(config, HVD_CFG_DETERMINISTIC, setting.deterministic);
  hvd_config_set_int(config, HVD_CFG_FUSION_THRESHOLD, setting.threshold);
  hvd_status_t s = hvd_init_with_config(config);
  hvd_config_destroy(config);
  if (s != HVD_SUCCESS) {
    std::fprintf(stderr, "rank %d: hvd_init: %s\n", rank, hvd_last_error_message());
    return 0;
  }
  const std::vector<size_t> sizes = tensor_sizes();
  std::vector<std::vector<float>> bufs(sizes.size());
  std::vector<int64_t> shapes(sizes.size());
  std::vector<size_t> order(sizes.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::shuffle(order.begin(), order.end(), std::mt19937(static_cast<unsigned>(rank * 31 + index)));
  std::vector<hvd_handle_t> handles;
  for (size_t k : order) {
    bufs[k] = input(sizes[k], rank, k);
    shapes[k] = static_cast<int64_t>(sizes[k]);
    hvd_tensor_t t = {bufs[k].data(), HVD_FLOAT32, 1, &shapes[k], {HVD_DEVICE_CPU, 0}};
    hvd_handle_t h = 0;
    const std::string name = "det." + std::to_string(k);
    if (hvd_allreduce_async(&t, bufs[k].data(), HVD_OP_SUM, name.c_str(), nullptr, &h) == 0) {
      handles.push_back(h);
    }
  }
  s = handles.size() == sizes.size() ? hvd_wait_all(handles.data(), handles.size()) : -1;
  for (hvd_handle_t h : handles) hvd_handle_free(h);
  uint64_t hash = 1469598103934665603ull;
  for (const std::vector<float>& b : bufs) hash = fnv1a(b.data(), b.size() * sizeof(float), hash);
  if (s != HVD_SUCCESS) {
    std::fprintf(stderr, "rank %d, %s: %s\n", rank, setting.label, hvd_last_error_message());
  }
  const hvd_status_t down = hvd_shutdown();
  if (down != HVD_SUCCESS) {
    std::fprintf(stderr, "rank %d, %s: hvd_shutdown: %s\n", rank, setting.label,
                 hvd_last_error_message());
  }
  if (down != HVD_SUCCESS || s != HVD_SUCCESS) return 0;
  return hash;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const Setting settings[] = {{"deterministic, fusion 0", 1, 0, "1"},
                              {"deterministic, fusion 4 KiB", 1, 4096, "1"},
                              {"deterministic, fusion 64 MiB", 1, 64 << 20, "1"},
                              {"deterministic, transport, 4 KiB", 1, 4096, "0"},
                              {"ring, fusion 0", 0, 0, "0"},
                              {"ring, fusion 64 MiB", 0, 64 << 20, "0"}};
  constexpr int kSettings = sizeof settings / sizeof settings[0];
  std::vector<uint64_t> hashes;
  for (int i = 0; i < kSettings; ++i) hashes.push_back(run(settings[i], rank, i));
  if (rank == 0) {
    for (int i = 0; i < kSettings; ++i)
      std::printf("%-30s %016llx\n", settings[i].label, static_cast<unsigned long long>(hashes[i]));
  }
  bool ok = std::find(hashes.begin(), hashes.end(), 0u) == hashes.end();
  if (!ok) std::fprintf(stderr, "rank %d: a run failed\n", rank);
  ok = ok && hashes[0] == hashes[1] && hashes[1] == hashes[2] && hashes[2] == hashes[3];
  // The control: with 3 or more ranks the default mode's ring starts each element's sum at a
  // member that depends on the chunk layout, so fused and unfused results differ.
  const bool control_differs = hashes[4] != hashes[5];
  if (size >= 3) ok = ok && control_differs;
  int local = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&local, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("control (default mode) %s\n", control_differs ? "differs" : "is identical");
    std::printf("determinism: %s\n", all ? "1 passed, 0 failed" : "0 passed, 1 failed");
  }
  MPI_Finalize();
  return all ? 0 : 1;
}

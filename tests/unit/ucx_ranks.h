// Threads acting as ranks over real UCX (in-process bootstrap), one Comm each, for the tests of
// the host collectives in src/ops/cpu.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "ops/cpu/comm.h"

namespace ucx_ranks {

using Bytes = std::vector<uint8_t>;
// What one rank runs once connected. Each op must use its own comm.seq (the harness starts at 1).
using RankBody = std::function<hvdc::common::Status(hvdc::ops::cpu::Comm& comm)>;

// A hung collective fails its test after this long instead of hanging the suite.
constexpr auto kDeadline = std::chrono::seconds(60);

// Runs body on n threads acting as ranks 0..n-1 (no transport for n == 1); EXPECTs every rank ok.
void run_ranks(int n, const RankBody& body);

// "" when equal, else where and how the two differ (whole-buffer dumps would be megabytes).
std::string first_difference(const Bytes& got, const Bytes& want);

}  // namespace ucx_ranks

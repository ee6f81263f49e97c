// Host broadcast: the root member's `bytes` at buf reach buf on every member.
#pragma once

#include "ops/cpu/comm.h"

namespace hvdc::ops::cpu {

// Binomial tree rooted at member `root`: ceil(log2 n) rounds, each doubling the holders.
Status broadcast_tree(Comm& comm, void* buf, size_t bytes, int root);

}  // namespace hvdc::ops::cpu

// Copies that bypass the cache (non-temporal stores), for results written where nobody reads
// them soon: a store to a line that is not cached first reads the line from memory, so a normal
// copy into a cold output costs a read as well as a write per byte.
#pragma once

#include <cstddef>

namespace hvdc::ops::cpu::local {

// Copies bytes from src to dst with non-temporal stores where the CPU has them (plain memcpy
// elsewhere). The stores are weakly ordered: call stream_fence() before telling anyone else.
void stream_copy(char* dst, const char* src, size_t bytes);
// Orders every earlier stream_copy store before the stores that follow (sfence).
void stream_fence();

}  // namespace hvdc::ops::cpu::local

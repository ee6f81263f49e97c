// Sleeping on a 32-bit word until another thread or process changes it, and waking those asleep
// on it (Linux futexes): the engine thread standing aside (core/caller_drive.cc) and the waits on
// counters in shared memory (transport/waiting.cc).
#pragma once

#include <chrono>
#include <cstdint>

namespace hvdc::common {

// Who may wake a sleeper: threads of this process only, or any process mapping the word.
enum class FutexScope { kProcess, kShared };

// Sleeps while *word holds `expected`, at most `limit`, or until woken (spurious returns happen).
void futex_wait(const uint32_t* word, uint32_t expected, std::chrono::nanoseconds limit,
                FutexScope scope);
// Wakes up to `count` sleepers on word.
void futex_wake(const uint32_t* word, int count, FutexScope scope);

}  // namespace hvdc::common

#include "common/futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace hvdc::common {

namespace {

int futex_op(int op, FutexScope scope) {
  return scope == FutexScope::kProcess ? (op | FUTEX_PRIVATE_FLAG) : op;
}

}  // namespace

void futex_wait(const uint32_t* word, uint32_t expected, std::chrono::nanoseconds limit,
                FutexScope scope) {
  const long long ns = limit.count();
  const struct timespec until = {static_cast<time_t>(ns / 1000000000),
                                 static_cast<long>(ns % 1000000000)};
  syscall(SYS_futex, word, futex_op(FUTEX_WAIT, scope), expected, &until, nullptr, 0);
}

void futex_wake(const uint32_t* word, int count, FutexScope scope) {
  syscall(SYS_futex, word, futex_op(FUTEX_WAKE, scope), count, nullptr, nullptr, 0);
}

}  // namespace hvdc::common

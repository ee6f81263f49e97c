#include "progress.h"

#include <cstdio>

namespace trainer {

namespace {
constexpr int kWidth = 30;
}

ProgressBar::ProgressBar(bool visible, int64_t epoch, int64_t epochs, int64_t steps)
    : visible_(visible), epoch_(epoch), epochs_(epochs), steps_(steps) {}

void ProgressBar::advance(double running_loss) {
  ++done_;
  if (!visible_) return;
  const auto now = std::chrono::steady_clock::now();
  if (done_ == steps_ || now - last_draw_ > std::chrono::milliseconds(100)) {
    last_draw_ = now;
    draw(running_loss);
  }
}

void ProgressBar::draw(double running_loss) {
  const int filled = steps_ > 0 ? static_cast<int>(kWidth * done_ / steps_) : kWidth;
  char bar[kWidth + 1];
  for (int i = 0; i < kWidth; ++i) bar[i] = i < filled ? '=' : (i == filled ? '>' : ' ');
  bar[kWidth] = '\0';
  std::printf("\repoch %lld/%lld [%s] %lld/%lld loss %.4f", static_cast<long long>(epoch_),
              static_cast<long long>(epochs_), bar, static_cast<long long>(done_),
              static_cast<long long>(steps_), running_loss);
  std::fflush(stdout);
}

void ProgressBar::clear() {
  if (!visible_) return;
  std::printf("\r\033[K");  // carriage return, then erase to the end of the line
  std::fflush(stdout);
}

}  // namespace trainer

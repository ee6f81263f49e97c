// What rank 0 shows while an epoch runs: a progress bar redrawn in place on a terminal, nothing
// when stdout is a file or a pipe (the epoch's summary line is printed either way).
#pragma once

#include <chrono>
#include <cstdint>

namespace trainer {

class ProgressBar {
 public:
  // visible: rank 0 with a terminal on stdout.
  ProgressBar(bool visible, int64_t epoch, int64_t epochs, int64_t steps);
  // One more step done; redraws at most every 100 ms and on the last step.
  void advance(double running_loss);
  // Erases the bar so the summary line takes its place.
  void clear();

 private:
  void draw(double running_loss);

  bool visible_;
  int64_t epoch_, epochs_, steps_, done_ = 0;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace trainer

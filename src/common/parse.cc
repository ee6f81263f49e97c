#include "common/parse.h"

#include <cerrno>
#include <cstdlib>

namespace hvdc::common {

bool parse_decimal(const std::string& text, long long lo, long long hi, long long* out) {
  const size_t first = !text.empty() && text[0] == '-' ? 1 : 0;
  if (first == text.size() || text.find_first_not_of("0123456789", first) != std::string::npos) {
    return false;
  }
  errno = 0;
  const long long v = std::strtoll(text.c_str(), nullptr, 10);
  if (errno != 0 || v < lo || v > hi) return false;
  *out = v;
  return true;
}

}  // namespace hvdc::common

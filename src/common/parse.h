// Strict parsing of numbers from the environment, the command line and configuration strings.
#pragma once

#include <string>

namespace hvdc::common {

// A plain decimal integer in [lo, hi]: an optional '-', then digits only (no spaces, no '+', no
// suffix). False (and *out untouched) otherwise, including on overflow.
bool parse_decimal(const std::string& text, long long lo, long long hi, long long* out);

}  // namespace hvdc::common

// UTF-8 well-formedness, as the Unicode standard defines it: no overlong forms, no encoded
// surrogates, nothing above U+10FFFF. Tensor names come from users and travel to other ranks,
// into logs and into the JSON timeline (which Python's json.load rejects when malformed).
#pragma once

#include <cstddef>
#include <string_view>

namespace hvdc::common {

// Length (1 to 4) of the well-formed sequence at text[i], or 0 for a malformed one.
size_t utf8_sequence_length(std::string_view text, size_t i);

// The offset of the first malformed byte, or text.size() when all of text is well formed.
size_t first_invalid_utf8(std::string_view text);

}  // namespace hvdc::common

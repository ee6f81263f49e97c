// Reads a whole file that may be gzip-compressed (zlib's gzread passes plain files through).
#pragma once

#include <string>
#include <vector>

namespace trainer {

// Throws std::runtime_error naming the path if it cannot be opened or is corrupt.
std::vector<unsigned char> read_maybe_gzip(const std::string& path);
bool file_exists(const std::string& path);

}  // namespace trainer

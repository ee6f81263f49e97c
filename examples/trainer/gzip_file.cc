#include "gzip_file.h"

#include <sys/stat.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace trainer {

std::vector<unsigned char> read_maybe_gzip(const std::string& path) {
  gzFile raw = gzopen(path.c_str(), "rb");
  if (raw == nullptr) {
    throw std::runtime_error(path + ": cannot open: " + std::strerror(errno ? errno : ENOMEM));
  }
  std::unique_ptr<gzFile_s, int (*)(gzFile)> file(raw, gzclose);
  std::vector<unsigned char> content;
  unsigned char chunk[1 << 16];
  for (;;) {
    const int got = gzread(file.get(), chunk, sizeof chunk);
    if (got < 0) {
      int code = 0;
      throw std::runtime_error(path + ": cannot read: " + gzerror(file.get(), &code));
    }
    if (got == 0) break;
    content.insert(content.end(), chunk, chunk + got);
  }
  return content;
}

bool file_exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

}  // namespace trainer

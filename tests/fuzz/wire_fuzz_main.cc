// Replay driver for the wire fuzz target, built with the project's compiler (gcc) so that the
// regressions run without clang: feeds the generated seeds and every file of the directories
// given on the command line (tests/fuzz/regressions/, a corpus) to LLVMFuzzerTestOneInput. A
// crash or a failed round trip aborts the process, which fails the meson test.
//
// Usage: wire_fuzz_replay [DIR...]
#include <dirent.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "wire_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

void run(const std::string& input) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

// Regular files of `dir`, sorted so that a failure names the same file every time. A missing
// directory has none (a corpus may not exist yet).
std::vector<std::string> files_of(const std::string& dir) {
  std::vector<std::string> paths;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return paths;
  while (const dirent* entry = readdir(d)) {
    const std::string name = entry->d_name;
    if (name.empty() || name[0] == '.' || name == "README.md") continue;
    paths.push_back(dir + "/" + name);
  }
  closedir(d);
  std::sort(paths.begin(), paths.end());
  return paths;
}

}  // namespace

int main(int argc, char** argv) {
  size_t inputs = 0;
  for (const std::string& seed : hvdc::fuzz::wire_seeds()) {
    run(seed);
    ++inputs;
  }
  for (int i = 1; i < argc; ++i) {
    for (const std::string& path : files_of(argv[i])) {
      std::ifstream file(path, std::ios::binary);
      std::ostringstream bytes;
      bytes << file.rdbuf();
      // Printed first, so that the log names the input that crashed.
      std::fprintf(stderr, "replaying %s\n", path.c_str());
      run(bytes.str());
      ++inputs;
    }
  }
  std::printf("wire fuzz replay: %zu inputs, no crash\n", inputs);
  return 0;
}

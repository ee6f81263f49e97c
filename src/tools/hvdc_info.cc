// hvdc-info: version, compiled features and every effective HVDC_* setting with its source.
// `hvdc-info --markdown` prints the settings table that README.md embeds.
#include <cstdio>
#include <cstring>
#include <string>

#include "common/config.h"
#include "hvdc.h"

namespace {

void print_markdown() {
  std::printf("| Variable | Horovod alias | Default | Meaning |\n|---|---|---|---|\n");
  for (const auto& knob : hvdc::common::knob_registry()) {
    const std::string alias = knob.horovod_alias ? std::string("`") + knob.horovod_alias + "`" : "";
    const std::string value =
        knob.default_value[0] ? std::string("`") + knob.default_value + "`" : "(empty)";
    std::printf("| `%s` | %s | %s | %s |\n", knob.name, alias.c_str(), value.c_str(), knob.doc);
  }
}

int print_info() {
  std::printf("hvdc %s (ABI %d)\n", hvd_version_string(), hvd_abi_version());
  static const char* const kFeatures[] = {"ucx", "mpi", "cuda", "nccl"};
  std::printf("features:");
  for (int f = 0; f < 4; ++f)
    std::printf(" %s=%s", kFeatures[f], hvd_has_feature(f) ? "yes" : "no");
  std::printf("\nsettings:\n");
  hvdc::common::Settings settings;
  hvdc::common::Status st = hvdc::common::Settings::resolve({}, &settings);
  if (!st.is_ok()) {
    std::fprintf(stderr, "hvdc-info: %s\n", st.message().c_str());
    return 1;
  }
  for (const auto& [name, entry] : settings.entries()) {
    std::string value = entry.value;
    for (const hvdc::common::Knob& knob : hvdc::common::knob_registry()) {
      if (knob.secret && name == knob.name) value = value.empty() ? "" : "(set, not shown)";
    }
    std::printf("  %-28s %-10s (%s)\n", name.c_str(), value.c_str(), entry.source.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--markdown") == 0) {
    print_markdown();
    return 0;
  }
  if (argc > 1) {
    std::printf("usage: hvdc-info [--markdown]\n");
    return std::strcmp(argv[1], "--help") == 0 ? 0 : 2;
  }
  return print_info();
}

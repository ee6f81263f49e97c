#include "transport/ucx/ucx_lanes.h"

namespace hvdc::transport::ucx {

// UCX 1.13 prints one line per lane:
//   "#   lane[0]:  1:tcp/eth0.0 md[0]  -> md[0]/tcp/sysdev[255] am am_bw#0 keepalive wireup"
// that is "lane[N]:", the resource's number, ':', then "TRANSPORT/DEVICE". Lines that are not
// lanes (the protocol thresholds, the peer) are skipped; a lane whose transport cannot be read
// counts as not TCP, so an unknown format never shrinks the messages.
bool lanes_only_tcp(std::string_view ep_info) {
  bool any_lane = false;
  size_t at = 0;
  while (at < ep_info.size()) {
    size_t end = ep_info.find('\n', at);
    if (end == std::string_view::npos) end = ep_info.size();
    const std::string_view line = ep_info.substr(at, end - at);
    at = end + 1;
    const size_t lane = line.find("lane[");
    if (lane == std::string_view::npos) continue;
    const size_t colon = line.find("]:", lane);
    if (colon == std::string_view::npos) return false;
    // After "]:" comes " N:transport/device".
    const size_t number_end = line.find(':', colon + 2);
    if (number_end == std::string_view::npos) return false;
    const size_t slash = line.find('/', number_end);
    if (slash == std::string_view::npos) return false;
    if (line.substr(number_end + 1, slash - number_end - 1) != "tcp") return false;
    any_lane = true;
  }
  return any_lane;
}

}  // namespace hvdc::transport::ucx

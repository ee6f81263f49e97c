#include "transport/waiting.h"

#include <algorithm>

namespace hvdc::transport {

size_t incomplete(const Request* reqs, size_t count) {
  size_t n = 0;
  for (size_t i = 0; i < count; ++i) n += reqs[i].impl != nullptr ? 1 : 0;
  return n;
}

std::vector<int> peers_of(const Request* reqs, size_t count) {
  std::vector<int> peers;
  for (size_t i = 0; i < count; ++i) {
    if (reqs[i].impl != nullptr) peers.push_back(reqs[i].peer);
  }
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  return peers;
}

std::string describe_waiting(const Request* reqs, size_t count) {
  std::string out;
  for (size_t i = 0; i < count && out.size() < 200; ++i) {
    if (reqs[i].impl == nullptr) continue;
    bool listed = false;  // several segments to or from one peer: one mention
    for (size_t j = 0; j < i && !listed; ++j) {
      listed = reqs[j].impl != nullptr && reqs[j].peer == reqs[i].peer &&
               reqs[j].is_recv == reqs[i].is_recv;
    }
    if (listed) continue;
    out += common::strfmt("%s%s rank %d", out.empty() ? "" : ", ",
                          reqs[i].is_recv ? "receive from" : "send to", reqs[i].peer);
  }
  return out;
}

}  // namespace hvdc::transport

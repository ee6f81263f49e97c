#include "ops/nccl/setup_exchange.h"

namespace hvdc::ops::nccl {

namespace {

// payload: 8 bits of set context, 16 bits of op sequence, 16 bits of step (as data tags).
transport::Tag setup_tag(const Group& group, int from, int step) {
  const uint64_t payload = (static_cast<uint64_t>(group.context & 0xFF) << 32) |
                           ((group.seq & 0xFFFF) << 16) | (static_cast<uint64_t>(step) & 0xFFFF);
  return transport::make_tag(transport::TagKind::kDevice, group.members[from], payload);
}

bool alone(const Group& group) {
  return group.size() == 1 || group.transport == nullptr;
}

}  // namespace

Status gather_to_first(const Group& group, int step, const std::string& mine,
                       std::vector<std::string>* all) {
  all->clear();
  if (alone(group)) {
    all->push_back(mine);
    return Status::ok();
  }
  transport::Transport& net = *group.transport;
  if (group.index != 0) {
    transport::Request req;
    HVDC_RETURN_IF_ERROR(net.isend(group.members[0], setup_tag(group, group.index, step),
                                   mine.data(), mine.size(), &req));
    return net.wait(&req, 1, group.interrupt);
  }
  all->assign(group.size(), std::string(mine.size(), '\0'));
  (*all)[0] = mine;
  std::vector<transport::Request> reqs(group.size() - 1);
  for (int m = 1; m < group.size(); ++m) {
    HVDC_RETURN_IF_ERROR(net.irecv(group.members[m], setup_tag(group, m, step), &(*all)[m][0],
                                   mine.size(), &reqs[m - 1]));
  }
  return net.wait(reqs.data(), reqs.size(), group.interrupt);
}

Status send_from_first(const Group& group, int step, std::string* bytes) {
  if (alone(group)) return Status::ok();
  transport::Transport& net = *group.transport;
  if (group.index != 0) {
    transport::Request req;
    HVDC_RETURN_IF_ERROR(
        net.irecv(group.members[0], setup_tag(group, 0, step), &(*bytes)[0], bytes->size(), &req));
    return net.wait(&req, 1, group.interrupt);
  }
  std::vector<transport::Request> reqs(group.size() - 1);
  for (int m = 1; m < group.size(); ++m) {
    HVDC_RETURN_IF_ERROR(net.isend(group.members[m], setup_tag(group, 0, step), bytes->data(),
                                   bytes->size(), &reqs[m - 1]));
  }
  return net.wait(reqs.data(), reqs.size(), group.interrupt);
}

}  // namespace hvdc::ops::nccl

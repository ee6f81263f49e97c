// The store's side of the protocol: reading frames, verifying the hello, and answering sets and
// gets (a get waits in the table until its keys are set or its time runs out).
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "bootstrap/tcp/store_server_loop.h"

namespace hvdc::bootstrap {

using common::make_error;
using common::strfmt;
using store_detail::Connection;

namespace {

// Bounds for a get's own timeout, so the deadline arithmetic cannot overflow.
constexpr int64_t kMaxWaitMs = int64_t{7} * 24 * 3600 * 1000;

}  // namespace

void StoreServer::Loop::service(uint64_t id, short revents) {
  Connection* c = find(id);
  if (c == nullptr) return;
  if ((revents & POLLOUT) != 0) flush(c);
  if (!c->closed && (revents & (POLLIN | POLLHUP | POLLERR)) != 0) read_frames(c);
}

void StoreServer::Loop::note_buffer(const Connection& c) {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  size_t& largest = c.authenticated ? stats_.largest_frame_buffer : stats_.largest_hello_buffer;
  largest = std::max(largest, c.reader.largest_buffer());
}

void StoreServer::Loop::read_frames(Connection* c) {
  while (!c->closed) {
    FrameReader::Result result;
    Status st = c->reader.read(c->fd.get(), &result);
    note_buffer(*c);
    if (!st.is_ok()) return refuse(c, st.message());
    if (result == FrameReader::Result::kPending) return;
    if (result == FrameReader::Result::kClosed) {
      if (c->reader.mid_frame()) return refuse(c, "connection closed in the middle of a frame");
      if (c->authenticated) HVDC_LOG_DEBUG("rendezvous store: %s left", c->who().c_str());
      return close(c);
    }
    on_frame(c, c->reader.take_body());
  }
}

void StoreServer::Loop::on_frame(Connection* c, std::string body) {
  if (!c->authenticated) return on_hello(c, std::move(body));
  if (!c->channel.open(&body)) {
    return refuse(c, strfmt("frame %llu failed authentication",
                            static_cast<unsigned long long>(c->channel.received())));
  }
  StoreRequest request;
  Status st = decode_request(body, &request);
  if (!st.is_ok()) return refuse(c, st.message());
  on_request(c, std::move(request));
}

// The hello carries the client's nonce, which the session key needs, so its payload is decoded
// (within the small pre-authentication limit) before its MAC can be checked.
void StoreServer::Loop::on_hello(Connection* c, std::string body) {
  const char* hint = options_.secret.empty() ? "" : " (a peer without this job's HVDC_SECRET?)";
  const size_t mac_bytes = options_.secret.empty() ? 0 : kStoreMacBytes;
  StoreRequest hello;
  Status st = body.size() < mac_bytes
                  ? make_error(HVD_ERR_BOOTSTRAP, "hello too short")
                  : decode_request(body.substr(0, body.size() - mac_bytes), &hello);
  if (st.is_ok() && hello.op != StoreOp::kHello) {
    st = make_error(HVD_ERR_BOOTSTRAP, "first frame is not a hello");
  }
  if (!st.is_ok()) return refuse(c, "bad hello: " + st.message() + hint);
  c->channel.start(options_.secret, c->nonce,
                   reinterpret_cast<const uint8_t*>(hello.client_nonce.data()), true);
  if (!c->channel.open(&body)) {
    return refuse(
        c, strfmt("hello of rank %d failed authentication (wrong HVDC_SECRET?)", hello.rank));
  }
  c->authenticated = true;
  --unauthenticated_;
  c->rank = hello.rank;
  c->has_deadline = false;
  c->reader.set_limit(kStoreMaxFrameBytes);
  HVDC_LOG_DEBUG("rendezvous store: %s joined", c->who().c_str());
  reply(c, StoreReply{});
}

void StoreServer::Loop::on_request(Connection* c, StoreRequest request) {
  // Clients wait for each answer, so a second request while a get is pending is not hvdc's.
  if (c->waiting) return refuse(c, "request sent while a get was pending");
  switch (request.op) {
    case StoreOp::kSet:
      return on_set(c, std::move(request));
    case StoreOp::kGet:
      return on_get(c, std::move(request));
    default:
      return refuse(c, "hello sent twice");
  }
}

void StoreServer::Loop::on_set(Connection* c, StoreRequest request) {
  std::vector<StoreTable::WaiterId> ready;
  table_.set(request.key, std::move(request.value), request.reads, &ready);
  reply(c, StoreReply{});
  for (StoreTable::WaiterId id : ready) {
    Connection* waiter = find(id);
    std::vector<std::string> values;
    if (waiter == nullptr || !table_.complete(id, &values)) continue;
    waiter->waiting = false;
    waiter->has_deadline = false;
    send_values(waiter, std::move(values));
  }
}

void StoreServer::Loop::on_get(Connection* c, StoreRequest request) {
  std::vector<std::string> values;
  if (table_.get(c->id, std::move(request.keys), &values)) return send_values(c, std::move(values));
  c->waiting = true;
  c->has_deadline = request.timeout_ms > 0;
  if (c->has_deadline) {
    c->deadline =
        Clock::now() + std::chrono::milliseconds(std::min(request.timeout_ms, kMaxWaitMs));
  }
}

void StoreServer::Loop::send_values(Connection* c, std::vector<std::string> values) {
  StoreReply reply_msg;
  const size_t bytes = values_reply_bytes(values) + c->channel.mac_bytes();
  if (bytes > kStoreMaxFrameBytes) {
    reply_msg.kind = StoreReplyKind::kError;
    reply_msg.error = strfmt(
        "the values asked for add up to %zu bytes, over the frame limit of %u; "
        "ask for fewer keys at a time",
        bytes, kStoreMaxFrameBytes);
  } else {
    reply_msg.kind = StoreReplyKind::kValues;
    reply_msg.values = std::move(values);
  }
  reply(c, reply_msg);
}

void StoreServer::Loop::reply(Connection* c, const StoreReply& reply_msg) {
  if (c->out_sent == c->out.size()) {
    c->out.clear();
    c->out_sent = 0;
  }
  c->out += c->channel.seal(encode_reply(reply_msg));
  {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    ++stats_.served;
  }
  flush(c);
}

void StoreServer::Loop::flush(Connection* c) {
  while (c->out_sent < c->out.size()) {
    const ssize_t sent =
        ::send(c->fd.get(), c->out.data() + c->out_sent, c->out.size() - c->out_sent, MSG_NOSIGNAL);
    if (sent > 0) {
      c->out_sent += static_cast<size_t>(sent);
      continue;
    }
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;  // POLLOUT resumes
    HVDC_LOG_DEBUG("rendezvous store: %s: send failed: %s", c->who().c_str(),
                   errno_text(errno).c_str());
    return close(c);
  }
  c->out.clear();
  c->out_sent = 0;
}

}  // namespace hvdc::bootstrap

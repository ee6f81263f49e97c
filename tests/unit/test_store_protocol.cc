// The rendezvous store's pieces without sockets: the key table (read budgets, waiters), the
// request/reply encoding with malformed input, and frame sealing (MAC, replay, reflection).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/tcp/frame.h"
#include "bootstrap/tcp/protocol.h"
#include "bootstrap/tcp/store_table.h"

namespace {

using hvdc::bootstrap::decode_reply;
using hvdc::bootstrap::decode_request;
using hvdc::bootstrap::decode_server_hello;
using hvdc::bootstrap::encode_reply;
using hvdc::bootstrap::encode_request;
using hvdc::bootstrap::encode_server_hello;
using hvdc::bootstrap::FrameChannel;
using hvdc::bootstrap::kServerHelloBytes;
using hvdc::bootstrap::kStoreMacBytes;
using hvdc::bootstrap::kStoreMaxKeyBytes;
using hvdc::bootstrap::kStoreMaxKeysPerGet;
using hvdc::bootstrap::kStoreNonceBytes;
using hvdc::bootstrap::ServerHello;
using hvdc::bootstrap::StoreOp;
using hvdc::bootstrap::StoreReply;
using hvdc::bootstrap::StoreReplyKind;
using hvdc::bootstrap::StoreRequest;
using hvdc::bootstrap::StoreTable;

using Strings = std::vector<std::string>;
using Ids = std::vector<StoreTable::WaiterId>;

TEST(StoreTable, GetDeliversPresentKeysAndSpendsReads) {
  StoreTable table;
  Ids ready;
  table.set("a", "1", 2, &ready);
  table.set("b", "2", 0, &ready);
  EXPECT_TRUE(ready.empty());
  Strings values;
  ASSERT_TRUE(table.get(1, {"a", "b"}, &values));
  EXPECT_EQ(values, (Strings{"1", "2"}));
  ASSERT_TRUE(table.get(2, {"a"}, &values));
  EXPECT_EQ(values, (Strings{"1"}));
  EXPECT_EQ(table.size(), 1u);  // "a" spent its two reads, "b" is kept
  EXPECT_FALSE(table.get(3, {"a"}, &values));
  EXPECT_TRUE(table.waiting(3));
}

TEST(StoreTable, WaiterCompletesWhenTheLastKeyArrives) {
  StoreTable table;
  Strings values;
  ASSERT_FALSE(table.get(7, {"x", "y", "x"}, &values));
  Ids ready;
  table.set("x", "X", 0, &ready);
  EXPECT_TRUE(ready.empty());
  table.set("y", "Y", 0, &ready);
  ASSERT_EQ(ready, (Ids{7}));
  ASSERT_TRUE(table.complete(7, &values));
  EXPECT_EQ(values, (Strings{"X", "Y", "X"}));
  EXPECT_FALSE(table.waiting(7));
}

TEST(StoreTable, ManyWaitersOnOneKey) {
  StoreTable table;
  Strings values;
  for (StoreTable::WaiterId id = 1; id <= 3; ++id) ASSERT_FALSE(table.get(id, {"k"}, &values));
  Ids ready;
  table.set("k", "v", 3, &ready);
  ASSERT_EQ(ready.size(), 3u);
  for (StoreTable::WaiterId id : ready) {
    ASSERT_TRUE(table.complete(id, &values));
    EXPECT_EQ(values, (Strings{"v"}));
  }
  EXPECT_EQ(table.size(), 0u);
}

TEST(StoreTable, WaiterReRegistersWhenAKeyVanished) {
  StoreTable table;
  Ids ready;
  table.set("a", "1", 1, &ready);
  Strings values;
  ASSERT_FALSE(table.get(1, {"a", "b"}, &values));  // "a" present, "b" missing
  ASSERT_TRUE(table.get(2, {"a"}, &values));        // spends "a"'s only read
  table.set("b", "2", 0, &ready);
  ASSERT_EQ(ready, (Ids{1}));
  EXPECT_FALSE(table.complete(1, &values));  // "a" is gone: waits again
  ready.clear();
  table.set("a", "3", 0, &ready);
  ASSERT_EQ(ready, (Ids{1}));
  ASSERT_TRUE(table.complete(1, &values));
  EXPECT_EQ(values, (Strings{"3", "2"}));
}

TEST(StoreTable, CancelReportsMissingIndices) {
  StoreTable table;
  Ids ready;
  table.set("b", "2", 0, &ready);
  Strings values;
  ASSERT_FALSE(table.get(4, {"a", "b", "c"}, &values));
  std::vector<uint32_t> missing;
  table.cancel(4, &missing);
  EXPECT_EQ(missing, (std::vector<uint32_t>{0, 2}));
  EXPECT_FALSE(table.waiting(4));
  table.set("a", "1", 0, &ready);
  EXPECT_TRUE(ready.empty());
}

TEST(StoreProtocol, RequestsRoundTrip) {
  StoreRequest set;
  set.op = StoreOp::kSet;
  set.key = "allgather/1/2";
  set.value = std::string("\0\1\2", 3);
  set.reads = 3;
  StoreRequest out;
  ASSERT_TRUE(decode_request(encode_request(set), &out).is_ok());
  EXPECT_EQ(out.key, set.key);
  EXPECT_EQ(out.value, set.value);
  EXPECT_EQ(out.reads, 3u);

  StoreRequest get;
  get.op = StoreOp::kGet;
  get.keys = {"a", "bb"};
  get.timeout_ms = 1500;
  ASSERT_TRUE(decode_request(encode_request(get), &out).is_ok());
  EXPECT_EQ(out.op, StoreOp::kGet);
  EXPECT_EQ(out.keys, get.keys);
  EXPECT_EQ(out.timeout_ms, 1500);
}

TEST(StoreProtocol, MalformedRequestsAreErrors) {
  StoreRequest set;
  set.op = StoreOp::kSet;
  set.key = "k";
  set.value = "v";
  const std::string good = encode_request(set);
  StoreRequest out;
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_FALSE(decode_request(good.substr(0, n), &out).is_ok()) << "truncated to " << n;
  }
  EXPECT_FALSE(decode_request(good + "x", &out).is_ok());
  EXPECT_FALSE(decode_request(std::string(1, '\x09'), &out).is_ok());  // unknown op

  set.key = "";  // empty keys are refused
  EXPECT_FALSE(decode_request(encode_request(set), &out).is_ok());
  set.key = std::string(kStoreMaxKeyBytes + 1, 'k');
  EXPECT_FALSE(decode_request(encode_request(set), &out).is_ok());

  // A get claiming more keys than the limit, or than the payload can hold.
  std::string get(1, static_cast<char>(StoreOp::kGet));
  get.append(8, '\0');  // timeout
  uint32_t count = kStoreMaxKeysPerGet + 1;
  get.append(reinterpret_cast<const char*>(&count), 4);
  EXPECT_FALSE(decode_request(get, &out).is_ok());
  count = 1000;
  std::memcpy(&get[9], &count, 4);
  EXPECT_FALSE(decode_request(get, &out).is_ok());

  StoreRequest hello;
  hello.op = StoreOp::kHello;
  hello.client_nonce = "short";
  EXPECT_FALSE(decode_request(encode_request(hello), &out).is_ok());
}

TEST(StoreProtocol, RepliesRoundTripAndAreChecked) {
  StoreReply values;
  values.kind = StoreReplyKind::kValues;
  values.values = {"", "abc"};
  StoreReply out;
  ASSERT_TRUE(decode_reply(encode_reply(values), 2, &out).is_ok());
  EXPECT_EQ(out.values, values.values);
  EXPECT_FALSE(decode_reply(encode_reply(values), 3, &out).is_ok());  // not what was asked

  StoreReply timed_out;
  timed_out.kind = StoreReplyKind::kTimedOut;
  timed_out.missing = {1};
  ASSERT_TRUE(decode_reply(encode_reply(timed_out), 2, &out).is_ok());
  EXPECT_EQ(out.missing, (std::vector<uint32_t>{1}));
  EXPECT_FALSE(decode_reply(encode_reply(timed_out), 1, &out).is_ok());  // index out of range
}

TEST(StoreFrames, ServerHelloRoundTrip) {
  ServerHello hello;
  hello.authenticated = true;
  for (size_t i = 0; i < kStoreNonceBytes; ++i) hello.nonce[i] = static_cast<uint8_t>(i);
  const std::string bytes = encode_server_hello(hello);
  ASSERT_EQ(bytes.size(), kServerHelloBytes);
  ServerHello out;
  ASSERT_TRUE(decode_server_hello(bytes, &out).is_ok());
  EXPECT_TRUE(out.authenticated);
  EXPECT_EQ(std::memcmp(out.nonce, hello.nonce, kStoreNonceBytes), 0);
  std::string wrong = bytes;
  wrong[0] = 'X';
  EXPECT_FALSE(decode_server_hello(wrong, &out).is_ok());
  EXPECT_FALSE(decode_server_hello(bytes.substr(1), &out).is_ok());
}

struct Pair {
  FrameChannel client, server;
  Pair(const std::string& client_secret, const std::string& server_secret, uint8_t salt = 0) {
    uint8_t server_nonce[kStoreNonceBytes], client_nonce[kStoreNonceBytes];
    for (size_t i = 0; i < kStoreNonceBytes; ++i) {
      server_nonce[i] = static_cast<uint8_t>(i + salt);
      client_nonce[i] = static_cast<uint8_t>(3 * i);
    }
    client.start(client_secret, server_nonce, client_nonce, false);
    server.start(server_secret, server_nonce, client_nonce, true);
  }
};

// The body of a sealed frame (what the reader hands over): the frame without its length.
std::string body_of(const std::string& frame) {
  return frame.substr(4);
}

TEST(StoreFrames, SealedFramesOpenInOrderOnly) {
  Pair pair("secret", "secret");
  const std::string f0 = pair.client.seal("first");
  const std::string f1 = pair.client.seal("second");
  ASSERT_EQ(f0.size(), 4 + 5 + kStoreMacBytes);
  std::string body = body_of(f1);
  EXPECT_FALSE(pair.server.open(&body));  // out of order
  body = body_of(f0);
  ASSERT_TRUE(pair.server.open(&body));
  EXPECT_EQ(body, "first");
  body = body_of(f0);
  EXPECT_FALSE(pair.server.open(&body));  // replayed
}

TEST(StoreFrames, ReflectedTamperedAndForeignFramesFail) {
  Pair pair("secret", "secret");
  std::string reflected = body_of(pair.client.seal("ping"));
  EXPECT_FALSE(pair.client.open(&reflected));  // the client's own frame sent back to it

  Pair tamper("secret", "secret");
  std::string body = body_of(tamper.client.seal("value"));
  body[0] ^= 1;
  EXPECT_FALSE(tamper.server.open(&body));

  Pair wrong("secret", "other");
  body = body_of(wrong.client.seal("value"));
  EXPECT_FALSE(wrong.server.open(&body));

  // A frame from another connection (other nonces) is worthless here.
  Pair first("secret", "secret", 1), second("secret", "secret", 2);
  body = body_of(first.client.seal("value"));
  EXPECT_FALSE(second.server.open(&body));
}

TEST(StoreFrames, NoSecretMeansNoMac) {
  Pair pair("", "");
  const std::string frame = pair.client.seal("plain");
  EXPECT_EQ(frame.size(), 4 + 5u);
  std::string body = body_of(frame);
  ASSERT_TRUE(pair.server.open(&body));
  EXPECT_EQ(body, "plain");
}

}  // namespace

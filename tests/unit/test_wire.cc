// Wire encoding: primitives, message round trips, and malformed input (truncation, random bytes,
// oversized counts and strings, trailing bytes, bad enum values). Expected byte layouts are built
// by hand here (little-endian, u32 length prefixes), not with WireWriter.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/wire.h"
#include "core/message.h"
#include "hvdc.h"

namespace {

using hvdc::common::Status;
using hvdc::common::WireReader;
using hvdc::common::WireWriter;
using hvdc::core::CacheBits;
using hvdc::core::decode;
using hvdc::core::encode;
using hvdc::core::OpType;
using hvdc::core::Request;
using hvdc::core::RequestList;
using hvdc::core::Response;
using hvdc::core::ResponseKind;
using hvdc::core::ResponseList;
using hvdc::core::RoundMessage;
using hvdc::core::Terminate;

// A hand-written little-endian encoder for expected bytes.
struct Bytes {
  std::string s;
  Bytes& le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
    return *this;
  }
  Bytes& u32(uint32_t v) { return le(v, 4); }
  Bytes& i32(int32_t v) { return le(static_cast<uint32_t>(v), 4); }
  Bytes& i64(int64_t v) { return le(static_cast<uint64_t>(v), 8); }
  Bytes& f64(double v) {
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof(bits));
    return le(bits, 8);
  }
  Bytes& str(const std::string& v) {
    u32(static_cast<uint32_t>(v.size()));
    s += v;
    return *this;
  }
  Bytes& params(const hvdc::core::OpParams& p) {
    i32(static_cast<int32_t>(p.op_type)).i32(p.dtype).i32(p.reduce_op).i32(p.root);
    return i32(p.device_type).i32(p.device_id).f64(p.prescale).f64(p.postscale).u32(p.flags);
  }
  Bytes& request(const Request& r) {
    str(r.name).i32(r.process_set).params(r);
    u32(static_cast<uint32_t>(r.shape.size()));
    for (int64_t d : r.shape) i64(d);
    return *this;
  }
};

Request make_request(const std::string& name, int salt, size_t ndim) {
  Request r;
  r.name = name;
  r.process_set = 40000 + salt;
  r.op_type = static_cast<OpType>(salt % 4);
  r.dtype = HVD_FLOAT32 + salt;
  r.reduce_op = HVD_OP_MAX;
  r.root = 7 + salt;
  r.device_type = HVD_DEVICE_CUDA;
  r.device_id = 3 + salt;
  r.prescale = 0.25 + salt;
  r.postscale = -1.5e300;
  r.flags = HVD_OP_HOST_PATH + static_cast<uint32_t>(salt);
  for (size_t i = 0; i < ndim; ++i) r.shape.push_back(static_cast<int64_t>(i * 1000003 + salt));
  return r;
}

RequestList sample_requests() {
  RequestList list;
  list.requests.push_back(make_request("layer0/weight", 0, 2));
  list.requests.push_back(make_request(std::string(hvdc::core::kMaxNameLength, 'n'), 1, 0));
  list.requests.push_back(make_request("max_ndim", 2, HVD_MAX_NDIM));
  list.requests.push_back(
      make_request(std::string("NUL \0 inside", sizeof("NUL \0 inside") - 1), 3, 3));
  list.requests.back().shape[1] = -1;
  list.requests.back().shape[2] = INT64_MAX;
  return list;
}

ResponseList sample_responses() {
  ResponseList list;
  Response a;
  a.kind = ResponseKind::kExecute;
  a.op_type = OpType::kAllreduce;
  a.names = {"grad/a", "grad/b", std::string(hvdc::core::kMaxNameLength, 'z')};
  a.dtype = HVD_BFLOAT16;
  a.reduce_op = HVD_OP_MAX;
  a.prescale = 0.5;
  a.postscale = -3.25;
  a.device_type = HVD_DEVICE_CUDA;
  a.device_id = 5;
  a.flags = HVD_OP_HOST_PATH;
  a.counts = {1, 0, 1 << 20};
  list.responses.push_back(a);
  Response b;
  b.kind = ResponseKind::kError;
  b.op_type = OpType::kBroadcast;
  b.names = {"bcast"};
  b.error_code = HVD_ERR_MISMATCH;
  b.error_message = "Mismatched BROADCAST root rank for tensor 'bcast': rank 0: 0; rank 1: 1";
  list.responses.push_back(b);
  Response c;
  c.kind = ResponseKind::kExecute;
  c.op_type = OpType::kBarrier;
  list.responses.push_back(c);  // no names, empty message
  Response d;
  d.process_set = 255;
  d.op_type = OpType::kAllgather;
  d.names = {"gathered"};
  d.sizes = {3, 0, 7};  // each rank's first dimension
  list.responses.push_back(d);
  return list;
}

Terminate sample_terminate() {
  Terminate t;
  t.code = HVD_ERR_ABORTED;
  t.rank = 5;
  t.reason = "hvd_abort was called on rank 5: " + std::string(1000, 'r');
  t.completed_ops = {0, (int64_t{1} << 33) + 5, 3, 17};
  return t;
}

void expect_equal(const Request& a, const Request& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.process_set, b.process_set);
  EXPECT_EQ(a.op_type, b.op_type);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.reduce_op, b.reduce_op);
  EXPECT_EQ(a.root, b.root);
  EXPECT_EQ(a.device_type, b.device_type);
  EXPECT_EQ(a.device_id, b.device_id);
  EXPECT_EQ(a.prescale, b.prescale);
  EXPECT_EQ(a.postscale, b.postscale);
  EXPECT_EQ(a.flags, b.flags);
  EXPECT_EQ(a.shape, b.shape);
}

TEST(Wire, PrimitivesAreLittleEndianAndRoundTrip) {
  WireWriter w;
  w.u8(0xAB);
  w.i32(-2);
  w.u32(0x01020304u);
  w.i64(0x0102030405060708LL);
  w.f64(3.5);
  w.str("hey");
  w.i64s({-1, 2});
  const std::string bytes = w.take();
  Bytes expected;
  expected.le(0xAB, 1).i32(-2).u32(0x01020304u).i64(0x0102030405060708LL).f64(3.5).str("hey");
  expected.u32(2).i64(-1).i64(2);
  ASSERT_EQ(bytes, expected.s);

  WireReader r(bytes, "test");
  uint8_t u8 = 0;
  int32_t i32 = 0;
  uint32_t u32 = 0;
  int64_t i64 = 0;
  double f64 = 0;
  std::string s;
  std::vector<int64_t> v;
  ASSERT_TRUE(r.u8(&u8).is_ok());
  ASSERT_TRUE(r.i32(&i32).is_ok());
  ASSERT_TRUE(r.u32(&u32).is_ok());
  ASSERT_TRUE(r.i64(&i64).is_ok());
  ASSERT_TRUE(r.f64(&f64).is_ok());
  ASSERT_TRUE(r.str(&s, 3).is_ok());
  ASSERT_TRUE(r.i64s(&v, 2).is_ok());
  EXPECT_TRUE(r.finish().is_ok());
  EXPECT_EQ(u8, 0xAB);
  EXPECT_EQ(i32, -2);
  EXPECT_EQ(u32, 0x01020304u);
  EXPECT_EQ(i64, 0x0102030405060708LL);
  EXPECT_EQ(f64, 3.5);
  EXPECT_EQ(s, "hey");
  EXPECT_EQ(v, (std::vector<int64_t>{-1, 2}));
  int32_t past_end = 0;
  EXPECT_FALSE(r.i32(&past_end).is_ok());
}

// Cache bits travel as u64s: the i64s layout, so the top bit of a word survives as is.
TEST(Wire, UnsignedWordsHaveTheSignedLayoutAndLimits) {
  WireWriter w;
  w.u64s({0x8000000000000001ull, 0, 42});
  const std::string bytes = w.take();
  ASSERT_EQ(bytes, Bytes().u32(3).i64(INT64_MIN + 1).i64(0).i64(42).s);
  std::vector<uint64_t> v;
  WireReader r(bytes, "t");
  ASSERT_TRUE(r.u64s(&v, 3).is_ok());
  EXPECT_TRUE(r.finish().is_ok());
  EXPECT_EQ(v, (std::vector<uint64_t>{0x8000000000000001ull, 0, 42}));
  EXPECT_FALSE(WireReader(bytes, "t").u64s(&v, 2).is_ok());
  EXPECT_FALSE(WireReader(bytes.substr(0, bytes.size() - 1), "t").u64s(&v, 3).is_ok());
  const std::string huge = Bytes().u32(0xFFFFFFFFu).i64(1).s;
  EXPECT_FALSE(WireReader(huge, "t").u64s(&v, SIZE_MAX).is_ok());
}

TEST(Wire, ReaderRejectsOverLimitsAndShortInput) {
  const std::string str4 = Bytes().str("abcd").s;
  std::string s;
  EXPECT_FALSE(WireReader(str4, "t").str(&s, 3).is_ok());
  EXPECT_TRUE(WireReader(str4, "t").str(&s, 4).is_ok());
  const std::string short_str = str4.substr(0, str4.size() - 1);
  EXPECT_FALSE(WireReader(short_str, "t").str(&s, 100).is_ok());

  const std::string arr = Bytes().u32(3).i64(1).i64(2).i64(3).s;
  std::vector<int64_t> v;
  EXPECT_FALSE(WireReader(arr, "t").i64s(&v, 2).is_ok());
  EXPECT_FALSE(WireReader(arr.substr(0, arr.size() - 1), "t").i64s(&v, 3).is_ok());
  const std::string huge = Bytes().u32(0xFFFFFFFFu).i64(1).s;
  EXPECT_FALSE(WireReader(huge, "t").i64s(&v, SIZE_MAX).is_ok());

  uint32_t n = 0;
  const std::string counted = Bytes().u32(3).i32(0).i32(0).s;  // 8 bytes for 3 items
  EXPECT_FALSE(WireReader(counted, "t").count(&n, 4).is_ok());
  EXPECT_TRUE(WireReader(counted, "t").count(&n, 2).is_ok());
  EXPECT_EQ(n, 3u);

  WireReader trailing(counted, "thing");
  int32_t x = 0;
  ASSERT_TRUE(trailing.i32(&x).is_ok());
  Status st = trailing.finish();
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("thing"), std::string::npos) << st.message();
}

TEST(Message, RequestListRoundTripAndLayout) {
  const RequestList list = sample_requests();
  const std::string bytes = encode(list);
  Bytes expected;
  expected.u32(static_cast<uint32_t>(list.requests.size()));
  for (const Request& r : list.requests) expected.request(r);
  EXPECT_EQ(bytes, expected.s);

  RequestList out;
  Status st = decode(bytes, &out);
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_EQ(out.requests.size(), list.requests.size());
  for (size_t i = 0; i < list.requests.size(); ++i) expect_equal(out.requests[i], list.requests[i]);
}

TEST(Message, EmptyListsRoundTrip) {
  RequestList requests;
  requests.requests.push_back(Request());
  ASSERT_TRUE(decode(encode(RequestList()), &requests).is_ok());
  EXPECT_TRUE(requests.requests.empty());
  ResponseList responses;
  ASSERT_TRUE(decode(encode(ResponseList()), &responses).is_ok());
  EXPECT_TRUE(responses.responses.empty());
  Terminate t;
  ASSERT_TRUE(decode(encode(Terminate()), &t).is_ok());
  EXPECT_EQ(t.code, 0);
  EXPECT_EQ(t.rank, -1);
  EXPECT_EQ(t.reason, "");
}

TEST(Message, ResponseListRoundTripAndLayout) {
  const ResponseList list = sample_responses();
  const std::string bytes = encode(list);
  Bytes expected;
  expected.u32(static_cast<uint32_t>(list.responses.size()));
  for (const Response& r : list.responses) {
    expected.i32(static_cast<int32_t>(r.kind)).i32(r.process_set).params(r);
    expected.u32(static_cast<uint32_t>(r.names.size()));
    for (const std::string& n : r.names) expected.str(n);
    expected.i32(r.error_code).str(r.error_message).u32(static_cast<uint32_t>(r.sizes.size()));
    for (int64_t size : r.sizes) expected.i64(size);
    expected.u32(static_cast<uint32_t>(r.counts.size()));
    for (int64_t c : r.counts) expected.i64(c);
  }
  EXPECT_EQ(bytes, expected.s);

  ResponseList out;
  Status st = decode(bytes, &out);
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_EQ(out.responses.size(), list.responses.size());
  for (size_t i = 0; i < list.responses.size(); ++i) {
    EXPECT_EQ(out.responses[i].kind, list.responses[i].kind);
    EXPECT_EQ(out.responses[i].process_set, list.responses[i].process_set);
    EXPECT_EQ(out.responses[i].op_type, list.responses[i].op_type);
    EXPECT_EQ(out.responses[i].names, list.responses[i].names);
    EXPECT_EQ(out.responses[i].error_code, list.responses[i].error_code);
    EXPECT_EQ(out.responses[i].error_message, list.responses[i].error_message);
    EXPECT_EQ(out.responses[i].sizes, list.responses[i].sizes);
    EXPECT_EQ(out.responses[i].dtype, list.responses[i].dtype);
    EXPECT_EQ(out.responses[i].reduce_op, list.responses[i].reduce_op);
    EXPECT_EQ(out.responses[i].root, list.responses[i].root);
    EXPECT_EQ(out.responses[i].device_id, list.responses[i].device_id);
    EXPECT_EQ(out.responses[i].prescale, list.responses[i].prescale);
    EXPECT_EQ(out.responses[i].postscale, list.responses[i].postscale);
    EXPECT_EQ(out.responses[i].flags, list.responses[i].flags);
    EXPECT_EQ(out.responses[i].counts, list.responses[i].counts);
  }
}

TEST(Message, TerminateRoundTripAndLayout) {
  const Terminate t = sample_terminate();
  const std::string bytes = encode(t);
  Bytes expected;
  expected.i32(t.code).i32(t.rank).str(t.reason).u32(4);
  for (int64_t v : t.completed_ops) expected.i64(v);
  EXPECT_EQ(bytes, expected.s);
  Terminate out;
  ASSERT_TRUE(decode(bytes, &out).is_ok());
  EXPECT_EQ(out.code, t.code);
  EXPECT_EQ(out.rank, t.rank);
  EXPECT_EQ(out.reason, t.reason);
  EXPECT_EQ(out.completed_ops, t.completed_ops);
}

// A scalar (no dims) with a short name is the smallest valid request: 48 bytes. The decoder's
// minimum-size check must not reject it. Fails today: message.cc's kMinRequestBytes counts seven
// int32 fields where a request has six, so it claims 52 bytes. Enable once that is fixed.
TEST(Message, SmallestRequestsRoundTrip) {
  for (const char* name : {"", "x", "abc"}) {
    Request r;
    r.name = name;
    RequestList list;
    list.requests = {r, r, r};
    RequestList out;
    Status st = decode(encode(list), &out);
    EXPECT_TRUE(st.is_ok()) << "name '" << name << "': " << st.message();
    EXPECT_EQ(out.requests.size(), 3u);
  }
}

template <typename T>
void expect_every_truncation_fails(const std::string& bytes) {
  for (size_t len = 0; len < bytes.size(); ++len) {
    T out;
    Status st = decode(bytes.substr(0, len), &out);
    EXPECT_FALSE(st.is_ok()) << "prefix of " << len << " of " << bytes.size() << " bytes decoded";
    EXPECT_FALSE(st.message().empty());
  }
}

TEST(Message, EveryTruncationIsAnError) {
  expect_every_truncation_fails<RequestList>(encode(sample_requests()));
  expect_every_truncation_fails<ResponseList>(encode(sample_responses()));
  expect_every_truncation_fails<Terminate>(encode(sample_terminate()));
}

TEST(Message, TrailingBytesAreAnError) {
  RequestList requests;
  EXPECT_FALSE(decode(encode(sample_requests()) + "x", &requests).is_ok());
  ResponseList responses;
  EXPECT_FALSE(decode(encode(sample_responses()) + std::string(1, '\0'), &responses).is_ok());
  Terminate t;
  EXPECT_FALSE(decode(encode(sample_terminate()) + "tail", &t).is_ok());
}

TEST(Message, CountsLargerThanTheInputAreRejected) {
  RequestList requests;
  EXPECT_FALSE(decode(Bytes().u32(0xFFFFFFFFu).s, &requests).is_ok());
  Bytes one_request;
  one_request.u32(1000).request(make_request("r", 0, 1));
  EXPECT_FALSE(decode(one_request.s, &requests).is_ok());

  // A shape count far beyond the bytes present (and beyond HVD_MAX_NDIM).
  Request r = make_request("shape", 0, 0);
  std::string bad_shape = Bytes().u32(1).request(r).s;
  bad_shape.resize(bad_shape.size() - 4);
  bad_shape += Bytes().u32(0x7FFFFFFFu).i64(1).s;
  EXPECT_FALSE(decode(bad_shape, &requests).is_ok());

  ResponseList responses;
  EXPECT_FALSE(decode(Bytes().u32(0x10000000u).i32(0).s, &responses).is_ok());
  // One response whose name count claims a billion names.
  Bytes names;
  names.u32(1).i32(0).i32(0).u32(1000000000u).str("a").i32(0).str("");
  EXPECT_FALSE(decode(names.s, &responses).is_ok());
}

TEST(Message, StringsLongerThanTheLimitAreRejected) {
  RequestList requests;
  Request r = make_request(std::string(hvdc::core::kMaxNameLength + 1, 'q'), 0, 1);
  EXPECT_FALSE(decode(Bytes().u32(1).request(r).s, &requests).is_ok());
  r.name.pop_back();
  EXPECT_TRUE(decode(Bytes().u32(1).request(r).s, &requests).is_ok());

  ResponseList responses;
  Bytes long_name;
  long_name.u32(1).i32(0).i32(0).u32(1).str(std::string(hvdc::core::kMaxNameLength + 1, 'q'));
  long_name.i32(0).str("");
  EXPECT_FALSE(decode(long_name.s, &responses).is_ok());
  Bytes long_message;
  long_message.u32(1).i32(1).i32(0).u32(0).i32(HVD_ERR_MISMATCH).str(std::string(2 << 20, 'm'));
  EXPECT_FALSE(decode(long_message.s, &responses).is_ok());

  Terminate t;
  EXPECT_FALSE(decode(Bytes().i32(-10).i32(0).str(std::string(1 << 20, 'x')).s, &t).is_ok());
  // A length prefix that claims 4 GiB with only a few bytes behind it.
  EXPECT_FALSE(decode(Bytes().i32(-10).i32(0).u32(0xFFFFFFFFu).s + "abc", &t).is_ok());
}

TEST(Message, TooManyDimsAreRejected) {
  RequestList requests;
  Request r = make_request("dims", 0, HVD_MAX_NDIM + 1);
  EXPECT_FALSE(decode(Bytes().u32(1).request(r).s, &requests).is_ok());
}

TEST(Message, OutOfRangeEnumsAreRejected) {
  RequestList requests;
  for (int32_t op : {-1, 9, 1000, INT32_MIN}) {
    Request r = make_request("enum", 0, 1);
    std::string bytes = Bytes().u32(1).request(r).s;
    // The op type follows the count (4), the name (4 + 4 bytes) and the process set (4).
    std::string op_bytes = Bytes().i32(op).s;
    bytes.replace(16, 4, op_bytes);
    EXPECT_FALSE(decode(bytes, &requests).is_ok()) << "op type " << op;
  }
  ResponseList responses;
  for (int32_t kind : {-1, 2, 77}) {
    Bytes b;
    b.u32(1).i32(kind).i32(0).i32(0).u32(0).i32(0).str("").u32(0);
    EXPECT_FALSE(decode(b.s, &responses).is_ok()) << "kind " << kind;
  }
  for (int32_t op : {-1, 9, 99}) {
    Bytes b;
    b.u32(1).i32(0).i32(0).i32(op).u32(0).i32(0).str("").u32(0);
    EXPECT_FALSE(decode(b.s, &responses).is_ok()) << "op type " << op;
  }
  Bytes valid;
  valid.u32(1).i32(1).i32(2).i32(3).i32(0).i32(0).i32(0).i32(1).i32(0).f64(1).f64(1).u32(0);
  valid.u32(0).i32(0).str("").u32(0).u32(0);
  EXPECT_TRUE(decode(valid.s, &responses).is_ok());
}

TEST(Message, RoundMessageRoundTripAndTruncation) {
  RoundMessage msg;
  msg.round = (uint64_t{1} << 40) + 7;
  CacheBits global;
  global.hits = {0x8000000000000001ull, 0, 42};
  global.invalid = {0, 1 << 5, 0};
  CacheBits other;
  other.process_set = 7;
  other.hits = {1};
  msg.sets = {global, other};
  msg.joined = 1;
  msg.responses = sample_responses();
  const std::string first_input = "\x01\x02\x03\x04", second_input(4096, '\x7f');
  msg.inputs.resize(2);
  msg.inputs[0].slot = 3;
  msg.inputs[0].data = first_input.data();
  msg.inputs[0].size = static_cast<uint32_t>(first_input.size());
  msg.inputs[1].process_set = 7;
  msg.inputs[1].slot = 1023;
  msg.inputs[1].data = second_input.data();
  msg.inputs[1].size = static_cast<uint32_t>(second_input.size());
  const std::string bytes = encode(msg);
  RoundMessage out;
  Status st = decode(bytes, &out);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(out.round, msg.round);
  ASSERT_EQ(out.sets.size(), 2u);
  for (size_t i = 0; i < out.sets.size(); ++i) {
    EXPECT_EQ(out.sets[i].process_set, msg.sets[i].process_set);
    EXPECT_EQ(out.sets[i].hits, msg.sets[i].hits);
    EXPECT_EQ(out.sets[i].invalid, msg.sets[i].invalid);
  }
  EXPECT_EQ(out.joined, 1);
  ASSERT_EQ(out.responses.responses.size(), msg.responses.responses.size());
  EXPECT_EQ(out.responses.responses[0].counts, msg.responses.responses[0].counts);
  // Decoded inputs view the encoded bytes.
  ASSERT_EQ(out.inputs.size(), 2u);
  EXPECT_EQ(out.inputs[0].process_set, 0);
  EXPECT_EQ(out.inputs[0].slot, 3u);
  EXPECT_GE(out.inputs[0].data, bytes.data());
  EXPECT_LE(out.inputs[1].data + out.inputs[1].size, bytes.data() + bytes.size());
  EXPECT_EQ(std::string(out.inputs[0].data, out.inputs[0].size), first_input);
  EXPECT_EQ(out.inputs[1].process_set, 7);
  EXPECT_EQ(out.inputs[1].slot, 1023u);
  EXPECT_EQ(std::string(out.inputs[1].data, out.inputs[1].size), second_input);
  expect_every_truncation_fails<RoundMessage>(bytes);
  EXPECT_FALSE(decode(bytes + "x", &out).is_ok());
}

// Random buffers and randomly corrupted valid messages: any result is fine as long as decoding
// returns (under ASan: without touching memory out of bounds or allocating absurd sizes).
TEST(Message, RandomBytesNeverCrash) {
  std::mt19937 rng(12345);
  const std::string valid[3] = {encode(sample_requests()), encode(sample_responses()),
                                encode(sample_terminate())};
  size_t decoded_ok = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string buf;
    if (iter % 2 == 0) {
      buf.resize(rng() % 256);
      for (char& c : buf) c = static_cast<char>(rng() & 0xFF);
      // Small counts make it past the first check more often.
      if (buf.size() >= 4 && iter % 4 == 0) buf[1] = buf[2] = buf[3] = 0;
    } else {
      buf = valid[iter % 3];
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) buf[rng() % buf.size()] = static_cast<char>(rng() & 0xFF);
    }
    RequestList requests;
    ResponseList responses;
    Terminate t;
    Status a = decode(buf, &requests);
    Status b = decode(buf, &responses);
    Status c = decode(buf, &t);
    decoded_ok += a.is_ok() + b.is_ok() + c.is_ok();
    if (!a.is_ok()) {
      EXPECT_FALSE(a.message().empty());
    }
    if (a.is_ok()) {
      for (const Request& r : requests.requests) {
        EXPECT_LE(r.name.size(), hvdc::core::kMaxNameLength);
        EXPECT_LE(r.shape.size(), static_cast<size_t>(HVD_MAX_NDIM));
      }
    }
  }
  // Corrupted message bodies (names, scale factors) still decode.
  EXPECT_GT(decoded_ok, 0u);
}

}  // namespace

namespace {

// A large field is appended where its copy is fast and copied by copy_bytes where memcpy would
// be slow (common/copy_bytes.h): from every source offset in a page, one or the other, the
// field reads back whole, after a small field, and twice in one writer (the second grows it).
TEST(WireLargeFields, EverySourceOffsetReadsBack) {
  constexpr size_t kField = 4096 + 24;
  std::vector<char> area(2 * 4096 + kField);
  char* page = area.data() + (4096 - reinterpret_cast<uintptr_t>(area.data()) % 4096) % 4096;
  for (size_t i = 0; i < area.size(); ++i) area[i] = static_cast<char>(i * 131 + 7);
  for (size_t offset = 0; offset < 4096; ++offset) {
    const char* src = page + offset;
    WireWriter out;
    out.u32(7);
    out.bytes(src, kField);
    out.bytes(src + 1, kField - 1);
    const std::string wire = out.take();
    ASSERT_EQ(4 + 2 * kField - 1, wire.size()) << "offset " << offset;
    ASSERT_EQ(0, std::memcmp(wire.data() + 4, src, kField)) << "offset " << offset;
    ASSERT_EQ(0, std::memcmp(wire.data() + 4 + kField, src + 1, kField - 1)) << "offset " << offset;
  }
}

}  // namespace

// The wire fuzz target's input layout, shared by the target (wire_fuzz.cc), its seed generator
// (wire_fuzz_seeds.cc) and the replay driver (wire_fuzz_main.cc).
//
// Byte 0 selects the decoder (modulo kWireKinds); the rest is its input. Two kinds take one more
// byte before their input: a store reply (byte 1: how many keys the request asked for) and a
// frame stream (byte 1: reader limit, authentication and direction; see FrameMode).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace hvdc::fuzz {

enum WireKind : uint8_t {
  kRequestList = 0,   // coordinator input: what a rank has ready
  kResponseList = 1,  // negotiated responses
  kRoundMessage = 2,  // a round: cache bit vectors, joined flag, responses
  kTerminate = 3,     // abort / shutdown notice
  kStoreRequest = 4,  // rendezvous store: hello, set, get
  kStoreReply = 5,    // rendezvous store: ok, values, timed out, error
  kServerHello = 6,   // the store's greeting
  kFrameStream = 7,   // bytes on a store connection, read by FrameReader
  kStallReport = 8,   // a timed-out rank's list of the ranks it waited for
  kTreeMessage = 9,   // a round up and down the tree: want, open, up, down, probe
  kWireKinds = 10
};

// Byte 1 of a frame stream input.
constexpr uint8_t kFrameLimitMask = 3;      // index into the reader limits (wire_fuzz.cc)
constexpr uint8_t kFrameAuthenticated = 4;  // frames carry MACs under kFuzzSecret
constexpr uint8_t kFrameToClient = 8;       // the reader is the client (else the store)

// The secret and nonces both ends of an authenticated fuzz connection use, so that seeds can
// hold frames that pass the MAC check.
constexpr const char* kFuzzSecret = "wire-fuzz-secret";
constexpr uint8_t kFuzzServerNonce = 0x5A;
constexpr uint8_t kFuzzClientNonce = 0xC3;

// Valid inputs of every kind, each prefixed with its selector byte(s).
std::vector<std::string> wire_seeds();

}  // namespace hvdc::fuzz

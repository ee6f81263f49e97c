// Shared by the bad-input unit tests (test_bad_input*.cc): the status-and-message assertion,
// tensor descriptors, and a fixture that runs each test on a singleton engine of the C API.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "hvdc.h"

namespace hvdc_test {

using Parts = std::vector<std::string>;
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();

// `got` must be `want`, and the thread's last error message must contain every part.
inline testing::AssertionResult Fails(hvd_status_t got, hvd_status_t want, const Parts& parts) {
  const std::string message = hvd_last_error_message();
  if (got != want) {
    return testing::AssertionFailure() << "got " << hvd_status_string(got) << " (" << got
                                       << "), want " << hvd_status_string(want) << ": " << message;
  }
  for (const std::string& p : parts) {
    if (message.find(p) == std::string::npos) {
      return testing::AssertionFailure() << "message lacks '" << p << "': " << message;
    }
  }
  return testing::AssertionSuccess();
}
#define EXPECT_FAILS(call, code, ...) \
  EXPECT_TRUE(Fails((call), (code), Parts{__VA_ARGS__})) << #call

inline hvd_tensor_t tensor(void* data, int32_t dtype, int32_t ndim, const int64_t* shape) {
  hvd_tensor_t t;
  t.data = data;
  t.dtype = dtype;
  t.ndim = ndim;
  t.shape = shape;
  t.device.type = HVD_DEVICE_CPU;
  t.device.id = 0;
  return t;
}

// A singleton engine whatever the environment says (the test may run under a launcher).
inline hvd_status_t init_singleton() {
  hvd_config_t* config = nullptr;
  hvd_status_t s = hvd_config_create(&config);
  if (s != HVD_SUCCESS) return s;
  s = hvd_config_set_str(config, HVD_CFG_BOOTSTRAP, "singleton");
  if (s == HVD_SUCCESS) s = hvd_config_set_int(config, HVD_CFG_LOG_LEVEL, 4);  // bad calls warn
  if (s == HVD_SUCCESS) s = hvd_init_with_config(config);
  hvd_config_destroy(config);
  return s;
}

// A valid allreduce named `name` (NULL: automatic) submits, completes and frees.
inline void expect_allreduce_works(const char* name) {
  float x = 3.0f;
  const int64_t shape[1] = {1};
  hvd_tensor_t t = tensor(&x, HVD_FLOAT32, 1, shape);
  hvd_handle_t h = 0;
  ASSERT_EQ(hvd_allreduce_async(&t, &x, HVD_OP_SUM, name, nullptr, &h), HVD_SUCCESS)
      << (name ? name : "(auto)") << ": " << hvd_last_error_message();
  EXPECT_EQ(hvd_wait(h), HVD_SUCCESS) << hvd_last_error_message();
  EXPECT_EQ(hvd_handle_free(h), HVD_SUCCESS);
  EXPECT_EQ(x, 3.0f);
}

class BadInput : public testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(init_singleton(), HVD_SUCCESS) << hvd_last_error_message(); }
  void TearDown() override {
    expect_allreduce_works(nullptr);
    EXPECT_EQ(hvd_shutdown(), HVD_SUCCESS) << hvd_last_error_message();
  }
};

}  // namespace hvdc_test

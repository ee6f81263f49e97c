// A small check framework for the C++ binding's tests: each case is a function; a failed
// expectation is counted and printed with the rank; an hvdc::Error escaping a case is a failure.
#ifndef HVDC_TESTS_CXX_CHECK_H_
#define HVDC_TESTS_CXX_CHECK_H_

#include <hvdc.hpp>

#include <cstdio>
#include <string>

namespace cxx_test {

inline int& failures() {
  static int count = 0;
  return count;
}

inline void fail(const char* file, int line, const std::string& what) {
  ++failures();
  std::fprintf(stderr, "rank %d: %s:%d: %s\n", hvdc::rank(), file, line, what.c_str());
}

// Runs fn, which must throw hvdc::Error with `code` and a message containing `needle`.
template <class Fn>
void expect_error(const char* file, int line, hvd_status_t code, const std::string& needle, Fn fn) {
  try {
    fn();
  } catch (const hvdc::Error& e) {
    const std::string what = e.what();
    if (e.code() != code || what.find(needle) == std::string::npos) {
      fail(file, line,
           "expected status " + std::to_string(code) + " mentioning '" + needle + "', got " +
               std::to_string(e.code()) + ": " + what);
    }
    return;
  }
  fail(file, line, "expected an hvdc::Error with status " + std::to_string(code));
}

}  // namespace cxx_test

#define EXPECT(cond) \
  ((cond) ? (void)0 : cxx_test::fail(__FILE__, __LINE__, std::string("expected ") + #cond))
#define EXPECT_EQ(a, b)                                                                   \
  (((a) == (b)) ? (void)0                                                                 \
                : cxx_test::fail(__FILE__, __LINE__,                                      \
                                 std::string("expected ") + #a + " == " + #b + ", got " + \
                                     std::to_string(a) + " and " + std::to_string(b)))
#define EXPECT_ERROR(code, needle, ...) \
  cxx_test::expect_error(__FILE__, __LINE__, code, needle, [&] { __VA_ARGS__; })

#endif  // HVDC_TESTS_CXX_CHECK_H_

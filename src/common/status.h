// Status: an hvd_status_t code plus a message with context. Internal errors travel as values of
// this type; exceptions never cross the C boundary.
#pragma once

#include <string>
#include <utility>

#include "hvdc.h"

namespace hvdc::common {

class Status {
 public:
  Status() = default;
  Status(hvd_status_t code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return Status(); }
  bool is_ok() const { return code_ == HVD_SUCCESS; }
  hvd_status_t code() const { return code_; }
  const std::string& message() const { return message_; }

  // "context: message", keeping the code.
  Status with_context(const std::string& context) const;

 private:
  hvd_status_t code_ = HVD_SUCCESS;
  std::string message_;
};

// printf-style formatting into a std::string.
std::string strfmt(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// An error status with a printf-formatted message.
Status make_error(hvd_status_t code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// The static text for a code (what hvd_status_string returns).
const char* status_name(hvd_status_t code);

}  // namespace hvdc::common

#define HVDC_RETURN_IF_ERROR(expr)                  \
  do {                                              \
    ::hvdc::common::Status hvdc_status_ = (expr);   \
    if (!hvdc_status_.is_ok()) return hvdc_status_; \
  } while (0)

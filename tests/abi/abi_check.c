/* Check bookkeeping shared by the ABI consumer's files. */
#include "abi_check.h"

#include <stdio.h>
#include <string.h>

int g_passed = 0;
int g_failed = 0;

void check_at(int ok, int line, const char* what) {
  if (ok) {
    ++g_passed;
    return;
  }
  ++g_failed;
  printf("FAIL line %d: %s\n", line, what);
}

/* got must equal want; for an error, message must be non-empty and contain needle (if any). */
void expect_message_at(hvd_status_t got, hvd_status_t want, const char* message, const char* needle,
                       int line, const char* what) {
  char copy[1024];
  int ok = got == want;
  snprintf(copy, sizeof(copy), "%s", message != NULL ? message : "(null)");
  if (ok && want < 0) {
    ok = message != NULL && copy[0] != '\0' && (needle == NULL || strstr(copy, needle) != NULL);
  }
  if (ok) {
    ++g_passed;
    return;
  }
  ++g_failed;
  printf("FAIL line %d: %s\n  returned %d (%s), expected %d (%s)", line, what, (int)got,
         hvd_status_string(got), (int)want, hvd_status_string(want));
  if (want < 0) printf("; message '%s' must name '%s'", copy, needle != NULL ? needle : "");
  printf("\n");
}

/* The message is read after the call: the call is an argument, evaluated before the body. */
void expect_at(hvd_status_t got, hvd_status_t want, const char* needle, int line,
               const char* what) {
  expect_message_at(got, want, hvd_last_error_message(), needle, line, what);
}

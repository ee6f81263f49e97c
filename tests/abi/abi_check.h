/* Check bookkeeping for the ABI consumer: counts, and one "FAIL line N: ..." per failure. */
#ifndef HVDC_ABI_CHECK_H_
#define HVDC_ABI_CHECK_H_

#include <hvdc.h>

extern int g_passed;
extern int g_failed;

void check_at(int ok, int line, const char* what);
/* got must equal want; for an error, message must be non-empty and contain needle (if any). */
void expect_message_at(hvd_status_t got, hvd_status_t want, const char* message, const char* needle,
                       int line, const char* what);
/* The message is read after the call: the call is an argument, evaluated before the body. */
void expect_at(hvd_status_t got, hvd_status_t want, const char* needle, int line, const char* what);

#define CHECK(cond) check_at((cond) != 0, __LINE__, #cond)
#define EXPECT_OK(call) expect_at((call), HVD_SUCCESS, NULL, __LINE__, #call)
#define EXPECT_ERR(call, want, needle) expect_at((call), (want), (needle), __LINE__, #call)

#endif

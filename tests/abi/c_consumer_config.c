/* The ABI consumer's checks of the configuration object, HVDC_* and HOROVOD_* environment
 * variables, and the log callback (run before the first successful hvd_init). */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_check.h"
#include "c_consumer.h"

/* The library serializes log callbacks; results are read after hvd_shutdown joined the engine. */
typedef struct log_capture_t {
  int magic;
  int lines;
  int bad_levels;
  int empty_lines;
} log_capture_t;

static void capture_log(void* user_data, int32_t level, const char* message) {
  log_capture_t* c = (log_capture_t*)user_data;
  if (c == NULL || c->magic != 0x10c) return;
  ++c->lines;
  if (level < 0 || level > 4) ++c->bad_levels;
  if (message == NULL || message[0] == '\0') ++c->empty_lines;
}

void test_config(void) {
  hvd_config_t* cfg = NULL;
  EXPECT_ERR(hvd_config_create(NULL), HVD_ERR_INVALID_ARGUMENT, "out");
  EXPECT_OK(hvd_config_create(&cfg));
  CHECK(cfg != NULL);
  if (cfg == NULL) return;
  /* Unknown keys: unsupported, with a message that says why. */
  EXPECT_ERR(hvd_config_set_int(cfg, 999, 1), HVD_ERR_UNSUPPORTED, "999");
  EXPECT_ERR(hvd_config_set_str(cfg, 999, "x"), HVD_ERR_UNSUPPORTED, "999");
  EXPECT_ERR(hvd_config_set_int(cfg, -1, 1), HVD_ERR_UNSUPPORTED, NULL);
  /* Typed setters: a string key through set_int and an int key through set_str. */
  EXPECT_ERR(hvd_config_set_int(cfg, HVD_CFG_HOSTNAME, 1), HVD_ERR_INVALID_ARGUMENT,
             "HVDC_HOSTNAME");
  EXPECT_ERR(hvd_config_set_int(cfg, HVD_CFG_BOOTSTRAP, 1), HVD_ERR_INVALID_ARGUMENT,
             "HVDC_BOOTSTRAP");
  EXPECT_ERR(hvd_config_set_str(cfg, HVD_CFG_LOG_LEVEL, "info"), HVD_ERR_INVALID_ARGUMENT,
             "HVDC_LOG_LEVEL");
  EXPECT_ERR(hvd_config_set_str(cfg, HVD_CFG_SPIN_MICROS, "10"), HVD_ERR_INVALID_ARGUMENT,
             "HVDC_SPIN_MICROS");
  /* Bad values name the knob. */
  EXPECT_ERR(hvd_config_set_int(cfg, HVD_CFG_LOG_LEVEL, 9), HVD_ERR_INVALID_ARGUMENT,
             "HVDC_LOG_LEVEL");
  EXPECT_ERR(hvd_config_set_int(cfg, HVD_CFG_LOG_LEVEL, -1), HVD_ERR_INVALID_ARGUMENT,
             "HVDC_LOG_LEVEL");
  EXPECT_ERR(hvd_config_set_int(cfg, HVD_CFG_SPIN_MICROS, -5), HVD_ERR_INVALID_ARGUMENT,
             "HVDC_SPIN_MICROS");
  EXPECT_ERR(hvd_config_set_str(cfg, HVD_CFG_BOOTSTRAP, "carrier-pigeon"), HVD_ERR_INVALID_ARGUMENT,
             "HVDC_BOOTSTRAP");
  EXPECT_ERR(hvd_config_set_str(cfg, HVD_CFG_BOOTSTRAP, NULL), HVD_ERR_INVALID_ARGUMENT, "value");
  EXPECT_ERR(hvd_config_set_int(NULL, HVD_CFG_LOG_LEVEL, 2), HVD_ERR_INVALID_ARGUMENT, "config");
  EXPECT_ERR(hvd_config_set_str(NULL, HVD_CFG_HOSTNAME, "h"), HVD_ERR_INVALID_ARGUMENT, "config");
  /* Good values. */
  EXPECT_OK(hvd_config_set_int(cfg, HVD_CFG_LOG_LEVEL, 5));
  EXPECT_OK(hvd_config_set_int(cfg, HVD_CFG_SPIN_MICROS, 0));
  EXPECT_OK(hvd_config_set_str(cfg, HVD_CFG_HOSTNAME, "abi-host"));
  EXPECT_OK(hvd_config_set_str(cfg, HVD_CFG_BOOTSTRAP, "singleton"));
  EXPECT_OK(hvd_config_set_str(cfg, HVD_CFG_BOOTSTRAP, "auto")); /* the last value wins */
  hvd_config_destroy(cfg);
}

/* Saves, replaces and restores an environment variable. */
typedef struct saved_env_t {
  const char* name;
  char value[256];
  int was_set;
} saved_env_t;

static saved_env_t save_env(const char* name) {
  saved_env_t s;
  const char* v = getenv(name);
  s.name = name;
  s.was_set = v != NULL;
  snprintf(s.value, sizeof(s.value), "%s", v != NULL ? v : "");
  unsetenv(name);
  return s;
}

static void restore_env(const saved_env_t* s) {
  if (s->was_set) {
    setenv(s->name, s->value, 1);
  } else {
    unsetenv(s->name);
  }
}

void test_env_and_log_callback(void) {
  saved_env_t level = save_env("HVDC_LOG_LEVEL");
  saved_env_t horovod_level = save_env("HOROVOD_LOG_LEVEL");
  hvd_config_t* cfg = NULL;
  log_capture_t capture;
  memset(&capture, 0, sizeof(capture));
  capture.magic = 0x10c;

  /* A bad log level in the environment fails hvd_init and names the variable. */
  setenv("HVDC_LOG_LEVEL", "loud", 1);
  EXPECT_ERR(hvd_init(), HVD_ERR_INVALID_ARGUMENT, "HVDC_LOG_LEVEL");
  CHECK(hvd_is_initialized() == 0);
  CHECK(hvd_rank() == -1);
  unsetenv("HVDC_LOG_LEVEL");
  /* Horovod's spelling is read too. */
  setenv("HOROVOD_LOG_LEVEL", "loud", 1);
  EXPECT_ERR(hvd_init(), HVD_ERR_INVALID_ARGUMENT, "LOG_LEVEL");
  CHECK(hvd_is_initialized() == 0);
  unsetenv("HOROVOD_LOG_LEVEL");

  /* The config object overrides the (still bad) environment: trace level, lines captured. */
  setenv("HVDC_LOG_LEVEL", "loud", 1);
  EXPECT_OK(hvd_config_create(&cfg));
  if (cfg == NULL) {
    restore_env(&level);
    restore_env(&horovod_level);
    return;
  }
  EXPECT_OK(hvd_config_set_int(cfg, HVD_CFG_LOG_LEVEL, 0));
  EXPECT_OK(hvd_config_set_str(cfg, HVD_CFG_BOOTSTRAP, "singleton"));
  EXPECT_OK(hvd_set_log_callback(capture_log, &capture));
  EXPECT_OK(hvd_init_with_config(cfg));
  hvd_config_destroy(cfg); /* the engine does not keep the config */
  CHECK(hvd_is_initialized() == 1);
  CHECK(hvd_size() == 1);
  EXPECT_OK(hvd_shutdown());
  EXPECT_OK(hvd_set_log_callback(NULL, NULL)); /* back to stderr */
  CHECK(capture.lines >= 1);
  CHECK(capture.bad_levels == 0);
  CHECK(capture.empty_lines == 0);
  if (capture.lines < 1) printf("  (no log line reached the callback at level 0)\n");
  restore_env(&level);
  restore_env(&horovod_level);
}

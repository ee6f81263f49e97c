#pragma once

#include "common/config.h"

// The object behind hvd_config_t.
struct hvd_config_s {
  hvdc::common::ConfigOverrides overrides;
};

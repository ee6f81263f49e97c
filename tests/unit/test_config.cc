// Settings::resolve: defaults, HVDC_* and HOROVOD_* variables, config overrides, invalid values.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/config.h"
#include "hvdc.h"

namespace {

using hvdc::common::ConfigOverrides;
using hvdc::common::Settings;
using hvdc::common::Status;

// Every variable the registry reads. Each test starts with all of them unset and gets the
// process environment back afterwards.
const char* const kVariables[] = {
    "HVDC_LOG_LEVEL",
    "HOROVOD_LOG_LEVEL",
    "HVDC_HOSTNAME",
    "HVDC_BOOTSTRAP",
    "HVDC_SPIN_MICROS",
    "HVDC_SMALL_ALLREDUCE_BYTES",
    "HVDC_SEGMENT_BYTES",
    "HVDC_TCP_SEGMENT_BYTES",
    "HVDC_FUSION_THRESHOLD",
    "HOROVOD_FUSION_THRESHOLD",
    "HVDC_CACHE_CAPACITY",
    "HOROVOD_CACHE_CAPACITY",
    "HVDC_DETERMINISTIC",
    "HVDC_TIMEOUT",
    "HVDC_PROCESS_SETS",
    "HVDC_ROUND_TREE_MIN_RANKS",
    "HVDC_LOCAL_MIN_BYTES",
    "HVDC_PEER_READS",
    "HVDC_LOCAL_STAGE_BYTES",
    "HVDC_ROUND_INPUT_BYTES",
    "HVDC_LANE",
    "HVDC_HIERARCHICAL_ALLREDUCE",
    "HOROVOD_HIERARCHICAL_ALLREDUCE",
};

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kVariables) {
      const char* v = std::getenv(name);
      saved_.emplace_back(
          name, v ? std::make_pair(true, std::string(v)) : std::make_pair(false, std::string()));
      unsetenv(name);
    }
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) {
      if (value.first) {
        setenv(name.c_str(), value.second.c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }

  static Settings resolve_ok(const ConfigOverrides& overrides = {}) {
    Settings s;
    Status st = Settings::resolve(overrides, &s);
    EXPECT_TRUE(st.is_ok()) << st.message();
    return s;
  }

  // Resolving must fail with HVD_ERR_INVALID_ARGUMENT and a message naming `variable` and `value`.
  static void expect_invalid(const std::string& variable, const std::string& value,
                             const ConfigOverrides& overrides = {}) {
    Settings s;
    Status st = Settings::resolve(overrides, &s);
    EXPECT_EQ(st.code(), HVD_ERR_INVALID_ARGUMENT) << variable << "=" << value;
    EXPECT_NE(st.message().find(variable), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("'" + value + "'"), std::string::npos) << st.message();
  }

  std::vector<std::pair<std::string, std::pair<bool, std::string>>> saved_;
};

TEST_F(ConfigTest, Defaults) {
  Settings s = resolve_ok();
  EXPECT_EQ(s.get_int("HVDC_LOG_LEVEL"), 3);  // warning
  EXPECT_EQ(s.get_str("HVDC_HOSTNAME"), "");
  EXPECT_EQ(s.get_str("HVDC_BOOTSTRAP"), "auto");
  EXPECT_EQ(s.get_int("HVDC_SPIN_MICROS"), 50);
  EXPECT_EQ(s.get_int("HVDC_SMALL_ALLREDUCE_BYTES"), 65536);
  EXPECT_EQ(s.get_int("HVDC_SEGMENT_BYTES"), 262144);
  EXPECT_EQ(s.get_int("HVDC_TCP_SEGMENT_BYTES"), 57344);
  EXPECT_EQ(s.get_int("HVDC_LOCAL_MIN_BYTES"), 16384);
  EXPECT_EQ(s.get_int("HVDC_LOCAL_STAGE_BYTES"), 16777216);
  EXPECT_EQ(s.get_int("HVDC_PEER_READS"), 1);
  EXPECT_EQ(s.get_int("HVDC_ROUND_INPUT_BYTES"), 4096);
  EXPECT_EQ(s.get_int("HVDC_LANE"), 1);
  EXPECT_EQ(s.get_int("HVDC_HIERARCHICAL_ALLREDUCE"), 1);
  for (const char* name : kVariables) {
    if (std::string(name).rfind("HVDC_", 0) != 0) continue;
    ASSERT_EQ(s.entries().count(name), 1u) << name;
    EXPECT_EQ(s.entries().at(name).source, "default") << name;
  }
  EXPECT_EQ(s.get_int("HVDC_FUSION_THRESHOLD"), 2 << 20);
  EXPECT_EQ(s.get_int("HVDC_CACHE_CAPACITY"), 1024);
  EXPECT_EQ(s.get_int("HVDC_DETERMINISTIC"), 0);
  EXPECT_EQ(s.get_int("HVDC_STALL_CHECK_TIME"), 60);
  EXPECT_EQ(s.get_int("HVDC_STALL_SHUTDOWN_TIME"), 300);
  EXPECT_EQ(s.get_str("HVDC_TIMELINE"), "");
  EXPECT_EQ(s.get_str("HVDC_PROCESS_SETS"), "");
  EXPECT_EQ(s.get_int("HVDC_ROUND_TREE_MIN_RANKS"), 64);
  EXPECT_EQ(s.entries().size(), 30u);
  EXPECT_EQ(s.get_str("HVDC_NO_SUCH_KNOB"), "");
  EXPECT_EQ(s.get_int("HVDC_NO_SUCH_KNOB"), 0);
}

TEST_F(ConfigTest, EnvironmentOverridesDefault) {
  setenv("HVDC_SPIN_MICROS", "7", 1);
  setenv("HVDC_HOSTNAME", "node-17", 1);
  setenv("HVDC_BOOTSTRAP", "singleton", 1);
  setenv("HVDC_SMALL_ALLREDUCE_BYTES", "0", 1);
  setenv("HVDC_SEGMENT_BYTES", "1", 1);
  Settings s = resolve_ok();
  EXPECT_EQ(s.get_int("HVDC_SPIN_MICROS"), 7);
  EXPECT_EQ(s.entries().at("HVDC_SPIN_MICROS").source, "environment (HVDC_SPIN_MICROS)");
  EXPECT_EQ(s.get_str("HVDC_HOSTNAME"), "node-17");
  EXPECT_EQ(s.get_str("HVDC_BOOTSTRAP"), "singleton");
  EXPECT_EQ(s.get_int("HVDC_SMALL_ALLREDUCE_BYTES"), 0);
  EXPECT_EQ(s.get_int("HVDC_SEGMENT_BYTES"), 1);
  EXPECT_EQ(s.entries().at("HVDC_LOG_LEVEL").source, "default");
}

TEST_F(ConfigTest, EmptyVariableMeansUnset) {
  setenv("HVDC_SPIN_MICROS", "", 1);
  Settings s = resolve_ok();
  EXPECT_EQ(s.get_int("HVDC_SPIN_MICROS"), 50);
  EXPECT_EQ(s.entries().at("HVDC_SPIN_MICROS").source, "default");
}

TEST_F(ConfigTest, HorovodAlias) {
  setenv("HOROVOD_LOG_LEVEL", "debug", 1);
  Settings s = resolve_ok();
  EXPECT_EQ(s.get_int("HVDC_LOG_LEVEL"), 1);
  EXPECT_NE(s.entries().at("HVDC_LOG_LEVEL").source.find("HOROVOD_LOG_LEVEL"), std::string::npos);
}

TEST_F(ConfigTest, HorovodHierarchicalAllreduceAlias) {
  setenv("HOROVOD_HIERARCHICAL_ALLREDUCE", "0", 1);
  EXPECT_EQ(resolve_ok().get_int("HVDC_HIERARCHICAL_ALLREDUCE"), 0);
}

TEST_F(ConfigTest, HvdcWinsOverHorovod) {
  setenv("HOROVOD_LOG_LEVEL", "trace", 1);
  setenv("HVDC_LOG_LEVEL", "error", 1);
  Settings s = resolve_ok();
  EXPECT_EQ(s.get_int("HVDC_LOG_LEVEL"), 4);
  EXPECT_EQ(s.entries().at("HVDC_LOG_LEVEL").source, "environment (HVDC_LOG_LEVEL)");
}

TEST_F(ConfigTest, ConfigOverridesWinOverEnvironment) {
  setenv("HVDC_SPIN_MICROS", "7", 1);
  setenv("HVDC_LOG_LEVEL", "error", 1);
  setenv("HOROVOD_LOG_LEVEL", "trace", 1);
  setenv("HVDC_HOSTNAME", "env-host", 1);
  setenv("HVDC_BOOTSTRAP", "mpi", 1);
  ConfigOverrides o = {{HVD_CFG_SPIN_MICROS, "9"},
                       {HVD_CFG_LOG_LEVEL, "off"},
                       {HVD_CFG_HOSTNAME, "cfg-host"},
                       {HVD_CFG_BOOTSTRAP, "singleton"}};
  Settings s = resolve_ok(o);
  EXPECT_EQ(s.get_int("HVDC_SPIN_MICROS"), 9);
  EXPECT_EQ(s.get_int("HVDC_LOG_LEVEL"), 5);
  EXPECT_EQ(s.get_str("HVDC_HOSTNAME"), "cfg-host");
  EXPECT_EQ(s.get_str("HVDC_BOOTSTRAP"), "singleton");
  for (const char* name : {"HVDC_SPIN_MICROS", "HVDC_LOG_LEVEL", "HVDC_HOSTNAME"}) {
    EXPECT_EQ(s.entries().at(name).source, "config") << name;
  }
}

TEST_F(ConfigTest, OverrideReplacesAnInvalidEnvironmentValue) {
  setenv("HVDC_SPIN_MICROS", "not-a-number", 1);
  Settings s = resolve_ok({{HVD_CFG_SPIN_MICROS, "5"}});
  EXPECT_EQ(s.get_int("HVDC_SPIN_MICROS"), 5);
}

TEST_F(ConfigTest, UnknownOverrideKeysAreIgnored) {
  Settings s = resolve_ok({{-1, "x"}, {12345, "y"}});
  EXPECT_EQ(s.get_int("HVDC_SMALL_ALLREDUCE_BYTES"), 65536);
}

TEST_F(ConfigTest, LogLevelNamesAndNumbers) {
  const std::vector<std::pair<std::string, int>> cases =
      {
          {"trace", 0}, {"debug", 1}, {"info", 2},  {"warning", 3}, {"error", 4},
          {"off", 5},   {"0", 0},     {"1", 1},     {"2", 2},       {"3", 3},
          {"4", 4},     {"5", 5},     {"fatal", 4},  // Horovod's name for errors only
      };
  for (const auto& [raw, level] : cases) {
    setenv("HVDC_LOG_LEVEL", raw.c_str(), 1);
    EXPECT_EQ(resolve_ok().get_int("HVDC_LOG_LEVEL"), level) << raw;
    unsetenv("HVDC_LOG_LEVEL");
    EXPECT_EQ(resolve_ok({{HVD_CFG_LOG_LEVEL, raw}}).get_int("HVDC_LOG_LEVEL"), level) << raw;
  }
}

TEST_F(ConfigTest, InvalidLogLevels) {
  for (const char* raw : {"loud", "6", "-1", "warn ing", "3x"}) {
    setenv("HVDC_LOG_LEVEL", raw, 1);
    expect_invalid("HVDC_LOG_LEVEL", raw);
  }
}

TEST_F(ConfigTest, InvalidIntegers) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"HVDC_SPIN_MICROS", "abc"},           {"HVDC_SPIN_MICROS", "-1"},
      {"HVDC_SPIN_MICROS", "12x"},           {"HVDC_SPIN_MICROS", "99999999999999999999999"},
      {"HVDC_SMALL_ALLREDUCE_BYTES", "1.5"}, {"HVDC_SEGMENT_BYTES", "0"},
      {"HVDC_SEGMENT_BYTES", "-4096"},       {"HVDC_TCP_SEGMENT_BYTES", "-1"},
      {"HVDC_TCP_SEGMENT_BYTES", "64k"},
  };
  for (const auto& [name, raw] : cases) {
    setenv(name, raw, 1);
    expect_invalid(name, raw);
    unsetenv(name);
  }
}

TEST_F(ConfigTest, InvalidBootstrap) {
  setenv("HVDC_BOOTSTRAP", "tcp", 1);
  expect_invalid("HVDC_BOOTSTRAP", "tcp");
  unsetenv("HVDC_BOOTSTRAP");
  expect_invalid("HVDC_BOOTSTRAP", "MPI", {{HVD_CFG_BOOTSTRAP, "MPI"}});
}

TEST_F(ConfigTest, InvalidConfigOverride) {
  expect_invalid("HVDC_SPIN_MICROS", "fast", {{HVD_CFG_SPIN_MICROS, "fast"}});
}

// A bad HOROVOD_LOG_LEVEL names HOROVOD_LOG_LEVEL, the variable the user actually set.
TEST_F(ConfigTest, InvalidAliasNamesTheAlias) {
  setenv("HOROVOD_LOG_LEVEL", "chatty", 1);
  expect_invalid("HOROVOD_LOG_LEVEL", "chatty");
}

// A bad override names the knob, not an environment variable whose value it replaced.
// Fails today: Settings::resolve (config.cc) leaves `origin` at the HOROVOD_/HVDC_ variable when
// an override replaces its value. Enable once fixed.
TEST_F(ConfigTest, InvalidOverrideDoesNotBlameTheEnvironment) {
  setenv("HOROVOD_LOG_LEVEL", "debug", 1);
  Settings s;
  Status st = Settings::resolve({{HVD_CFG_LOG_LEVEL, "bogus"}}, &s);
  EXPECT_EQ(st.code(), HVD_ERR_INVALID_ARGUMENT);
  EXPECT_NE(st.message().find("HVDC_LOG_LEVEL"), std::string::npos) << st.message();
  EXPECT_EQ(st.message().find("HOROVOD_LOG_LEVEL"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("'bogus'"), std::string::npos) << st.message();
}

TEST_F(ConfigTest, FailureLeavesOutputUntouched) {
  Settings s = resolve_ok({{HVD_CFG_SPIN_MICROS, "9"}});
  setenv("HVDC_SEGMENT_BYTES", "zero", 1);
  EXPECT_FALSE(Settings::resolve({}, &s).is_ok());
  EXPECT_EQ(s.get_int("HVDC_SPIN_MICROS"), 9);
  EXPECT_EQ(s.get_int("HVDC_SEGMENT_BYTES"), 262144);
  EXPECT_EQ(s.get_int("HVDC_LOCAL_MIN_BYTES"), 16384);
  EXPECT_EQ(s.get_int("HVDC_LOCAL_STAGE_BYTES"), 16777216);
  EXPECT_EQ(s.get_int("HVDC_PEER_READS"), 1);
}

TEST_F(ConfigTest, RegistryLookupByKey) {
  ASSERT_NE(hvdc::common::find_knob_by_key(HVD_CFG_LOG_LEVEL), nullptr);
  EXPECT_STREQ(hvdc::common::find_knob_by_key(HVD_CFG_LOG_LEVEL)->name, "HVDC_LOG_LEVEL");
  EXPECT_STREQ(hvdc::common::find_knob_by_key(HVD_CFG_HOSTNAME)->name, "HVDC_HOSTNAME");
  EXPECT_STREQ(hvdc::common::find_knob_by_key(HVD_CFG_BOOTSTRAP)->name, "HVDC_BOOTSTRAP");
  EXPECT_STREQ(hvdc::common::find_knob_by_key(HVD_CFG_SPIN_MICROS)->name, "HVDC_SPIN_MICROS");
  EXPECT_TRUE(hvdc::common::find_knob_by_key(HVD_CFG_SPIN_MICROS)->is_int);
  EXPECT_FALSE(hvdc::common::find_knob_by_key(HVD_CFG_HOSTNAME)->is_int);
  EXPECT_EQ(hvdc::common::find_knob_by_key(-1), nullptr);
  EXPECT_EQ(hvdc::common::find_knob_by_key(1000), nullptr);
  for (const auto& knob : hvdc::common::knob_registry()) {
    EXPECT_EQ(std::string(knob.name).rfind("HVDC_", 0), 0u) << knob.name;
    if (knob.horovod_alias) {
      EXPECT_EQ(std::string(knob.horovod_alias).rfind("HOROVOD_", 0), 0u);
    }
    EXPECT_NE(knob.doc, nullptr);
    EXPECT_NE(knob.parse, nullptr);
  }
}

}  // namespace

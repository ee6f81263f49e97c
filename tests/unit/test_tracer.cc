// The tracer (core/tracing/tracer.h): which responses reach the timeline and in which spans.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/tracing/tracer.h"
#include "hvdc.h"

namespace {

using hvdc::core::OpType;
using hvdc::core::Response;
using hvdc::core::TensorEntry;
using hvdc::core::Tracer;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string temp_path(const char* what) {
  return ::testing::TempDir() + "hvdc_tracer_" + what + "_" + std::to_string(::getpid()) + ".json";
}

Response allreduce(const std::string& name, int32_t process_set = 0) {
  Response r;
  r.op_type = OpType::kAllreduce;
  r.process_set = process_set;
  r.names = {name};
  r.counts = {4};
  return r;
}

TensorEntry entry_of(const std::string& name) {
  TensorEntry e;
  e.request.name = name;
  e.request.dtype = HVD_FLOAT32;
  e.request.shape = {4};
  return e;
}

// One response's life: queued, its transport phase with a copy inside, done.
void run(Tracer& tracer, const Response& r) {
  tracer.queued({r});
  tracer.execute(r, true);
  auto phases = tracer.phases(r);
  if (phases) {
    phases("MEMCPY_IN_FUSION_BUFFER", true);
    phases("MEMCPY_IN_FUSION_BUFFER", false);
  }
  tracer.execute(r, false);
  tracer.done(r, {entry_of(r.names[0])});
}

TEST(Tracer, RecordsTheGlobalSetsCollectivesWithTheirPhases) {
  Tracer tracer(false);
  ASSERT_NE(tracer.open_timeline(), nullptr);
  const std::string path = temp_path("phases");
  ASSERT_TRUE(tracer.start(path).is_ok());
  run(tracer, allreduce("grad.global"));
  run(tracer, allreduce("grad.subset", 3));  // names are unique per set only: not traced
  Response error = allreduce("grad.failed");
  error.kind = hvdc::core::ResponseKind::kError;
  run(tracer, error);
  tracer.stop();
  const std::string text = read_file(path);
  std::remove(path.c_str());
  EXPECT_NE(text.find("grad.global"), std::string::npos) << text;
  EXPECT_NE(text.find("QUEUE"), std::string::npos);
  EXPECT_NE(text.find("UCX_ALLREDUCE"), std::string::npos);
  EXPECT_NE(text.find("MEMCPY_IN_FUSION_BUFFER"), std::string::npos);
  EXPECT_NE(text.find("float32"), std::string::npos);
  EXPECT_EQ(text.find("grad.subset"), std::string::npos);
  EXPECT_EQ(text.find("grad.failed"), std::string::npos);
}

// Ranks other than 0 have no timeline: nothing to start, and no phase callback to pay for.
TEST(Tracer, WithoutATimelineEverythingIsANoOp) {
  Tracer tracer(true);
  EXPECT_TRUE(tracer.start(temp_path("none")).is_ok());
  EXPECT_FALSE(static_cast<bool>(tracer.phases(allreduce("a"))));
  run(tracer, allreduce("a"));
  tracer.stop();
  std::ifstream missing(temp_path("none"));
  EXPECT_FALSE(missing.good());
}

}  // namespace

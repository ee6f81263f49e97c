// Timeline: files are checked by Python's json module, the strictest reader at hand, so a file that
// passes here also opens in chrome://tracing and Perfetto.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/timeline.h"

namespace {

using hvdc::core::json_escape;
using hvdc::core::Timeline;

// Reads a trace and checks its structure. argv: path, ranks, then the expected tensor names,
// hex-encoded UTF-8 so that no name needs shell quoting. With ranks >= 0 every tensor must have a
// complete NEGOTIATE_ALLREDUCE span with `ranks` ticks and an ALLREDUCE span holding QUEUE; with
// ranks < 0 only the JSON, the B/E nesting and the names are checked. Written without single
// quotes, since the shell passes it inside them.
const char* const kCheckScript = R"PY(
import json, sys
events = json.load(open(sys.argv[1], encoding="utf-8"))
ranks = int(sys.argv[2])
want = sorted(bytes.fromhex(h).decode("utf-8") for h in sys.argv[3:])
assert isinstance(events, list)
names, sort_index, stacks, spans, ticks = {}, set(), {}, {}, {}
for e in events:
    ph, pid = e["ph"], e.get("pid", 0)
    if ph == "M":
        if e["name"] == "process_name" and pid != 0:
            assert pid not in names, "pid named twice"
            names[pid] = e["args"]["name"]
        if e["name"] == "process_sort_index":
            sort_index.add(pid)
        continue
    if ph == "i":
        assert e["name"] == "CYCLE_START" and e["s"] == "g"
        continue
    assert pid in names, "event before its process_name"
    assert e["tid"] == 0 and e["ts"] >= 0
    stack = stacks.setdefault(pid, [])
    if ph == "B":
        stack.append(e["name"])
        spans.setdefault(pid, []).append(e["name"])
    elif ph == "X":
        assert stack and stack[-1].startswith("NEGOTIATE_"), "tick outside negotiation"
        assert e["name"].isdigit()
        ticks[pid] = ticks.get(pid, 0) + 1
    elif ph == "E":
        assert stack, "E without B"
        name = stack.pop()
        if not stack and not name.startswith("NEGOTIATE_") and ranks >= 0:
            assert e["args"]["dtype"] == "float32" and e["args"]["shape"] == "[4, 2]"
    else:
        raise AssertionError("unexpected phase " + ph)
assert all(not s for s in stacks.values()), "unbalanced spans"
assert sorted(names.values()) == want, (sorted(names.values()), want)
assert set(names) <= sort_index, "process_sort_index missing"
if ranks >= 0:
    for pid in names:
        assert {"NEGOTIATE_ALLREDUCE", "ALLREDUCE", "QUEUE"} <= set(spans[pid]), spans[pid]
        assert ticks.get(pid, 0) == ranks, (ticks, ranks)
)PY";

std::string hex(const std::string& text) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : text) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

// True when the checker accepts `path`.
bool trace_ok(const std::string& path, int ranks, const std::vector<std::string>& tensors) {
  std::string command =
      std::string("python3 -c '") + kCheckScript + "' '" + path + "' " + std::to_string(ranks);
  for (const std::string& tensor : tensors) command += " " + hex(tensor);
  return std::system(command.c_str()) == 0;
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "hvdc_timeline_" + std::to_string(getpid()) + "_" + name + ".json";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// One tensor's life as the engine records it.
void record_allreduce(Timeline& timeline, const std::string& tensor, int ranks) {
  timeline.negotiate_start(tensor, "ALLREDUCE");
  for (int rank = 0; rank < ranks; ++rank) timeline.negotiate_rank_ready(tensor, rank);
  timeline.negotiate_end(tensor);
  timeline.op_start(tensor, "ALLREDUCE");
  timeline.activity_start(tensor, "QUEUE");
  timeline.activity_end(tensor);
  timeline.activity_start(tensor, "MEMCPY_IN_FUSION_BUFFER");
  timeline.activity_end(tensor);
  timeline.op_end(tensor, "float32", "[4, 2]");
}

class TimelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("python3 -c pass") != 0) GTEST_SKIP() << "python3 is not available";
  }
  void TearDown() override {
    for (const std::string& path : paths_) std::remove(path.c_str());
  }
  std::string path(const std::string& name) {
    paths_.push_back(temp_path(name));
    return paths_.back();
  }

 private:
  std::vector<std::string> paths_;
};

TEST_F(TimelineTest, RecordsSpansFromManyThreads) {
  const std::string file = path("threads");
  Timeline timeline;
  EXPECT_FALSE(timeline.active());
  ASSERT_TRUE(timeline.start(file, true).is_ok());
  EXPECT_TRUE(timeline.active());
  std::vector<std::string> tensors;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    for (int i = 0; i < 25; ++i)
      tensors.push_back("grad/t" + std::to_string(t) + "/" + std::to_string(i));
    threads.emplace_back([&timeline, t] {
      for (int i = 0; i < 25; ++i) {
        record_allreduce(timeline, "grad/t" + std::to_string(t) + "/" + std::to_string(i), 3);
      }
    });
  }
  for (int i = 0; i < 10; ++i) timeline.mark_cycle();
  for (std::thread& thread : threads) thread.join();
  timeline.stop();
  EXPECT_FALSE(timeline.active());
  EXPECT_TRUE(trace_ok(file, 3, tensors));
  EXPECT_NE(read_file(file).find("CYCLE_START"), std::string::npos);
}

TEST_F(TimelineTest, CycleMarksOnlyWhenAsked) {
  const std::string file = path("nocycles");
  Timeline timeline;
  ASSERT_TRUE(timeline.start(file, false).is_ok());
  timeline.mark_cycle();
  record_allreduce(timeline, "a", 2);
  timeline.stop();
  EXPECT_TRUE(trace_ok(file, 2, {"a"}));
  EXPECT_EQ(read_file(file).find("CYCLE_START"), std::string::npos);
}

TEST_F(TimelineTest, StartWhileActiveSwitchesFiles) {
  const std::string first = path("first");
  const std::string second = path("second");
  const std::string third = path("third");
  Timeline timeline;
  ASSERT_TRUE(timeline.start(first, false).is_ok());
  record_allreduce(timeline, "a", 2);
  timeline.negotiate_start("b", "ALLREDUCE");  // still open when the file changes
  timeline.negotiate_rank_ready("b", 0);
  ASSERT_TRUE(timeline.start(second, false).is_ok());
  EXPECT_TRUE(timeline.active());
  timeline.negotiate_rank_ready("b", 1);  // its span is in the first file: dropped here
  timeline.negotiate_end("b");
  record_allreduce(timeline, "c", 2);
  timeline.stop();
  EXPECT_TRUE(trace_ok(first, -1, {"a", "b"}));  // b's span closed by the switch
  EXPECT_TRUE(trace_ok(second, 2, {"c"}));

  ASSERT_TRUE(timeline.start(third, false).is_ok());
  record_allreduce(timeline, "d", 4);
  timeline.stop();
  EXPECT_TRUE(trace_ok(third, 4, {"d"}));
  EXPECT_TRUE(trace_ok(second, 2, {"c"}));  // untouched by the later recording
}

TEST_F(TimelineTest, DestructorFinishesTheFile) {
  const std::string file = path("destructor");
  {
    Timeline timeline;
    ASSERT_TRUE(timeline.start(file, false).is_ok());
    record_allreduce(timeline, "a", 1);
    timeline.op_start("open", "ALLGATHER");  // in flight at shutdown
  }
  EXPECT_TRUE(trace_ok(file, -1, {"a", "open"}));
}

TEST_F(TimelineTest, InactiveTimelineWritesNothing) {
  Timeline never_started;
  record_allreduce(never_started, "a", 2);  // no file to write: must simply not crash
  never_started.mark_cycle();
  never_started.stop();
  EXPECT_FALSE(never_started.active());

  const std::string file = path("inactive");
  Timeline timeline;
  ASSERT_TRUE(timeline.start(file, true).is_ok());
  timeline.stop();
  const std::string contents = read_file(file);
  EXPECT_TRUE(trace_ok(file, -1, {}));
  record_allreduce(timeline, "late", 2);
  timeline.mark_cycle();
  timeline.stop();  // a second stop is a no-op
  EXPECT_EQ(read_file(file), contents);
}

TEST_F(TimelineTest, EscapesTensorNames) {
  const std::string file = path("escape");
  const std::vector<std::string> tensors = {
      "quote\"d", "back\\slash", "tab\tnew\nline", std::string("ctl\x01\x1f", 5), "ünïcödé",
  };
  Timeline timeline;
  ASSERT_TRUE(timeline.start(file, false).is_ok());
  for (const std::string& tensor : tensors) record_allreduce(timeline, tensor, 2);
  record_allreduce(timeline, "bad\xff", 2);  // malformed UTF-8 becomes U+FFFD
  timeline.stop();
  std::vector<std::string> expected = tensors;
  expected.push_back("bad\xef\xbf\xbd");
  EXPECT_TRUE(trace_ok(file, 2, expected));
}

TEST(TimelineEscape, EscapesJsonSpecials) {
  EXPECT_EQ(json_escape("plain/name:0"), "plain/name:0");
  EXPECT_EQ(json_escape("a\"b\\c"), "a\\\"b\\\\c");
  EXPECT_EQ(json_escape("\n\r\t"), "\\n\\r\\t");
  EXPECT_EQ(json_escape(std::string("\x00\x1f", 2)), "\\u0000\\u001f");
  EXPECT_EQ(json_escape("\xc3\xa9"), "\xc3\xa9");                   // well-formed: kept
  EXPECT_EQ(json_escape("\xc3"), "\\ufffd");                        // truncated sequence
  EXPECT_EQ(json_escape("\xed\xa0\x80"), "\\ufffd\\ufffd\\ufffd");  // an encoded surrogate
}

TEST(TimelineStart, FailsWithTheSystemError) {
  Timeline timeline;
  const std::string bad = "/nonexistent-hvdc-dir/trace.json";
  const hvdc::common::Status status = timeline.start(bad, false);
  EXPECT_EQ(status.code(), HVD_ERR_SYSTEM);
  EXPECT_NE(status.message().find(bad), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("No such file"), std::string::npos) << status.message();
  EXPECT_FALSE(timeline.active());
}

}  // namespace

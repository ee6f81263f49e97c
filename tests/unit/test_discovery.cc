// discover_launch: each launcher's variables, their precedence, the Slurm job-step rule, the
// torchrun port shift and the errors, all from synthetic environments (the process environment is
// never read).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "bootstrap/discovery.h"
#include "hvdc.h"

namespace {

using hvdc::bootstrap::discover_launch;
using hvdc::bootstrap::EnvLookup;
using hvdc::bootstrap::LaunchInfo;
using hvdc::common::Status;
using Vars = std::map<std::string, std::string>;

EnvLookup lookup_in(const Vars& vars) {
  return [&vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

LaunchInfo discover_ok(const Vars& vars, int config_rank = -1, int config_size = -1) {
  LaunchInfo info;
  Status st = discover_launch(lookup_in(vars), config_rank, config_size, &info);
  EXPECT_TRUE(st.is_ok()) << st.message();
  return info;
}

// Discovery fails with HVD_ERR_INVALID_ARGUMENT and a message containing each of `words` (the
// variable and its value), and leaves the output untouched.
void expect_invalid(const Vars& vars, std::initializer_list<const char*> words,
                    int config_rank = -1, int config_size = -1) {
  LaunchInfo info;
  info.source = "untouched";
  Status st = discover_launch(lookup_in(vars), config_rank, config_size, &info);
  EXPECT_EQ(st.code(), HVD_ERR_INVALID_ARGUMENT) << st.message();
  for (const char* word : words)
    EXPECT_NE(st.message().find(word), std::string::npos) << st.message();
  EXPECT_EQ(info.source, "untouched");
}

void expect_ids(const LaunchInfo& info, const char* source, int rank, int size, int local_rank,
                int local_size) {
  EXPECT_EQ(info.source, source);
  EXPECT_EQ(info.rank, rank);
  EXPECT_EQ(info.size, size);
  EXPECT_EQ(info.local_rank, local_rank);
  EXPECT_EQ(info.local_size, local_size);
}

const Vars kOpenMpi = {{"OMPI_COMM_WORLD_RANK", "5"},
                       {"OMPI_COMM_WORLD_SIZE", "8"},
                       {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                       {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}};
const Vars kTorchrun = {{"RANK", "6"},
                        {"WORLD_SIZE", "16"},
                        {"LOCAL_RANK", "2"},
                        {"LOCAL_WORLD_SIZE", "8"},
                        {"MASTER_ADDR", "node0"},
                        {"MASTER_PORT", "29500"}};
// One task of an srun job step: task 9 of 12, third task on its node (node 2 of 3 x 4 tasks).
const Vars kSlurmStep = {
    {"SLURM_JOB_ID", "4242"},         {"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "9"},
    {"SLURM_NTASKS", "12"},           {"SLURM_LOCALID", "1"}, {"SLURM_NODEID", "2"},
    {"SLURM_TASKS_PER_NODE", "4(x3)"}};
const Vars kHydra = {
    {"PMI_RANK", "3"}, {"PMI_SIZE", "4"}, {"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "2"}};
const Vars kHvdc = {
    {"HVDC_RANK", "2"}, {"HVDC_SIZE", "3"}, {"HVDC_LOCAL_RANK", "2"}, {"HVDC_LOCAL_SIZE", "3"}};

// Later parts override earlier ones.
Vars merged(std::initializer_list<Vars> parts) {
  Vars all;
  for (const Vars& part : parts) {
    for (const auto& [name, value] : part) all[name] = value;
  }
  return all;
}

TEST(Discovery, NothingSetIsASingleton) {
  LaunchInfo info = discover_ok({});
  expect_ids(info, "singleton", 0, 1, -1, -1);
  EXPECT_FALSE(info.mpi_launched);
  EXPECT_EQ(info.master_addr, "");
  EXPECT_EQ(info.master_port, 0);
  EXPECT_EQ(info.note, "");
}

TEST(Discovery, ExplicitConfig) {
  expect_ids(discover_ok({}, 3, 4), "config", 3, 4, -1, -1);
}

TEST(Discovery, HvdcVariables) {
  LaunchInfo info = discover_ok(
      merged({kHvdc, {{"HVDC_MASTER_ADDR", "127.0.0.1"}, {"HVDC_MASTER_PORT", "40001"}}}));
  expect_ids(info, "HVDC_RANK/HVDC_SIZE", 2, 3, 2, 3);
  EXPECT_EQ(info.master_addr, "127.0.0.1");
  EXPECT_EQ(info.master_port, 40001);
  EXPECT_FALSE(info.mpi_launched);
}

TEST(Discovery, OpenMpi) {
  LaunchInfo info = discover_ok(kOpenMpi);
  expect_ids(info, "Open MPI", 5, 8, 1, 4);
  EXPECT_TRUE(info.mpi_launched);
}

TEST(Discovery, Torchrun) {
  LaunchInfo info = discover_ok(kTorchrun);
  expect_ids(info, "torchrun", 6, 16, 2, 8);
  EXPECT_EQ(info.master_addr, "node0");
  EXPECT_FALSE(info.mpi_launched);
}

TEST(Discovery, SlurmJobStep) {
  LaunchInfo info = discover_ok(kSlurmStep);
  expect_ids(info, "Slurm", 9, 12, 1, 4);
  EXPECT_FALSE(info.mpi_launched);
  EXPECT_EQ(info.master_port, 0);
}

TEST(Discovery, SlurmOlderSizeSpellingAndUnevenNodes) {
  // SLURM_NPROCS instead of SLURM_NTASKS; node 2 is the one node with 3 tasks in "2(x2),3".
  LaunchInfo info = discover_ok({{"SLURM_STEP_ID", "3"},
                                 {"SLURM_PROCID", "6"},
                                 {"SLURM_NPROCS", "7"},
                                 {"SLURM_LOCALID", "2"},
                                 {"SLURM_NODEID", "2"},
                                 {"SLURM_TASKS_PER_NODE", "2(x2),3"}});
  expect_ids(info, "Slurm", 6, 7, 2, 3);
}

TEST(Discovery, MpichHydra) {
  LaunchInfo info = discover_ok(kHydra);
  expect_ids(info, "MPICH/Hydra", 3, 4, 1, 2);
  EXPECT_TRUE(info.mpi_launched);
}

TEST(Discovery, Precedence) {
  const Vars all = merged({kHvdc, kOpenMpi, kTorchrun, kSlurmStep, kHydra});
  EXPECT_EQ(discover_ok(all, 0, 2).source, "config");
  EXPECT_EQ(discover_ok(all).source, "HVDC_RANK/HVDC_SIZE");
  EXPECT_EQ(discover_ok(merged({kOpenMpi, kTorchrun, kSlurmStep, kHydra})).source, "Open MPI");
  EXPECT_EQ(discover_ok(merged({kTorchrun, kSlurmStep, kHydra})).source, "torchrun");
  EXPECT_EQ(discover_ok(merged({kSlurmStep, kHydra})).source, "Slurm");
  EXPECT_EQ(discover_ok(kHydra).source, "MPICH/Hydra");
}

TEST(Discovery, MpiLaunchedIsReportedWhateverSourceWins) {
  LaunchInfo info = discover_ok(merged({kHvdc, kOpenMpi}));
  EXPECT_EQ(info.source, "HVDC_RANK/HVDC_SIZE");
  EXPECT_TRUE(info.mpi_launched);
}

TEST(Discovery, SrunThenTorchrunUsesTorchrunIds) {
  // `srun -N2 --ntasks-per-node=1 torchrun --nproc-per-node=4 ...`: every worker inherits its
  // node task's Slurm ids (task 1 of 2) but is worker 5 of 8 for torchrun.
  const Vars env = {{"SLURM_JOB_ID", "77"},   {"SLURM_STEP_ID", "0"},  {"SLURM_PROCID", "1"},
                    {"SLURM_NTASKS", "2"},    {"SLURM_LOCALID", "0"},  {"RANK", "5"},
                    {"WORLD_SIZE", "8"},      {"LOCAL_RANK", "1"},     {"LOCAL_WORLD_SIZE", "4"},
                    {"MASTER_ADDR", "node1"}, {"MASTER_PORT", "29500"}};
  LaunchInfo info = discover_ok(env);
  expect_ids(info, "torchrun", 5, 8, 1, 4);
  EXPECT_EQ(info.master_addr, "node1");
  EXPECT_EQ(info.master_port, 29501);
}

TEST(Discovery, SbatchWithoutSrunIsASingleton) {
  // The batch script itself: Slurm ids but no job step.
  const Vars env = {
      {"SLURM_JOB_ID", "77"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "0"}};
  LaunchInfo info = discover_ok(env);
  expect_ids(info, "singleton", 0, 1, -1, -1);
}

TEST(Discovery, SpecialSlurmStepsAreNotJobSteps) {
  // Batch (new and old ids), extern and interactive steps describe a single process.
  for (const char* step : {"4294967291", "4294967294", "4294967292", "4294967290", "4294967295"}) {
    SCOPED_TRACE(step);
    const Vars env = {{"SLURM_STEP_ID", step}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}};
    EXPECT_EQ(discover_ok(env).source, "singleton");
  }
  EXPECT_EQ(
      discover_ok({{"SLURM_STEP_ID", "4294967279"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}})
          .source,
      "Slurm");
}

TEST(Discovery, IncompleteLaunchersDoNotMatch) {
  // Each launcher short of one variable falls through to the next source, here the singleton.
  EXPECT_EQ(discover_ok({{"OMPI_COMM_WORLD_RANK", "1"}}).source, "singleton");
  EXPECT_EQ(discover_ok({{"RANK", "1"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "h"}}).source,
            "singleton");
  EXPECT_EQ(discover_ok({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}}).source,
            "singleton");
  EXPECT_EQ(discover_ok({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"}}).source,
            "singleton");
  EXPECT_EQ(discover_ok({{"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "1"}}).source, "singleton");
  EXPECT_EQ(discover_ok({{"PMI_SIZE", "2"}}).source, "singleton");
  // An incomplete torchrun set leaves the Slurm step below it in charge.
  Vars env = kSlurmStep;
  env["RANK"] = "3";
  EXPECT_EQ(discover_ok(env).source, "Slurm");
}

TEST(Discovery, EmptyVariablesCountAsUnset) {
  EXPECT_EQ(discover_ok({{"HVDC_RANK", ""}, {"HVDC_SIZE", ""}}).source, "singleton");
  EXPECT_EQ(discover_ok(merged({{{"HVDC_RANK", ""}}, kHydra})).source, "MPICH/Hydra");
}

TEST(Discovery, TorchrunMasterPortPlusOne) {
  LaunchInfo info = discover_ok(kTorchrun);
  EXPECT_EQ(info.master_port, 29501);
  EXPECT_NE(info.note.find("MASTER_PORT"), std::string::npos) << info.note;
  EXPECT_NE(info.note.find("29501"), std::string::npos) << info.note;
}

TEST(Discovery, HvdcMasterOverridesTorchrun) {
  Vars env = kTorchrun;
  env["HVDC_MASTER_ADDR"] = "10.0.0.7";
  env["HVDC_MASTER_PORT"] = "31000";
  LaunchInfo info = discover_ok(env);
  EXPECT_EQ(info.master_addr, "10.0.0.7");
  EXPECT_EQ(info.master_port, 31000);
  EXPECT_EQ(info.note, "");
}

// "0" is HVDC_MASTER_PORT's default as hvd_config and hvdc-info show it: the same as unset.
TEST(Discovery, HvdcMasterPortZeroMeansUnset) {
  Vars env = kTorchrun;
  env["HVDC_MASTER_PORT"] = "0";
  LaunchInfo info = discover_ok(env);
  EXPECT_NE(info.master_port, 0);
  EXPECT_NE(info.note.find("MASTER_PORT + 1"), std::string::npos) << info.note;
}

TEST(Discovery, MasterVariablesCountOnlyUnderTorchrun) {
  // MASTER_ADDR/PORT left in the environment do not leak into another source.
  Vars env = kOpenMpi;
  env["MASTER_ADDR"] = "elsewhere";
  env["MASTER_PORT"] = "29500";
  LaunchInfo info = discover_ok(env);
  EXPECT_EQ(info.master_addr, "");
  EXPECT_EQ(info.master_port, 0);
}

TEST(Discovery, DescribeNamesSourceRankAndNote) {
  const std::string line = hvdc::bootstrap::describe_launch(discover_ok(kTorchrun));
  for (const char* word :
       {"torchrun", "rank 6 of 16", "local rank 2 of 8", "node0:29501", "MASTER_PORT"}) {
    EXPECT_NE(line.find(word), std::string::npos) << line;
  }
}

TEST(Discovery, HalfAnExplicitPairIsAnError) {
  expect_invalid({{"HVDC_RANK", "1"}}, {"HVDC_RANK", "'1'", "HVDC_SIZE"});
  expect_invalid({{"HVDC_SIZE", "4"}}, {"HVDC_SIZE", "'4'", "HVDC_RANK"});
  expect_invalid({}, {"config rank", "2"}, 2, -1);
  expect_invalid({}, {"config size", "4"}, -1, 4);
}

TEST(Discovery, MalformedValuesAreErrors) {
  expect_invalid({{"HVDC_RANK", "one"}, {"HVDC_SIZE", "2"}}, {"HVDC_RANK", "'one'"});
  expect_invalid({{"HVDC_RANK", "-1"}, {"HVDC_SIZE", "2"}}, {"HVDC_RANK", "'-1'"});
  expect_invalid({{"HVDC_RANK", "0"}, {"HVDC_SIZE", "0"}}, {"HVDC_SIZE", "'0'"});
  expect_invalid({{"HVDC_RANK", "2"}, {"HVDC_SIZE", "2"}}, {"HVDC_RANK", "'2'", "HVDC_SIZE"});
  expect_invalid({{"HVDC_RANK", " 1"}, {"HVDC_SIZE", "2"}}, {"HVDC_RANK"});
  expect_invalid({{"HVDC_RANK", "1x"}, {"HVDC_SIZE", "2"}}, {"HVDC_RANK", "'1x'"});
  expect_invalid({{"HVDC_RANK", "0"}, {"HVDC_SIZE", "99999999999"}}, {"HVDC_SIZE"});
  expect_invalid({{"OMPI_COMM_WORLD_RANK", "4"}, {"OMPI_COMM_WORLD_SIZE", "4"}},
                 {"OMPI_COMM_WORLD_RANK", "'4'"});
  expect_invalid(merged({kTorchrun, {{"WORLD_SIZE", "abc"}}}), {"WORLD_SIZE", "'abc'"});
  expect_invalid(merged({kHydra, {{"PMI_RANK", "9"}}}), {"PMI_RANK", "'9'", "PMI_SIZE"});
  expect_invalid(merged({kSlurmStep, {{"SLURM_NTASKS", "-3"}}}), {"SLURM_NTASKS", "'-3'"});
  expect_invalid({}, {"config", "5"}, 5, 4);
  expect_invalid({}, {"config", "-2"}, -2, 4);
  expect_invalid({}, {"config", "0"}, 0, 0);
}

TEST(Discovery, MalformedLocalValuesAreErrors) {
  expect_invalid(merged({kOpenMpi, {{"OMPI_COMM_WORLD_LOCAL_RANK", "4"}}}),
                 {"OMPI_COMM_WORLD_LOCAL_RANK", "'4'", "OMPI_COMM_WORLD_LOCAL_SIZE"});
  expect_invalid(merged({kHvdc, {{"HVDC_LOCAL_SIZE", "9"}}}),
                 {"HVDC_LOCAL_SIZE", "'9'", "HVDC_SIZE"});
  expect_invalid(merged({kTorchrun, {{"LOCAL_RANK", "x"}}}), {"LOCAL_RANK", "'x'"});
  expect_invalid(merged({kSlurmStep, {{"SLURM_TASKS_PER_NODE", "4(x"}}}),
                 {"SLURM_TASKS_PER_NODE", "'4(x'"});
  expect_invalid(merged({kSlurmStep, {{"SLURM_NODEID", "3"}}}), {"SLURM_NODEID", "'3'"});
  expect_invalid(merged({kSlurmStep, {{"SLURM_STEP_ID", "batch"}}}), {"SLURM_STEP_ID", "'batch'"});
}

TEST(Discovery, MalformedPortsAreErrors) {
  expect_invalid({{"HVDC_MASTER_PORT", "-1"}}, {"HVDC_MASTER_PORT", "'-1'"});
  expect_invalid({{"HVDC_MASTER_PORT", "65536"}}, {"HVDC_MASTER_PORT", "'65536'"});
  expect_invalid({{"HVDC_MASTER_PORT", "http"}}, {"HVDC_MASTER_PORT", "'http'"});
  expect_invalid(merged({kTorchrun, {{"MASTER_PORT", "x1"}}}), {"MASTER_PORT", "'x1'"});
  expect_invalid(merged({kTorchrun, {{"MASTER_PORT", "65535"}}}),
                 {"MASTER_PORT", "65535", "HVDC_MASTER_PORT"});
  // HVDC_MASTER_PORT takes over, so torchrun's last port is fine then.
  Vars env = merged({kTorchrun, {{"MASTER_PORT", "65535"}, {"HVDC_MASTER_PORT", "1024"}}});
  EXPECT_EQ(discover_ok(env).master_port, 1024);
}

}  // namespace

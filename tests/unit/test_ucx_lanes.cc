// lanes_only_tcp() reads UCX's description of an endpoint (ucp_ep_print_info): samples in UCX
// 1.13's format, as printed between the multihost suite's network namespaces and as UCX prints
// InfiniBand and shared-memory endpoints.
#include "transport/ucx/ucx_lanes.h"

#include <gtest/gtest.h>

namespace {

using hvdc::transport::ucx::lanes_only_tcp;

constexpr const char* kTcp =
    "#\n"
    "# UCP endpoint \n"
    "#\n"
    "#               peer: <no debug data>\n"
    "#                 lane[0]:  1:tcp/hva15688.0 md[0]          -> md[0]/tcp/sysdev[255] am "
    "am_bw#0 keepalive wireup\n"
    "#\n"
    "#                tag_send: 0..<egr/short>..65529..<egr/zcopy>..154686..<rndv>..(inf)\n"
    "#            tag_send_nbr: 0..<egr/short>..65529..<egr/bcopy>..262144..<rndv>..(inf)\n"
    "#                  rma_bw: mds rndv_rkey_size 9\n";

constexpr const char* kTwoTcpLanes =
    "#                 lane[0]:  1:tcp/eth0.0 md[0]  -> md[0]/tcp/sysdev[255] am am_bw#0\n"
    "#                 lane[1]:  2:tcp/eth1.0 md[0]  -> md[0]/tcp/sysdev[255] am_bw#1\n";

constexpr const char* kInfiniBand =
    "#                 lane[0]:  8:rc_mlx5/mlx5_0:1.0 md[4]  -> md[4]/ib/sysdev[0] rma_bw#0 am "
    "am_bw#0\n"
    "#                 lane[1]:  3:tcp/ib0.0 md[1]  -> md[1]/tcp/sysdev[255] keepalive\n";

constexpr const char* kSharedMemory =
    "#                 lane[0]:  3:posix/memory.0 md[2]  -> md[2]/posix/sysdev[255] am am_bw#0\n"
    "#                 lane[1]:  4:cma/memory.0 md[3]  -> md[3]/cma/sysdev[255] rma_bw#0\n";

TEST(UcxLanes, AllTcpLanes) {
  EXPECT_TRUE(lanes_only_tcp(kTcp));
  EXPECT_TRUE(lanes_only_tcp(kTwoTcpLanes));
}

TEST(UcxLanes, AnyOtherTransportIsNotTcpAlone) {
  EXPECT_FALSE(lanes_only_tcp(kInfiniBand));
  EXPECT_FALSE(lanes_only_tcp(kSharedMemory));
  EXPECT_FALSE(lanes_only_tcp("#  lane[0]:  0:self/memory.0 md[0]  -> md[0]/self am\n"));
}

TEST(UcxLanes, NoLanesOrAnUnknownFormatIsNotTcp) {
  EXPECT_FALSE(lanes_only_tcp(""));
  EXPECT_FALSE(lanes_only_tcp("#\n# UCP endpoint \n#\n"));
  EXPECT_FALSE(lanes_only_tcp("#  lane[0] tcp eth0\n"));
  EXPECT_FALSE(lanes_only_tcp("#  lane[0]:  tcp\n"));
  // The transport is the word before '/', not anywhere on the line.
  EXPECT_FALSE(lanes_only_tcp("#  lane[0]:  1:tcpx/eth0.0 md[0]  -> md[0]/tcp/sysdev[255]\n"));
}

}  // namespace

// Finding a step's memory cgroup from slurmstepd's /proc/self/cgroup and mountinfo, and
// reading its out-of-memory kills, on the texts the kernel writes under cgroup v1 and v2.
#include <gtest/gtest.h>

#include "step_memory.hpp"

namespace {

using namespace mgpr::spank;
namespace fs = std::filesystem;

constexpr const char* kCgroupV1 =
    "12:pids:/slurm_node1/uid_0/job_7/step_0\n"
    "4:memory:/mgpr-1a2b-node1/slurm_node1/uid_0/job_7/step_0\n"
    "1:name=systemd:/init.scope\n"
    "0::/init.scope\n";

constexpr const char* kMountinfoV1 =
    "25 30 0:22 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw\n"
    "31 25 0:27 / /sys/fs/cgroup/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu\n"
    "34 25 0:30 /mgpr-1a2b-node1 /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "40 25 0:31 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";

TEST(SpankStepMemory, CgroupV1ThroughABoundNodeRoot) {
  const auto place = memory_cgroup(kCgroupV1);
  ASSERT_TRUE(place);
  EXPECT_FALSE(place->unified);
  const auto folder = cgroup_folder(kMountinfoV1, *place);
  ASSERT_TRUE(folder);
  EXPECT_EQ(*folder, fs::path("/sys/fs/cgroup/memory/slurm_node1/uid_0/job_7/step_0"));
  EXPECT_EQ(step_folder(*folder / "slurm", 0), fs::path("/sys/fs/cgroup/memory/slurm_node1/uid_0/job_7/step_0"));
  EXPECT_FALSE(step_folder(*folder, 1)) << "another step's folder is not this one's";
}

TEST(SpankStepMemory, CgroupV2AndAnEscapedMountPoint) {
  const auto place = memory_cgroup("0::/system.slice/slurmstepd.scope/job_7/step_3/slurm\n");
  ASSERT_TRUE(place);
  EXPECT_TRUE(place->unified);
  const auto folder = cgroup_folder("40 25 0:31 / /sys/fs/cgroup\\040two rw - cgroup2 cgroup2 rw,nsdelegate\n", *place);
  ASSERT_TRUE(folder);
  EXPECT_EQ(*folder, fs::path("/sys/fs/cgroup two/system.slice/slurmstepd.scope/job_7/step_3/slurm"));
  EXPECT_EQ(step_folder(*folder, 3), fs::path("/sys/fs/cgroup two/system.slice/slurmstepd.scope/job_7/step_3"));
}

TEST(SpankStepMemory, NoMemoryCgroupOrNoMountShowingIt) {
  EXPECT_FALSE(memory_cgroup("12:pids:/a\n"));
  EXPECT_FALSE(memory_cgroup(""));
  const CgroupPlace elsewhere{false, "/other-root/job_1/step_0"};
  EXPECT_FALSE(cgroup_folder(kMountinfoV1, elsewhere)) << "the bound root holds another node's tree";
  EXPECT_FALSE(cgroup_folder("garbage\n\n - \n", elsewhere));
}

TEST(SpankStepMemory, OomKillCounts) {
  EXPECT_EQ(oom_kill_count("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"), 2U);
  EXPECT_EQ(oom_kill_count("low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\noom_group_kill 0\n"), 1U);
  EXPECT_FALSE(oom_kill_count("oom_kill_disable 0\nunder_oom 0\n")) << "a kernel before 4.13 does not count";
  EXPECT_FALSE(oom_kill_count("oom_kill x\n"));
}

}  // namespace

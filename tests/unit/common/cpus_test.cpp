#include "common/cpus.hpp"

#include <catch2/catch.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

using namespace lanes;
namespace fs = std::filesystem;

namespace {

// A cgroup tree of its own under the temp directory: /proc/self/cgroup's text and the files.
struct fake_cgroups {
    fs::path base =
        fs::temp_directory_path() / ("lanes_cpus_test_" + std::to_string(::getpid()) + "_" +
                                     std::to_string(reinterpret_cast<std::uintptr_t>(this)));
    common::cgroup_files files{(base / "self_cgroup").string(), (base / "root").string()};

    explicit fake_cgroups(const std::string& self) {
        fs::create_directories(base / "root");
        write("self_cgroup", self);
    }
    ~fake_cgroups() { fs::remove_all(base); }
    void write(const std::string& rel, const std::string& text) {
        const fs::path p = rel == "self_cgroup" ? base / rel : base / "root" / rel;
        fs::create_directories(p.parent_path());
        std::ofstream(p) << text;
    }
};

} // namespace

TEST_CASE("cpu.max: a quota over its period in CPUs, max and junk as none", "[cpus]") {
    CHECK(common::parse_cpu_max("max 100000\n") == std::nullopt);
    CHECK(common::parse_cpu_max("200000 100000\n") == 2.0);
    CHECK(common::parse_cpu_max("150000 100000") == 1.5);
    CHECK(common::parse_cpu_max("50000") == 0.5); // the period defaults to 100 ms
    CHECK(common::parse_cpu_max("") == std::nullopt);
    CHECK(common::parse_cpu_max("-1 100000") == std::nullopt);
    CHECK(common::parse_cpu_max("abc 100000") == std::nullopt);
    CHECK(common::parse_cpu_max("100000 0") == std::nullopt);
}

TEST_CASE("cgroup v2: the least quota of the process's cgroup and those above it", "[cpus]") {
    fake_cgroups g("0::/kubepods/pod1/ctr\n");
    CHECK(common::cgroup_cpu_quota(g.files) == std::nullopt); // no cpu.max anywhere
    g.write("kubepods/pod1/ctr/cpu.max", "max 100000\n");
    CHECK(common::cgroup_cpu_quota(g.files) == std::nullopt);
    g.write("kubepods/pod1/cpu.max", "250000 100000\n"); // the pod's limit binds its containers
    CHECK(common::cgroup_cpu_quota(g.files) == 2.5);
    g.write("kubepods/pod1/ctr/cpu.max", "400000 100000\n");
    CHECK(common::cgroup_cpu_quota(g.files) == 2.5);
    g.write("kubepods/pod1/ctr/cpu.max", "100000 100000\n");
    CHECK(common::cgroup_cpu_quota(g.files) == 1.0);
}

TEST_CASE("cgroup v2 in a namespace: the process's cgroup is the mount's root", "[cpus]") {
    fake_cgroups g("0::/\n");
    g.write("cpu.max", "200000 100000\n");
    CHECK(common::cgroup_cpu_quota(g.files) == 2.0);
}

TEST_CASE("cgroup v1: cfs quota over period, -1 as none, the mount's top in a container",
          "[cpus]") {
    fake_cgroups g("12:memory:/x\n4:cpu,cpuacct:/kubepods/pod2/ctr\n0::/\n");
    g.write("cpu,cpuacct/kubepods/pod2/ctr/cpu.cfs_quota_us", "-1\n");
    g.write("cpu,cpuacct/kubepods/pod2/ctr/cpu.cfs_period_us", "100000\n");
    CHECK(common::cgroup_cpu_quota(g.files) == std::nullopt);
    g.write("cpu,cpuacct/kubepods/pod2/ctr/cpu.cfs_quota_us", "300000\n");
    CHECK(common::cgroup_cpu_quota(g.files) == 3.0);
    // A container sees its own cgroup at the top of the mount, whatever the path says.
    fake_cgroups c("4:cpu,cpuacct:/kubepods/pod2/ctr\n");
    c.write("cpu/cpu.cfs_quota_us", "50000\n");
    c.write("cpu/cpu.cfs_period_us", "100000\n");
    CHECK(common::cgroup_cpu_quota(c.files) == 0.5);
}

TEST_CASE("usable CPUs: the least of online, affinity and the quota rounded up", "[cpus]") {
    const unsigned online = std::max(1u, std::thread::hardware_concurrency());
    fake_cgroups none("0::/\n");
    const auto free = common::usable_cpus(none.files);
    CHECK(free.online == online);
    CHECK(free.usable == std::min(free.online, free.affinity));
    CHECK_FALSE(free.quota);

    fake_cgroups half("0::/\n");
    half.write("cpu.max", "50000 100000\n");
    const auto c = common::usable_cpus(half.files);
    CHECK(c.quota == 0.5);
    CHECK(c.usable == 1); // never 0
    CHECK(c.describe().find("CPU quota 0.5 of " + std::to_string(online) + " online") !=
          std::string::npos);

    fake_cgroups big("0::/\n");
    big.write("cpu.max", "6400000 100000\n"); // 64 CPUs: the machine is the limit then
    CHECK(common::usable_cpus(big.files).usable == std::min(online, free.affinity));

    fake_cgroups frac("0::/\n");
    frac.write("cpu.max", "150000 100000\n");
    CHECK(common::usable_cpus(frac.files).usable == std::min({2u, online, free.affinity}));
}

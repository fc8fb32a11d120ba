// How many CPUs this process can use at once, for the thread counts that default to "the cores".
// std::thread::hardware_concurrency() counts the machine's CPUs: a container limited to 2 CPUs
// on a 64-core node would start 64 I/O threads, which the CFS quota then throttles in turns (a
// thread that has used the period's share waits out the rest of the period: milliseconds of
// stall in every tail). Here the affinity mask and the cgroup's quota count too.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace lanes::common {

struct cpu_count {
    unsigned online = 1;          // hardware_concurrency()
    unsigned affinity = 1;        // CPUs in the affinity mask (sched_getaffinity)
    std::optional<double> quota;  // the cgroup's CPU quota in CPUs, when it has one
    unsigned usable = 1;          // the least of the three (the quota rounded up), at least 1
    std::string describe() const; // "2 (quota 1.5 of 64 online)", for a startup log line
};

// Where the cgroup files are; the defaults are the real ones (tests give a directory of their own).
struct cgroup_files {
    std::string self_cgroup = "/proc/self/cgroup";
    std::string root = "/sys/fs/cgroup";
};

cpu_count usable_cpus(const cgroup_files& files = {});

// cgroup v2's cpu.max ("max 100000", "150000 100000"): the quota in CPUs, nullopt when unlimited
// or unreadable.
std::optional<double> parse_cpu_max(std::string_view text);

// The quota of the process's cgroup and every cgroup above it (the least), v2 or else v1
// (cpu.cfs_quota_us over cpu.cfs_period_us); nullopt when none sets one.
std::optional<double> cgroup_cpu_quota(const cgroup_files& files = {});

} // namespace lanes::common

#include "common/cpus.hpp"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace lanes::common {

namespace {

std::optional<std::string> read_file(const std::filesystem::path& p) {
    std::ifstream in(p);
    if (!in)
        return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::optional<long long> parse_int(std::string_view s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
        s.remove_suffix(1);
    long long v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size())
        return std::nullopt;
    return v;
}

void keep_least(std::optional<double>& least, std::optional<double> q) {
    if (q && (!least || *q < *least))
        least = q;
}

// The directories from `dir` up to `root`, both included (a path that leaves `root` stops).
std::vector<std::filesystem::path> up_to_root(const std::filesystem::path& root,
                                              std::string_view relative) {
    std::vector<std::filesystem::path> out;
    std::filesystem::path rel = std::filesystem::path(relative).relative_path().lexically_normal();
    if (rel.empty() || *rel.begin() == "..")
        rel.clear();
    for (;;) {
        out.push_back(rel.empty() ? root : root / rel);
        if (rel.empty())
            break;
        rel = rel.parent_path();
    }
    return out;
}

// cgroup v1: quota over period, -1 (unlimited) as nullopt.
std::optional<double> v1_quota(const std::filesystem::path& dir) {
    const auto quota = read_file(dir / "cpu.cfs_quota_us");
    const auto period = read_file(dir / "cpu.cfs_period_us");
    if (!quota || !period)
        return std::nullopt;
    const auto q = parse_int(*quota), p = parse_int(*period);
    if (!q || !p || *q <= 0 || *p <= 0)
        return std::nullopt;
    return static_cast<double>(*q) / static_cast<double>(*p);
}

} // namespace

std::optional<double> parse_cpu_max(std::string_view text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
        text.remove_suffix(1);
    const auto space = text.find(' ');
    const std::string_view quota = text.substr(0, space);
    if (quota == "max" || quota.empty())
        return std::nullopt;
    const auto q = parse_int(quota);
    // The period defaults to 100 ms when only the quota is written.
    const auto p = space == std::string_view::npos ? std::optional<long long>(100'000)
                                                   : parse_int(text.substr(space + 1));
    if (!q || !p || *q <= 0 || *p <= 0)
        return std::nullopt;
    return static_cast<double>(*q) / static_cast<double>(*p);
}

std::optional<double> cgroup_cpu_quota(const cgroup_files& files) {
    const auto self = read_file(files.self_cgroup);
    if (!self)
        return std::nullopt;
    const std::filesystem::path root(files.root);
    std::optional<double> least;
    std::istringstream lines(*self);
    std::string line;
    while (std::getline(lines, line)) {
        // "hierarchy-ID:controller-list:path"
        const auto first = line.find(':');
        const auto second = line.find(':', first == std::string::npos ? 0 : first + 1);
        if (first == std::string::npos || second == std::string::npos)
            continue;
        const std::string_view id = std::string_view(line).substr(0, first);
        const std::string_view controllers =
            std::string_view(line).substr(first + 1, second - first - 1);
        const std::string_view path = std::string_view(line).substr(second + 1);
        if (id == "0" && controllers.empty()) {
            // v2 (unified): each level's cpu.max. Under a cgroup namespace the process's own
            // cgroup is the root of the mount, and its cpu.max is there.
            for (const auto& dir : up_to_root(root, path))
                if (const auto text = read_file(dir / "cpu.max"))
                    keep_least(least, parse_cpu_max(*text));
            continue;
        }
        bool has_cpu = false;
        for (std::size_t at = 0; at <= controllers.size();) {
            const auto comma = std::min(controllers.find(',', at), controllers.size());
            has_cpu = has_cpu || controllers.substr(at, comma - at) == "cpu";
            at = comma + 1;
        }
        if (!has_cpu)
            continue;
        // v1: mounted as cpu or cpu,cpuacct (one a link to the other on most systems); in a
        // container the path may name the host's cgroup while the mount shows its own at the top.
        for (const char* mount : {"cpu", "cpu,cpuacct", "cpuacct,cpu"})
            for (const auto& dir : up_to_root(root / mount, path))
                keep_least(least, v1_quota(dir));
    }
    return least;
}

cpu_count usable_cpus(const cgroup_files& files) {
    cpu_count c;
    c.online = std::max(1u, std::thread::hardware_concurrency());
    c.affinity = c.online;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        c.affinity = std::max(1, CPU_COUNT(&set));
    c.quota = cgroup_cpu_quota(files);
    c.usable = std::min(c.online, c.affinity);
    if (c.quota)
        c.usable = std::min(c.usable, static_cast<unsigned>(std::max(1.0, std::ceil(*c.quota))));
    c.usable = std::max(1u, c.usable);
    return c;
}

std::string cpu_count::describe() const {
    std::ostringstream out;
    out << usable;
    if (affinity < online || quota) {
        out << " (";
        if (affinity < online)
            out << "affinity " << affinity << (quota ? ", " : "");
        if (quota)
            out << "CPU quota " << *quota;
        out << " of " << online << " online)";
    }
    return out.str();
}

} // namespace lanes::common

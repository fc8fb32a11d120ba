#include "router/policies/factory.hpp"

#include "router/policies/least_loaded.hpp"
#include "router/policies/random.hpp"
#include "router/policies/round_robin.hpp"

#include <algorithm>
#include <array>

namespace lanes::router {

namespace {

template <class P>
std::unique_ptr<policy> make(const policy_options& options) {
    return std::make_unique<P>(options);
}

struct entry {
    std::string_view name;
    std::unique_ptr<policy> (*make)(const policy_options&);
    bool reads_kv_events; // routes on policy_options::precise where it is set
};

constexpr std::array<entry, 6> policies{{
    {"round_robin",
     [](const policy_options&) -> std::unique_ptr<policy> {
         return std::make_unique<round_robin_policy>();
     },
     false},
    {"random", make<random_policy>, false},
    {"least_loaded", make<least_loaded_policy>, false},
    {"session", make<session_policy>, false},
    {"prefix", make<prefix_policy>, true},
    {"kv_aware", make<kv_aware_policy>, true},
}};

const entry* find(std::string_view name) {
    const auto it = std::find_if(policies.begin(), policies.end(),
                                 [&](const entry& e) { return e.name == name; });
    return it == policies.end() ? nullptr : &*it;
}

} // namespace

std::unique_ptr<policy> make_policy(std::string_view name, const policy_options& options) {
    const entry* e = find(name);
    return e ? e->make(options) : nullptr;
}

bool policy_reads_kv_events(std::string_view name) {
    const entry* e = find(name);
    return e && e->reads_kv_events;
}

const std::vector<std::string>& policy_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> out;
        for (const auto& e : policies)
            out.emplace_back(e.name);
        return out;
    }();
    return names;
}

} // namespace lanes::router

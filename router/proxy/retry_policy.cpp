#include "router/proxy/retry_policy.hpp"

#include <array>
#include <utility>

namespace lanes::router {

namespace {

constexpr std::array<std::pair<std::string_view, failure_class>, 6> names{{
    {"connect-failure", failure_class::connect},
    {"reset", failure_class::reset},
    {"backpressure", failure_class::backpressure},
    {"5xx", failure_class::status_5xx},
    {"timeout", failure_class::timeout},
    {"broken-answer", failure_class::broken},
}};

std::string_view trimmed(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

} // namespace

std::optional<retry_policy> retry_policy::parse(std::string_view list, std::string* why) {
    retry_policy out(0);
    if (trimmed(list) == "none")
        return out;
    while (!list.empty()) {
        const auto comma = list.find(',');
        const std::string_view item = trimmed(list.substr(0, comma));
        list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
        bool known = false;
        for (const auto& [name, c] : names)
            if (item == name) {
                out.mask_ |= static_cast<unsigned>(c);
                known = true;
            }
        if (!known) {
            if (why) {
                *why = "'" + std::string(item) + "' is not one of: none";
                for (const auto& [name, c] : names)
                    *why += ", " + std::string(name);
            }
            return std::nullopt;
        }
    }
    return out;
}

std::string_view to_string(failure_class c) {
    for (const auto& [name, cls] : names)
        if (cls == c)
            return name;
    return "none";
}

} // namespace lanes::router

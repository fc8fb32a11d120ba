#include "router/request/session_key.hpp"

#include <algorithm>
#include <string_view>

namespace lanes::router {

std::optional<std::string> session_key(const common::http::request& req,
                                       const std::optional<std::string>& user) {
    if (auto id = req.find("x-session-id"); id && !id->empty())
        return std::string(*id);
    if (user && !user->empty())
        return *user;
    if (auto cookie = req.find("cookie")) {
        const std::string_view cookies = *cookie;
        constexpr std::string_view key = "session_id=";
        for (std::size_t pos = 0; pos < cookies.size();) {
            const auto end = std::min(cookies.find(';', pos), cookies.size());
            std::string_view item = cookies.substr(pos, end - pos);
            while (item.starts_with(' '))
                item.remove_prefix(1);
            if (item.starts_with(key) && item.size() > key.size())
                return std::string(item.substr(key.size()));
            pos = end + 1;
        }
    }
    return std::nullopt;
}

} // namespace lanes::router

#include "router/request/session_key.hpp"

#include <xxhash.h>

#include <algorithm>
#include <random>

namespace lanes::router {

namespace {

// The secret the session table's keys are hashed with: nobody outside the process can choose
// keys that collide in it.
const std::uint64_t session_secret = [] {
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}();

} // namespace

std::optional<std::string_view> session_key_text(const common::http::request& req,
                                                 const std::optional<std::string>& user) {
    if (auto id = req.find("x-session-id"); id && !id->empty())
        return *id;
    if (user && !user->empty())
        return std::string_view(*user);
    if (auto cookie = req.find("cookie")) {
        const std::string_view cookies = *cookie;
        constexpr std::string_view key = "session_id=";
        for (std::size_t pos = 0; pos < cookies.size();) {
            const auto end = std::min(cookies.find(';', pos), cookies.size());
            std::string_view item = cookies.substr(pos, end - pos);
            while (item.starts_with(' '))
                item.remove_prefix(1);
            if (item.starts_with(key) && item.size() > key.size())
                return item.substr(key.size());
            pos = end + 1;
        }
    }
    return std::nullopt;
}

session_ref session_of(std::string_view key) {
    return {XXH3_64bits_withSeed(key.data(), key.size(), session_secret),
            XXH3_64bits(key.data(), key.size())};
}

std::optional<session_ref> request_session(const common::http::request& req,
                                           const std::optional<std::string>& user,
                                           std::size_t max_key_bytes) {
    const auto text = session_key_text(req, user);
    if (!text || text->size() > max_key_bytes)
        return std::nullopt;
    return session_of(*text);
}

} // namespace lanes::router

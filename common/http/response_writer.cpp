#include "common/http/response_writer.hpp"

#include "common/http/parse.hpp"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace lanes::common::http {

boost::asio::awaitable<bool> response_writer::send(response res) {
    std::vector<header_view> headers;
    std::string_view content_type = "text/plain";
    for (const auto& f : res) {
        const std::string_view name(f.name_string().data(), f.name_string().size());
        const std::string_view value(f.value().data(), f.value().size());
        if (field_name_is(name, "content-type"))
            content_type = value;
        else if (!field_name_is(name, "server") && !field_name_is(name, "content-length") &&
                 !field_name_is(name, "transfer-encoding") && !field_name_is(name, "connection"))
            headers.emplace_back(name, value);
    }
    co_return co_await send(res.result(), content_type, headers, res.body());
}

boost::asio::awaitable<void> response_writer::answer(response res) {
    const bool sent = co_await send(std::move(res));
    (void)sent; // a client that left is the session's to notice
}

std::optional<std::size_t> response_writer::write_framed_now(std::string_view /*chunks*/) {
    return 0;
}

bool acceptable_request_id(std::string_view id) {
    if (id.empty() || id.size() > 128)
        return false;
    return std::all_of(id.begin(), id.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '.' || c == '_' || c == '-';
    });
}

std::string make_request_id() {
    static constexpr char hex[] = "0123456789abcdef";
    thread_local std::mt19937_64 rng{std::random_device{}()};
    std::string id = "req-";
    for (int word = 0; word < 2; ++word) {
        const std::uint64_t bits = rng();
        for (int i = 15; i >= 0; --i)
            id.push_back(hex[(bits >> (4 * i)) & 0xf]);
    }
    return id;
}

error_page plain_error_page(int /*status*/, std::string_view message) {
    return {"text/plain", std::string(message) + "\n"};
}

} // namespace lanes::common::http

#include "router/proxy/upstream_fields.hpp"

#include "common/http/io/head_writer.hpp"
#include "common/http/parse.hpp"
#include "router/proxy/upstream_call.hpp"

#include <algorithm>
#include <charconv>
#include <ctime>
#include <iomanip>
#include <sstream>

namespace lanes::router {

namespace http = common::http;

namespace {

// Fields not forwarded (the router sets Host and Content-Length itself), and the request id,
// which it sets once. Compared by length first: most fields differ from all of them there.
bool not_forwarded(std::string_view name) {
    const auto is = [name](std::string_view n) { return http::field_name_is(name, n); };
    switch (name.size()) {
    case 2:
        return is("te");
    case 4:
        return is("host");
    case 6:
        return is("expect");
    case 7:
        return is("trailer") || is("upgrade");
    case 10:
        return is("connection") || is("keep-alive");
    case 12:
        return is(header_request_id);
    case 14:
        return is("content-length");
    case 16:
        return is("proxy-connection");
    case 17:
        return is("transfer-encoding");
    case 18:
        return is("proxy-authenticate");
    case 19:
        return is("proxy-authorization");
    default:
        return false;
    }
}

// Whether a Connection field of the request names `name` (RFC 9110, 7.6.1: then it is hop-by-hop
// too).
bool named_by_connection(const http::request& req, std::string_view name) {
    for (std::size_t i = 0; i < req.field_count(); ++i)
        if (http::field_name_is(req.name(i), "connection") && http::list_has(req.value(i), name))
            return true;
    return false;
}

bool connection_names_fields(const http::request& req) {
    for (std::size_t i = 0; i < req.field_count(); ++i)
        if (http::field_name_is(req.name(i), "connection") &&
            http::names_other_fields(req.value(i)))
            return true;
    return false;
}

// Response fields not relayed: hop-by-hop ones, the framing (the router frames its answer),
// Content-Type and Server (written by the router's writer) and the ones the router sets itself.
bool not_relayed(std::string_view name) {
    const auto is = [name](std::string_view n) { return http::field_name_is(name, n); };
    switch (name.size()) {
    case 2:
        return is("te");
    case 6:
        return is("server");
    case 7:
        return is("trailer") || is("upgrade");
    case 10:
        return is("connection") || is("keep-alive");
    case 12:
        return is(header_request_id) || is("content-type");
    case 14:
        return is("content-length");
    case 15:
        return is(header_replica);
    case 17:
        return is("transfer-encoding");
    case 18:
        return is("proxy-authenticate");
    case 19:
        return is("proxy-authorization");
    case 20:
        return is(header_reason);
    default:
        return false;
    }
}

// Whether a Connection field of `head` names `name` (which makes it hop-by-hop).
bool named_by_connection(const http::response_head& head, std::string_view name) {
    for (std::size_t i = 0; i < head.field_count(); ++i)
        if (http::field_name_is(head.name(i), "connection") && http::list_has(head.value(i), name))
            return true;
    return false;
}

} // namespace

bool relayed_field(const http::response_head& head, std::string_view name, bool names_fields) {
    return !not_relayed(name) && !(names_fields && named_by_connection(head, name));
}

std::optional<std::chrono::seconds> parse_retry_after(std::string_view value,
                                                      std::chrono::system_clock::time_point now) {
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
        value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
        value.remove_suffix(1);
    if (value.empty())
        return std::nullopt;
    // A wait longer than a day is read as a day: the router holds off at most --max-backoff
    // anyway, and the milliseconds it computes must not overflow.
    constexpr std::int64_t longest = 86'400;
    std::uint64_t seconds = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (end == value.data() + value.size() && end != value.data() &&
        (ec == std::errc{} || ec == std::errc::result_out_of_range))
        return std::chrono::seconds(ec == std::errc{} ? std::min<std::uint64_t>(seconds, longest)
                                                      : longest);
    // An HTTP-date (IMF-fixdate): "Sun, 06 Nov 1994 08:49:37 GMT".
    std::tm tm{};
    std::istringstream in{std::string(value)};
    in >> std::get_time(&tm, "%a, %d %b %Y %H:%M:%S GMT");
    if (in.fail())
        return std::nullopt;
    // In whole seconds of time_t: a date in the year 9999 does not fit the clock's nanoseconds.
    const std::int64_t left = static_cast<std::int64_t>(timegm(&tm)) -
                              static_cast<std::int64_t>(std::chrono::system_clock::to_time_t(now));
    return std::chrono::seconds(std::clamp<std::int64_t>(left, 0, longest));
}

std::string upstream_head(const http::request& req, std::string_view base_path,
                          std::string_view authority, std::string_view request_id, bool with_body,
                          std::string_view authorization) {
    // The literals below come to under 128 bytes; each header adds ": " and CR LF.
    std::size_t bound = 128 + req.method_string().size() + base_path.size() + req.target().size() +
                        authority.size() + header_request_id.size() + request_id.size() +
                        authorization.size();
    for (std::size_t i = 0; i < req.field_count(); ++i)
        bound += req.name(i).size() + req.value(i).size() + 4;
    if (with_body)
        bound += req.body().size();
    std::string head;
    common::head_writer out(head, bound);
    out.put(req.method_string()).put(" ").put(base_path).put(req.target());
    out.put(" HTTP/1.1\r\nHost: ").put(authority).put("\r\n");
    const bool names_fields = connection_names_fields(req);
    for (std::size_t i = 0; i < req.field_count(); ++i) {
        const std::string_view name = req.name(i);
        if (not_forwarded(name) || (names_fields && named_by_connection(req, name)))
            continue;
        if (!authorization.empty() && name.size() == 13 &&
            http::field_name_is(name, "authorization"))
            continue; // the replica's own credentials go instead
        out.put(name).put(": ").put(req.value(i)).put("\r\n");
    }
    if (!authorization.empty())
        out.put("Authorization: ").put(authorization).put("\r\n");
    out.put(header_request_id).put(": ").put(request_id);
    out.put("\r\nContent-Length: ").put_number(req.body().size()).put("\r\n\r\n");
    if (with_body)
        out.put(req.body());
    head.resize(out.text().size());
    return head;
}

} // namespace lanes::router

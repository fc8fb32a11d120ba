// Helpers the battery tests share: a receive timeout on a blocking socket, and a small request.
#pragma once

#include <boost/asio/ip/tcp.hpp>

#include <sys/socket.h>
#include <sys/time.h>

#include <chrono>
#include <string>

namespace lanes::test {

inline void set_receive_timeout(boost::asio::ip::tcp::socket& s, std::chrono::milliseconds t) {
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(t.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((t.count() % 1000) * 1000);
    ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

inline const std::string small = R"({"model":"m","prompt":"hello","max_tokens":2})";

} // namespace lanes::test

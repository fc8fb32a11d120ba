// One-shot requests with small answers, read whole: health probes, metric scrapes, the models
// list, tools and tests. fetch_on reuses a kept connection.
#pragma once

#include "common/http/client.hpp"
#include "common/http/message.hpp"
#include "common/http/url.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <memory>
#include <string>
#include <string_view>

namespace lanes::common::http {

struct fetch_result {
    boost::system::error_code ec; // transport error, or timeout
    // The connection was up when the request went out: a timeout then means the server was too
    // slow to answer, not that it could not be reached.
    bool connected = false;
    int status = 0;
    std::string body;
    std::string content_type;
    header_list headers; // every response header, in order
};

struct fetch_options {
    duration connect_timeout{2'000};
    duration total_timeout{5'000};
    std::size_t body_limit = 4 * 1024 * 1024;
    std::string body;
    std::string content_type = "application/json";
    header_list headers;
    // Ask the server to keep the connection open (fetch_on can then use it again); without it the
    // request says `Connection: close`.
    bool keep_alive = false;
};

// One request on a fresh connection; reads the whole body (bounded by body_limit). `target` and
// `options` must outlive the call: pass named objects, not temporaries (GCC 12 mishandles
// class-type temporaries and by-value class parameters of coroutines).
boost::asio::awaitable<fetch_result> fetch(boost::asio::any_io_executor ex, const url& target,
                                           beast_http::verb method, std::string_view path,
                                           const fetch_options& options);

// fetch() on `conn`, an open connection kept from an earlier fetch_on (moved onto `ex`), or on a
// fresh one when `conn` is null or closed (a fresh one is left in `conn`). A GET or HEAD on a kept
// connection the server had closed while it sat idle (closed_while_idle) is sent again, once, on a
// fresh one. Afterwards `conn` is open only when options.keep_alive is
// set and the answer allows another request on it.
boost::asio::awaitable<fetch_result> fetch_on(std::unique_ptr<client_connection>& conn,
                                              boost::asio::any_io_executor ex, const url& target,
                                              beast_http::verb method, std::string_view path,
                                              const fetch_options& options);

// fetch() on a private io_context, blocking the calling thread until it completes (for tools
// and tests that run no io_context of their own).
fetch_result fetch_blocking(const url& target, beast_http::verb method, std::string_view path,
                            const fetch_options& options);

} // namespace lanes::common::http

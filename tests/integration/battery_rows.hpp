// The battery's table of raw requests (battery_rows.cpp): each row's bytes and what must come
// of them; battery_test.cpp sends them and checks.
#pragma once

#include "fake_engine.hpp"

#include <boost/beast/http/fields.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace lanes::test::battery {

// What a client got for one row.
struct outcome {
    int status = 0; // 0: no answer at all
    bool closed = false;
    std::string body;
    boost::beast::http::fields headers;
    bool got_continue = false;
};

struct row {
    std::string name;
    std::vector<std::string> pieces;
    int status;
    bool closed;
    // What the engine received: nullopt for nothing at all, else the body it got.
    std::optional<std::string> forwarded;
    std::function<void(const outcome&, const fake_engine::received*)> more = {};
    long max_peak_mb = 0; // a row about memory: the router's peak RSS stays under this
};

std::vector<row> rows();

} // namespace lanes::test::battery

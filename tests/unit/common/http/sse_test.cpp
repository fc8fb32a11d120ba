#include "common/http/sse.hpp"

#include <catch2/catch.hpp>

using namespace lanes::common::http;

TEST_CASE("sse_parser yields data payloads however the bytes are split", "[sse]") {
    const std::string body = "data: {\"a\":1}\n\n: keep-alive comment\n\ndata: two\ndata: lines\n\n"
                             "data: [DONE]\r\n\r\n";
    for (std::size_t step = 1; step <= body.size(); ++step) {
        sse_parser p;
        std::vector<std::string> got;
        for (std::size_t i = 0; i < body.size(); i += step) {
            p.feed(std::string_view(body).substr(i, step));
            while (auto e = p.next())
                got.push_back(*e);
        }
        REQUIRE(got.size() == 3);
        CHECK(got[0] == "{\"a\":1}");
        CHECK(got[1] == "two\nlines");
        CHECK(got[2] == "[DONE]");
        CHECK(p.pending() == 0);
    }
}

TEST_CASE("sse_parser holds an incomplete event", "[sse]") {
    sse_parser p;
    p.feed("data: partial\n");
    CHECK(!p.next());
    CHECK(p.pending() > 0);
    p.feed("\n");
    CHECK(p.next() == std::optional<std::string>("partial"));
}

TEST_CASE("sse framing", "[sse]") {
    CHECK(sse_event("{\"a\":1}") == "data: {\"a\":1}\n\n");
    CHECK(sse_event("") == "data: \n\n");
    CHECK(sse_done == "data: [DONE]\n\n");
}

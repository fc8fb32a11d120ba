#include "common/http/chunked.hpp"

#include <catch2/catch.hpp>

#include <string>

using lanes::common::http::scan_chunks;

TEST_CASE("scan_chunks finds whole chunks and the end of the body", "[chunked]") {
    const std::string one = "5\r\nhello\r\n";
    const std::string two = "1a;name=v\r\nabcdefghijklmnopqrstuvwxyz\r\n";
    const std::string last = "0\r\nx-trailer: 1\r\n\r\n";
    const std::string body = one + two + last;

    auto s = scan_chunks(body);
    CHECK_FALSE(s.error);
    CHECK(s.complete == one.size() + two.size());
    CHECK(s.last);
    CHECK(s.consumed == body.size());

    // Cut anywhere: only whole chunks count, and the end is seen only once all of it is there.
    for (std::size_t cut = 0; cut < body.size(); ++cut) {
        INFO("cut at " << cut);
        const auto p = scan_chunks(std::string_view(body).substr(0, cut));
        REQUIRE_FALSE(p.error);
        REQUIRE_FALSE(p.last);
        const std::size_t expect = cut >= one.size() + two.size() ? one.size() + two.size()
                                   : cut >= one.size()            ? one.size()
                                                                  : 0;
        REQUIRE(p.complete == expect);
        REQUIRE(p.consumed == expect);
    }

    const auto plain_end = scan_chunks("0\r\n\r\n");
    CHECK(plain_end.last);
    CHECK(plain_end.complete == 0);
    CHECK(plain_end.consumed == 5);
    CHECK(scan_chunks("A\r\n0123456789\r\n").complete == 15); // upper-case hex
}

TEST_CASE("scan_chunks rejects what is not chunked framing", "[chunked]") {
    CHECK(scan_chunks("x\r\nhello\r\n").error);                 // not a size
    CHECK(scan_chunks("\r\nhello\r\n").error);                  // no digits
    CHECK(scan_chunks("5\r\nhelloXX").error);                   // data not followed by CRLF
    CHECK(scan_chunks("5z\r\nhello\r\n").error);                // junk after the size
    CHECK(scan_chunks("1;x\n0\r\na\r\n").error);                // a bare LF in an extension
    CHECK_FALSE(scan_chunks("1; name=\"v\"\r\na\r\n").error);   // a proper extension
    CHECK(scan_chunks("fffffffffffffffff\r\n").error);          // over 64 bits
    CHECK(scan_chunks(std::string(5000, '1')).error);           // a size line with no end, too long
    CHECK(scan_chunks("0\r\n" + std::string(5000, 'a')).error); // a trailer line too long
    CHECK(scan_chunks("0\r\nx: 1\nx: 2\r\n\r\n").error);        // a bare LF in a trailer
    // A trailer section of valid lines, but endless: an error past its limit, not a wait for
    // more (every call would scan it again from the start).
    std::string trailers = "0\r\n";
    while (trailers.size() < lanes::common::http::chunk_trailer_limit + 100)
        trailers += "x-t: 0123456789\r\n";
    CHECK(scan_chunks(trailers).error);
    const std::string some = trailers.substr(0, 3 + 100 * 17); // the last chunk, 100 whole lines
    CHECK_FALSE(scan_chunks(some).error);
    CHECK(scan_chunks(some + "\r\n").last);
    CHECK_FALSE(scan_chunks("0\r\nx:\t1\r\n\r\n").error);  // a tab is fine
    CHECK_FALSE(scan_chunks(std::string(100, '1')).error); // may still end in time
}

TEST_CASE("chunk_decoder gives the data however the bytes are split", "[chunked]") {
    using lanes::common::http::chunk_decoder;
    const std::string body = "5\r\nhello\r\n1a;name=v\r\nabcdefghijklmnopqrstuvwxyz\r\n"
                             "0\r\nx-trailer: 1\r\n\r\n";
    const std::string data = "helloabcdefghijklmnopqrstuvwxyz";

    // Every split point, and byte by byte: a caller keeps what a call did not take.
    for (std::size_t step = 1; step <= body.size(); ++step) {
        INFO("step " << step);
        chunk_decoder d;
        std::string out, pending;
        for (std::size_t pos = 0; pos < body.size(); pos += step) {
            pending += body.substr(pos, step);
            bool error = false;
            const std::size_t used = d.decode(pending, out, error);
            REQUIRE_FALSE(error);
            pending.erase(0, used);
        }
        CHECK(d.done());
        CHECK(pending.empty());
        CHECK(out == data);
    }

    SECTION("broken framing is an error") {
        for (const std::string bad : {"x\r\n", "5\r\nhelloXX", "5z\r\nhello\r\n",
                                      "fffffffffffffffff\r\n", "0\r\nx: 1\nx: 2\r\n\r\n"}) {
            INFO(bad);
            chunk_decoder d;
            std::string out;
            bool error = false;
            d.decode(bad, out, error);
            CHECK(error);
        }
        chunk_decoder d;
        std::string out;
        bool error = false;
        d.decode(std::string(5000, '1'), out, error); // a size line with no end, too long
        CHECK(error);
    }
    SECTION("nothing is taken after the end") {
        chunk_decoder d;
        std::string out;
        bool error = false;
        CHECK(d.decode("0\r\n\r\nHTTP/1.1 200", out, error) == 5);
        CHECK(d.done());
    }
}

TEST_CASE("a trailer field is a token, a colon and a value, as Beast holds it to", "[http]") {
    // Found by the response fuzz target: a trailer name with a ')' that Beast refuses.
    CHECK(scan_chunks("0\r\nTra)ler: t\r\n\r\n").error);
    CHECK(scan_chunks("0\r\n: t\r\n\r\n").error);
    CHECK(scan_chunks("0\r\nno colon\r\n\r\n").error);
    CHECK(scan_chunks("0\r\nx-t: a b\r\n\r\n").last);
    CHECK(scan_chunks("0\r\nTransfer-Encoding: chunked\r\n\r\n").error); // framing, in a trailer
    CHECK(scan_chunks("0\r\ncontent-length: 3\r\n\r\n").error);
    CHECK(scan_chunks("0\r\nConnection: keep-alive\r\n\r\n").error);
    lanes::common::http::chunk_decoder d;
    std::string out;
    bool error = false;
    d.decode("3\r\nabc\r\n0\r\nTra)ler: t\r\n\r\n", out, error);
    CHECK(error);
}

TEST_CASE("chunk extensions are names with token or quoted values, as Beast reads them", "[http]") {
    // Found by the response fuzz target: "3;x:y" is no extension Beast takes.
    CHECK(scan_chunks("3;x:y\r\nabc\r\n0\r\n\r\n").error);
    CHECK(scan_chunks("3;=y\r\nabc\r\n0\r\n\r\n").error);
    CHECK(scan_chunks("3;x=\"unterminated\r\nabc\r\n0\r\n\r\n").error);
    CHECK(scan_chunks("3;x=y;z ; q=\"a \\\" b\"\r\nabc\r\n0\r\n\r\n").last);
    CHECK(scan_chunks("3 ;x\r\nabc\r\n0\r\n\r\n").last);
    CHECK(scan_chunks("3\t\t\r\nabc\r\n0\r\n\r\n").error); // whitespace, then no ';'
    CHECK(scan_chunks("3;x \r\nabc\r\n0\r\n\r\n").error);
}

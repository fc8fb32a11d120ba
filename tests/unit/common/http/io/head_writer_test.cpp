#include "common/http/io/head_writer.hpp"

#include <catch2/catch.hpp>

using lanes::common::head_writer;

TEST_CASE("head_writer writes pieces within its bound and refuses to pass it", "[http]") {
    std::string buffer;
    {
        head_writer w(buffer, 64);
        w.put("HTTP/1.1 ").put_number(200).put(std::string_view(" OK\r\n"));
        w.put("Content-Length: ").put_number(18446744073709551615ull).put("\r\n\r\n");
        CHECK(w.text() == "HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551615\r\n\r\n");
    }
    CHECK(buffer.size() == 64); // kept for the next use
    {
        head_writer again(buffer, 8); // a smaller bound reuses the larger buffer
        again.put("x");
        CHECK(again.text() == "x");
    }
    std::string small;
    head_writer tight(small, 4);
    tight.put("abcd");
    CHECK_THROWS_AS(tight.put("e"), std::length_error);
    CHECK_THROWS_AS(tight.put_number(1), std::length_error); // a number needs room for 20 digits
    CHECK(tight.text() == "abcd");
}

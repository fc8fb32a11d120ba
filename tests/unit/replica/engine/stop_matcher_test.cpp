#include "replica/engine/stop_matcher.hpp"

#include <catch2/catch.hpp>

using lanes::replica::stop_matcher;

TEST_CASE("stop_matcher releases text only when it cannot become a stop string", "[stop]") {
    stop_matcher m({"END", "\n\n"});
    CHECK(!m.append("hello E"));
    CHECK(m.take_ready() == "hello "); // "E" could start "END"
    CHECK(!m.append("N"));
    CHECK(m.take_ready().empty());
    CHECK(!m.append("X"));
    CHECK(m.take_ready() == "ENX");
    CHECK(m.append("yyEND tail"));
    CHECK(m.take_all() == "yy");
    CHECK(m.output() == "hello ENXyy");
}

TEST_CASE("stop_matcher finds a stop string split across appends", "[stop]") {
    stop_matcher m({"\n\n"});
    std::string sent;
    for (char c : std::string("ab\ncd\n")) {
        CHECK(!m.append(std::string(1, c)));
        sent += m.take_ready();
    }
    CHECK(!m.matched());
    CHECK(m.append("\nzz"));
    sent += m.take_all();
    CHECK(sent == "ab\ncd");
    CHECK(m.matched() == "\n\n");
}

TEST_CASE("stop_matcher names the stop string that matched first in the text", "[stop]") {
    stop_matcher m({"yz", "x"});
    CHECK(m.append("abxyz")); // "x" starts before "yz"
    CHECK(m.take_all() == "ab");
    CHECK(m.matched() == "x");
}

TEST_CASE("stop_matcher without stop strings passes everything through", "[stop]") {
    stop_matcher m({});
    CHECK(!m.append("abc"));
    CHECK(m.take_ready() == "abc");
    CHECK(m.take_all().empty());
}

TEST_CASE("text appended unchecked (before min_tokens) never matches later", "[stop]") {
    stop_matcher m({"ab"});
    CHECK_FALSE(m.append("xab", false)); // a stop string before min_tokens is output
    CHECK_FALSE(m.append("c"));          // and is not found once checking starts
    CHECK(m.output() == "xabc");
    stop_matcher straddle({"ab"});
    CHECK_FALSE(straddle.append("xa", false));
    CHECK(straddle.append("b")); // one that ends in checked text is
    CHECK(straddle.output() == "x");
}

#include "common/prompt/utf8.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace lanes::common;

TEST_CASE("utf8_lossy keeps well-formed text and replaces each maximal ill-formed subpart",
          "[utf8]") {
    const std::string fffd = "\xef\xbf\xbd";
    REQUIRE(utf8_lossy("plain ascii") == "plain ascii");
    REQUIRE(utf8_lossy("\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80") ==
            "\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80");
    // A truncated 4-byte sequence is one subpart; the byte that breaks it starts over.
    REQUIRE(utf8_lossy("\xf0\x9f\x98"
                       "a") == fffd + "a");
    // Bytes that can never start a sequence, overlongs and surrogates: one U+FFFD per byte.
    REQUIRE(utf8_lossy("\x80\xc0\xaf") == fffd + fffd + fffd);
    REQUIRE(utf8_lossy("\xed\xa0\x80") == fffd + fffd + fffd);
    REQUIRE(utf8_lossy("\xf4\x90\x80\x80") == fffd + fffd + fffd + fffd);
    REQUIRE(utf8_lossy("\xe2\x82") == fffd);
    REQUIRE(is_valid_utf8("\xc3\xa9"));
    REQUIRE_FALSE(is_valid_utf8("\xc3"));
    REQUIRE_FALSE(is_valid_utf8("\xed\xa0\x80"));
}

TEST_CASE("utf8_complete_prefix holds back only a sequence later bytes could complete", "[utf8]") {
    const std::string emoji = "\xf0\x9f\x98\x80";
    REQUIRE(utf8_complete_prefix("") == 0);
    REQUIRE(utf8_complete_prefix("ab") == 2);
    REQUIRE(utf8_complete_prefix("a" + emoji) == 5);
    for (std::size_t cut = 1; cut < emoji.size(); ++cut) {
        REQUIRE(utf8_complete_prefix("a" + emoji.substr(0, cut)) == 1);
    }
    // Already ill-formed: nothing can complete it, so it goes out (as U+FFFD) at once.
    REQUIRE(utf8_complete_prefix("a\xe0\x80") == 3);
    REQUIRE(utf8_complete_prefix("a\x80\x80\x80") == 4);
    REQUIRE(utf8_complete_prefix("\xf5") == 1);
}

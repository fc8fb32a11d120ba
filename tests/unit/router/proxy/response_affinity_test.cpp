#include "router/proxy/response_affinity.hpp"

#include <catch2/catch.hpp>

using lanes::router::response_affinity;

TEST_CASE("response affinity remembers which replica made a response, within its capacity",
          "[responses]") {
    response_affinity map(2);
    map.remember("resp_1", "http://a");
    map.remember("resp_2", "http://b");
    CHECK(map.find("resp_1") == "http://a");
    map.remember("resp_3", "http://c"); // resp_2 is now the least recently used: forgotten
    CHECK(map.size() == 2);
    CHECK_FALSE(map.find("resp_2"));
    CHECK(map.find("resp_1") == "http://a");
    CHECK(map.find("resp_3") == "http://c");
    map.remember("resp_1", "http://z"); // learned again: the newer answer wins
    CHECK(map.find("resp_1") == "http://z");
    map.remember("", "http://a"); // no id, nothing to remember
    CHECK(map.size() == 2);
    response_affinity off(0);
    off.remember("resp_1", "http://a");
    CHECK_FALSE(off.find("resp_1"));
}

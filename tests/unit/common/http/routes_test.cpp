// Route tables: which methods a route takes (GET stands for HEAD too), the Allow value of a 405,
// paths without their query, and the lookup that tells 404 from 405.
#include "common/http/routes.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace lanes::common;
namespace bhttp = boost::beast::http;

namespace {

struct route {
    std::string path;
    unsigned methods = 0;
    int id = 0;
};

} // namespace

TEST_CASE("allows: GET takes HEAD too, other methods only their own bit", "[http]") {
    CHECK(http::allows(http::method_get, bhttp::verb::get));
    CHECK(http::allows(http::method_get, bhttp::verb::head));
    CHECK_FALSE(http::allows(http::method_get, bhttp::verb::post));
    CHECK_FALSE(http::allows(http::method_get, bhttp::verb::delete_));
    CHECK(http::allows(http::method_post, bhttp::verb::post));
    CHECK_FALSE(http::allows(http::method_post, bhttp::verb::head));
    CHECK(http::allows(http::method_delete, bhttp::verb::delete_));
    CHECK_FALSE(http::allows(http::method_delete, bhttp::verb::get));
    const unsigned all = http::method_get | http::method_post | http::method_delete;
    for (const auto v :
         {bhttp::verb::get, bhttp::verb::head, bhttp::verb::post, bhttp::verb::delete_})
        CHECK(http::allows(all, v));
    // Methods no route can take, whatever the bits.
    for (const auto v : {bhttp::verb::put, bhttp::verb::patch, bhttp::verb::options,
                         bhttp::verb::connect, bhttp::verb::trace, bhttp::verb::unknown}) {
        INFO(bhttp::to_string(v));
        CHECK_FALSE(http::allows(all | 0xf0u, v));
    }
    CHECK_FALSE(http::allows(0, bhttp::verb::get));
}

TEST_CASE("allow_value lists the methods in a fixed order", "[http]") {
    CHECK(http::allow_value(0).empty());
    CHECK(http::allow_value(http::method_get) == "GET, HEAD");
    CHECK(http::allow_value(http::method_post) == "POST");
    CHECK(http::allow_value(http::method_delete) == "DELETE");
    CHECK(http::allow_value(http::method_post | http::method_delete) == "POST, DELETE");
    CHECK(http::allow_value(http::method_delete | http::method_get) == "GET, HEAD, DELETE");
    CHECK(http::allow_value(http::method_get | http::method_post | http::method_delete) ==
          "GET, HEAD, POST, DELETE");
}

TEST_CASE("path_of cuts the query and keeps everything else", "[http]") {
    CHECK(http::path_of("/v1/models") == "/v1/models");
    CHECK(http::path_of("/v1/models?limit=1") == "/v1/models");
    CHECK(http::path_of("/a?b?c") == "/a"); // the first '?' starts the query
    CHECK(http::path_of("/?") == "/");
    CHECK(http::path_of("?x=1").empty());
    CHECK(http::path_of("").empty());
    CHECK(http::path_of("/a#frag") == "/a#frag"); // a fragment is not cut
}

TEST_CASE("match_route: unknown path, wrong method, and several routes on one path", "[http]") {
    const std::vector<route> table = {
        {"/health", http::method_get, 1},
        {"/admin/replicas", http::method_get, 2},
        {"/admin/replicas", http::method_post, 3},
        {"/admin/replicas", http::method_post | http::method_delete, 4},
        {"/v1/completions", http::method_post, 5},
    };
    SECTION("an unknown path: no route, no methods") {
        const auto m = http::match_route(table, "/nothing", bhttp::verb::get);
        CHECK(m.route == nullptr);
        CHECK(m.path_methods == 0);
        // Paths match whole: no prefix, no query.
        CHECK(http::match_route(table, "/health/", bhttp::verb::get).path_methods == 0);
        CHECK(http::match_route(table, "/health?x", bhttp::verb::get).path_methods == 0);
        CHECK(http::match_route(table, "/HEALTH", bhttp::verb::get).path_methods == 0);
    }
    SECTION("a known path asked with a method it does not take: the methods for Allow") {
        const auto m = http::match_route(table, "/v1/completions", bhttp::verb::get);
        CHECK(m.route == nullptr);
        CHECK(m.path_methods == http::method_post);
        CHECK(http::allow_value(m.path_methods) == "POST");
        const auto put = http::match_route(table, "/admin/replicas", bhttp::verb::put);
        CHECK(put.route == nullptr);
        CHECK(http::allow_value(put.path_methods) == "GET, HEAD, POST, DELETE");
    }
    SECTION("the first route that takes the method wins; the methods are every route's") {
        const auto get = http::match_route(table, "/admin/replicas", bhttp::verb::get);
        REQUIRE(get.route != nullptr);
        CHECK(get.route->id == 2);
        CHECK(get.path_methods == (http::method_get | http::method_post | http::method_delete));
        const auto post = http::match_route(table, "/admin/replicas", bhttp::verb::post);
        REQUIRE(post.route != nullptr);
        CHECK(post.route->id == 3); // not 4, which takes POST too
        const auto del = http::match_route(table, "/admin/replicas", bhttp::verb::delete_);
        REQUIRE(del.route != nullptr);
        CHECK(del.route->id == 4);
        const auto head = http::match_route(table, "/health", bhttp::verb::head);
        REQUIRE(head.route != nullptr);
        CHECK(head.route->id == 1);
        CHECK(head.route == &table[0]); // a pointer into the table itself
    }
    SECTION("an empty table knows no path") {
        const std::vector<route> none;
        const auto m = http::match_route(none, "/health", bhttp::verb::get);
        CHECK(m.route == nullptr);
        CHECK(m.path_methods == 0);
    }
}

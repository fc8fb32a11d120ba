#include "common/openai/error.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

using namespace lanes::common;
using namespace lanes::common::openai;
using nlohmann::json;

TEST_CASE("error types follow the status", "[openai]") {
    using lanes::common::openai::error_type;
    CHECK(error_type(400) == "BadRequestError");
    CHECK(error_type(404) == "NotFoundError");
    CHECK(error_type(413) == "RequestEntityTooLargeError");
    CHECK(error_type(500) == "InternalServerError");
    CHECK(error_type(503) == "ServiceUnavailableError");
    CHECK(error_type(599) == "InternalServerError");
}

TEST_CASE("error_json shape", "[openai]") {
    auto j = json::parse(error_json(api_error::bad_request("bad n", "n")));
    CHECK(j["error"]["message"] == "bad n");
    CHECK(j["error"]["type"] == "BadRequestError");
    CHECK(j["error"]["param"] == "n");
    CHECK(j["error"]["code"] == 400);
    auto nf = json::parse(error_json(api_error::not_found("no model")));
    CHECK(nf["error"]["param"].is_null());
    CHECK(nf["error"]["code"] == 404);
    CHECK(nf["error"]["type"] == "NotFoundError");
}

TEST_CASE("error_response and error_page carry the error under its status", "[openai]") {
    http::request req;
    req.start(http::beast_http::verb::get, "GET", "/x", 11);
    const auto res = error_response(req, api_error::of(429, "slow down"));
    CHECK(res.result_int() == 429);
    CHECK(res[http::beast_http::field::content_type] == "application/json");
    const auto j = json::parse(res.body());
    CHECK(j["error"]["message"] == "slow down");
    CHECK(j["error"]["type"] == "RateLimitError");
    CHECK(j["error"]["code"] == 429);
    const auto page = error_page(413, "too big");
    CHECK(page.content_type == "application/json");
    CHECK(json::parse(page.body)["error"]["type"] == "RequestEntityTooLargeError");
    CHECK(json::parse(page.body)["error"]["message"] == "too big");
}

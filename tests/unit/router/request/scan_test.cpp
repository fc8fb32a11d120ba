// The one-pass scanner against the on-demand parser it stands in for (differential tests).
#include "router/request/scan.hpp"

#include <catch2/catch.hpp>

#include <random>

using namespace lanes;

namespace {

void check_same(const router::request_view& a, const router::request_view& b) {
    CHECK(a.prompt() == b.prompt());
    CHECK(a.prompt_token_ids == b.prompt_token_ids);
    CHECK(a.model == b.model);
    CHECK(a.user == b.user);
    CHECK(a.stream == b.stream);
}

} // namespace

TEST_CASE("the one-pass scanner reads what the on-demand parser reads", "[request_view]") {
    const std::vector<std::string> bodies = {
        R"({"model":"m","prompt":"Hello \"there\"\n\t\/\\","stream":true})",
        R"( { "prompt" : "p" , "stream" : false , "user" : null , "model" : null } )",
        R"({"prompt":"a","max_tokens":16,"temperature":0.5,"stop":["x","y"],"n":1})",
        R"({"prompt":"a","logit_bias":{"1":-1.5e3,"2":0},"echo":false,"suffix":null})",
        R"({"prompt":"","stream":true,"stream_options":{"include_usage":true}})",
        "{\n\t\"prompt\":\"x\"\r\n}\n",
    };
    for (const auto& body : bodies) {
        INFO(body);
        const auto fast = router::scan_completion_request(body);
        const auto slow = router::read_request_on_demand(router::body_kind::completions, body).view;
        REQUIRE(fast);
        REQUIRE(slow);
        check_same(*fast, *slow);
    }
    const std::string body = R"({"prompt":"plain, borrowed"})";
    const auto fast = router::scan_completion_request(body);
    REQUIRE(fast);
    REQUIRE(fast->borrowed);
    CHECK(fast->borrowed->data() == body.data() + 11);
}

TEST_CASE("the one-pass scanner declines what it does not handle", "[request_view]") {
    const std::vector<std::string> bodies = {
        "",
        "{",
        "{}",
        "[]",
        R"({"model":"m"})",
        R"({"prompt":["a"]})",
        R"({"prompt":[1,2]})",
        R"({"prompt":"caf\u00e9"})",
        "{\"prompt\":\"caf\xc3\xa9\"}", // \u and UTF-8: on demand
        R"({"prompt":"a",})",
        R"({"prompt":"a"} x)",
        R"({"prompt":"a" "b"})",
        R"({"prompt":"a","n":01})",
        R"({"prompt":"a","n":-})",
        R"({"prompt":"a","n":1.})",
        R"({"prompt":"a","n":1e})",
        R"({"prompt":"a","x":tru})",
        R"({"prompt":"a","x":[1,]})",
        R"({"prompt":"a","x":{"k" 1}})",
        R"({"prompt":"a\q"})",
        "{\"prompt\":\"a\tb\"}",
        R"({"prompt":"a","stream":"yes"})",
        R"({"prompt":"a","model":7})",
        R"({"pro\u006dpt":"a"})",
        R"({"prompt":"first","prompt":"second"})",   // a field given twice: the on-demand reader
        R"({"prompt":"a","model":"x","model":"y"})", // names it in a 400
        R"({"prompt":"a","x":)" + std::string(40, '[') + std::string(40, ']') + "}",
    };
    for (const auto& body : bodies) {
        INFO(body);
        CHECK(!router::scan_completion_request(body));
    }
}

TEST_CASE("the one-pass scanner accepts nothing the on-demand parser reads differently",
          "[request_view]") {
    // Random damage to valid bodies: whatever the scanner still accepts, the on-demand parser
    // must accept too, with the same fields.
    const std::vector<std::string> seeds = {
        R"({"model":"m","prompt":"Hello \"x\"\n","stream":true,"max_tokens":5})",
        R"({"prompt":"p","logit_bias":{"1":-1.5e3},"stop":["a",null,true],"user":"u"})",
    };
    std::mt19937 rng(7);
    const std::string alphabet = "{}[]\":,\\ \n0123456789-+.eEtrufalsn\"pmx";
    int accepted = 0;
    for (int round = 0; round < 20000; ++round) {
        std::string body = seeds[round % seeds.size()];
        const int edits = 1 + static_cast<int>(rng() % 3);
        for (int e = 0; e < edits && !body.empty(); ++e) {
            const std::size_t at = rng() % body.size();
            const char c = alphabet[rng() % alphabet.size()];
            switch (rng() % 3) {
            case 0:
                body[at] = c;
                break;
            case 1:
                body.insert(body.begin() + static_cast<std::ptrdiff_t>(at), c);
                break;
            default:
                body.erase(at, 1);
                break;
            }
        }
        const auto fast = router::scan_completion_request(body);
        if (!fast)
            continue;
        ++accepted;
        INFO(body);
        const auto slow = router::read_request_on_demand(router::body_kind::completions, body).view;
        REQUIRE(slow);
        check_same(*fast, *slow);
    }
    CHECK(accepted > 100); // the damage left enough bodies valid to compare
}

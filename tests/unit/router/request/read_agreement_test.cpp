// The router's readers (the completions scanner and the on-demand reader) and the replica's parser
// must give a body one meaning: the same refusal, naming the same field, for a read field given
// twice or spelled with escapes, and no such refusal otherwise.
#include "common/openai/request.hpp"
#include "router/request/request_view.hpp"

#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

using namespace lanes;

namespace {

// The field an ambiguity refusal names ("" when there is none).
std::string ambiguity(const std::optional<common::openai::api_error>& e) {
    if (!e)
        return "";
    const bool about_names = e->message.find("more than once") != std::string::npos ||
                             e->message.find("with escapes") != std::string::npos;
    return about_names ? e->param.value_or("?") : "";
}

// A name, sometimes with one of its letters written as \u00XX.
std::string name(std::string_view plain, std::mt19937& rng) {
    std::string out(plain);
    if (rng() % 6 == 0 && !out.empty()) {
        const std::size_t at = rng() % out.size();
        char hex[8];
        std::snprintf(hex, sizeof hex, "\\u%04x", static_cast<unsigned char>(out[at]));
        out = out.substr(0, at) + hex + out.substr(at + 1);
    }
    return "\"" + out + "\"";
}

std::string message(std::mt19937& rng) {
    std::vector<std::string> fields;
    const char* roles[] = {"user", "system", "assistant"};
    fields.push_back(name("role", rng) + ":\"" + roles[rng() % 3] + "\"");
    fields.push_back(name("content", rng) +
                     (rng() % 2 ? ":\"hello there\"" : ":[{\"type\":\"text\",\"text\":\"hi\"}]"));
    if (rng() % 8 == 0)
        fields.push_back(fields[rng() % fields.size()]); // a repeat
    if (rng() % 4 == 0)
        fields.push_back(name("name", rng) + ":\"n\"");
    std::shuffle(fields.begin(), fields.end(), rng);
    std::string out = "{";
    for (std::size_t i = 0; i < fields.size(); ++i)
        out += (i ? "," : "") + fields[i];
    return out + "}";
}

std::string body(bool chat, std::mt19937& rng) {
    std::vector<std::string> fields;
    fields.push_back(name("model", rng) + ":\"m\"");
    if (chat) {
        std::string messages = "[";
        const int n = 1 + static_cast<int>(rng() % 3);
        for (int i = 0; i < n; ++i)
            messages += (i ? "," : "") + message(rng);
        fields.push_back(name("messages", rng) + ":" + messages + "]");
        if (rng() % 3 == 0)
            fields.push_back(name("tools", rng) + ":[{\"type\":\"function\"}]");
    } else {
        fields.push_back(name("prompt", rng) + (rng() % 3 ? ":\"once upon a time\"" : ":[1,2,3]"));
    }
    if (rng() % 2)
        fields.push_back(name("stream", rng) + (rng() % 2 ? ":true" : ":false"));
    if (rng() % 3 == 0)
        fields.push_back(name("user", rng) + ":\"u\"");
    if (rng() % 2)
        fields.push_back(name("temperature", rng) + ":0.5");
    if (rng() % 5 == 0)
        fields.push_back(fields[rng() % fields.size()]); // a repeat of any of them
    std::shuffle(fields.begin(), fields.end(), rng);
    std::string out = "{";
    for (std::size_t i = 0; i < fields.size(); ++i)
        out += (i ? "," : "") + fields[i];
    return out + "}";
}

} // namespace

TEST_CASE("router readers and replica parser refuse the same ambiguous bodies, by the same field",
          "[request_view]") {
    std::mt19937 rng(20261201);
    int refused = 0;
    for (int i = 0; i < 20000; ++i) {
        const bool chat = i % 2 == 1;
        const std::string text = body(chat, rng);
        INFO(text);
        const auto router_read = router::read_request(
            chat ? router::body_kind::chat : router::body_kind::completions, text);
        const auto replica_read = common::openai::parse_generation_request(
            chat ? common::openai::endpoint::chat_completions
                 : common::openai::endpoint::completions,
            text);
        const std::string a = ambiguity(router_read.error);
        const std::string b = ambiguity(replica_read.error);
        CHECK(a == b);
        refused += !a.empty();
        // A body neither refuses for its names reads as the same model, stream and user.
        if (a.empty() && router_read.view && replica_read.request) {
            CHECK(router_read.view->model == replica_read.request->model);
            CHECK(router_read.view->stream == replica_read.request->stream);
            CHECK(router_read.view->user == replica_read.request->user);
        }
    }
    // The generator makes both kinds often enough for the comparison to mean something.
    CHECK(refused > 3000);
    CHECK(refused < 17000);
}

// What the router asks an engine's /tokenize for each kind of request, how it reads the answer,
// and that the LRU keeps what was fetched (against a scripted /tokenize on loopback).
#include "router/request/remote_tokenizer.hpp"

#include <boost/asio.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cctype>
#include <memory>
#include <thread>

using namespace lanes;
using json = nlohmann::json;
namespace asio = boost::asio;

namespace {

std::string same_model(const std::optional<std::string>& named) {
    return named.value_or("default-model");
}

} // namespace

TEST_CASE("tokenize query: completions, chat with tools, and what is not tokenized", "[tokenize]") {
    const auto c = router::make_tokenize_query(R"({"model":"m","prompt":"hello","max_tokens":3})",
                                               false, same_model);
    REQUIRE(c);
    CHECK(json::parse(c->body) == json::parse(R"({"model":"m","prompt":"hello"})"));

    const auto chat = router::make_tokenize_query(
        R"({"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function"}],"stream":true})",
        true, same_model);
    REQUIRE(chat);
    const json t = json::parse(chat->body);
    CHECK(t["model"] == "default-model"); // the model the router resolves for it
    CHECK(t["messages"][0]["content"] == "hi");
    CHECK(t["tools"].size() == 1);
    CHECK(t["add_generation_prompt"] == true);
    CHECK_FALSE(t.contains("stream"));

    // Another prompt or model is another key; the same one the same key.
    const auto c2 =
        router::make_tokenize_query(R"({"model":"m","prompt":"hello!"})", false, same_model);
    const auto c3 =
        router::make_tokenize_query(R"({"prompt":"hello","model":"m","n":1})", false, same_model);
    REQUIRE(c2);
    REQUIRE(c3);
    CHECK(c2->key_lo != c->key_lo);
    CHECK((c3->key_lo == c->key_lo && c3->key_hi == c->key_hi));

    CHECK_FALSE(router::make_tokenize_query(R"({"prompt":[1,2,3]})", false, same_model));
    CHECK_FALSE(router::make_tokenize_query(R"({"prompt":["a","b"]})", false, same_model));
    CHECK_FALSE(router::make_tokenize_query(R"({"messages":[]})", true, same_model));
    CHECK_FALSE(router::make_tokenize_query("not json", false, same_model));

    // add_generation_prompt is the client's when it is a boolean, else the default (true).
    const auto no_prompt = router::make_tokenize_query(
        R"({"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":false})", true,
        same_model);
    REQUIRE(no_prompt);
    CHECK(json::parse(no_prompt->body)["add_generation_prompt"] == false);
    const auto odd = router::make_tokenize_query(
        R"({"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":"no"})", true,
        same_model);
    REQUIRE(odd);
    CHECK(json::parse(odd->body)["add_generation_prompt"] == true);
}

TEST_CASE("tokenize query: a body past the DOM's bounds is not tokenized, nor parsed",
          "[tokenize]") {
    // 200,000 levels of '[' in a message would overflow the stack of a recursive copy or dump.
    const std::string deep =
        R"({"messages":)" + std::string(200'000, '[') + std::string(200'000, ']') + "}";
    CHECK_FALSE(router::make_tokenize_query(deep, true, same_model, {64, 1'000'000}));
    // Within the depth, over the values: a message list of 1,000 empty objects.
    std::string many = R"({"messages":[)";
    for (int i = 0; i < 1000; ++i)
        many += i ? ",{}" : "{}";
    many += "]}";
    CHECK_FALSE(router::make_tokenize_query(many, true, same_model, {64, 500}));
    CHECK(router::make_tokenize_query(many, true, same_model, {64, 5'000}));
    // The bounds count nesting exactly: these 5 levels pass a bound of 5, not of 4.
    const std::string five = R"({"messages":[{"role":"user","content":[{"type":"text"}]}]})";
    CHECK(router::make_tokenize_query(five, true, same_model, {5, 100}));
    CHECK_FALSE(router::make_tokenize_query(five, true, same_model, {4, 100}));
}

TEST_CASE("tokenize answer: ids read, anything else refused", "[tokenize]") {
    const auto ids =
        router::read_tokenize_answer(R"({"count":3,"max_model_len":8,"tokens":[1,2,70000]})", 10);
    REQUIRE(ids);
    CHECK(*ids == std::vector<std::uint32_t>{1, 2, 70000});
    CHECK_FALSE(router::read_tokenize_answer(R"({"tokens":[1,-2]})", 10));
    CHECK_FALSE(router::read_tokenize_answer(R"({"tokens":[1,4294967296]})", 10));
    CHECK_FALSE(router::read_tokenize_answer(R"({"tokens":"1 2"})", 10));
    CHECK_FALSE(router::read_tokenize_answer(R"({"tokens":[1,2,3]})", 2));
    CHECK_FALSE(router::read_tokenize_answer(R"({"error":{"message":"x"}})", 10));
    // An answer that nests (no /tokenize answer does) is not parsed into a DOM.
    CHECK_FALSE(router::read_tokenize_answer(
        R"({"tokens":[1],"x":)" + std::string(100'000, '[') + std::string(100'000, ']') + "}", 10));
}

TEST_CASE("remote tokenizer: fetched once per prompt, kept in a bounded LRU", "[tokenize]") {
    // A /tokenize that answers each prompt with its length, on keep-alive connections.
    asio::io_context io;
    asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
    const unsigned short port = acceptor.local_endpoint().port();
    std::atomic<int> asked{0}, connections{0};
    // One connection is all it takes (a second would never be answered: the fetch would fail).
    std::thread server([&] {
        for (int c = 0; c < 1; ++c) {
            asio::ip::tcp::socket s(io);
            boost::system::error_code ec;
            acceptor.accept(s, ec);
            if (ec)
                return;
            ++connections;
            std::string buf;
            for (;;) {
                char chunk[4096];
                const auto n = s.read_some(asio::buffer(chunk), ec);
                if (ec)
                    break;
                buf.append(chunk, n);
                const auto head_end = buf.find("\r\n\r\n");
                if (head_end == std::string::npos)
                    continue;
                std::string head = buf.substr(0, head_end);
                for (auto& ch : head)
                    ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
                const auto cl = head.find("content-length: ");
                const std::size_t len =
                    cl == std::string::npos ? 0 : std::stoul(head.substr(cl + 16));
                if (buf.size() < head_end + 4 + len)
                    continue;
                const json q = json::parse(buf.substr(head_end + 4, len));
                buf.erase(0, head_end + 4 + len);
                ++asked;
                const std::string p = q["prompt"];
                const std::string body =
                    json{{"count", p.size()}, {"tokens", std::vector<int>(p.size(), 7)}}.dump();
                const std::string res = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                        "Content-Length: " +
                                        std::to_string(body.size()) + "\r\n\r\n" + body;
                asio::write(s, asio::buffer(res), ec);
            }
        }
    });

    router::tokenizer_settings st;
    st.endpoint = "http://127.0.0.1:" + std::to_string(port);
    st.cache_entries = 2;
    auto owner = std::make_unique<router::remote_tokenizer>(st);
    router::remote_tokenizer& tok = *owner;
    const auto query = [](const std::string& prompt) {
        return *router::make_tokenize_query(json{{"prompt", prompt}}.dump(), false, same_model);
    };
    // One io_context for every fetch, as the router's I/O threads: the kept connection is its.
    asio::io_context client;
    const auto ids_of = [&](const std::string& prompt) {
        const auto q = query(prompt);
        if (auto hit = tok.cached(q))
            return hit->size();
        std::optional<std::vector<std::uint32_t>> got;
        client.restart();
        asio::co_spawn(
            client,
            [&]() -> asio::awaitable<void> { got = co_await tok.fetch(client.get_executor(), q); },
            asio::detached);
        client.run();
        REQUIRE(got);
        return got->size();
    };
    CHECK(ids_of("abc") == 3);
    CHECK(ids_of("abcde") == 5);
    CHECK(ids_of("abc") == 3); // cached
    CHECK(asked.load() == 2);
    CHECK(ids_of("xy") == 2); // evicts the least recent ("abcde")
    CHECK(ids_of("abc") == 3);
    CHECK(asked.load() == 3);
    CHECK(ids_of("abcde") == 5);
    CHECK(asked.load() == 4);
    CHECK(connections.load() == 1); // one kept-alive connection for every fetch
    const auto n = tok.totals();
    CHECK(n.hits == 2);
    CHECK(n.misses == 4);
    CHECK(n.errors == 0);
    owner.reset(); // closes the kept connection: the server's read ends
    server.join();
}

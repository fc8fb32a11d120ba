// The replica's HTTP surface as a function of the request: the route table, whole and streamed
// answers from a real engine on the sim backend (its tokens are synthetic_token(seed, position), so
// the text is known), the refusals worded as vLLM's, and a client that leaves mid-stream.
#include "replica/api.hpp"

#include "common/http/sse.hpp"
#include "common/metrics/registry.hpp"
#include "replica/engine/sampler.hpp"
#include "tests/unit/common/http/fake_writer.hpp"

#include <boost/asio.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <thread>

using namespace lanes;
using namespace lanes::replica;
using namespace std::chrono_literals;
using lanes::common::http::test::fake_writer;
namespace asio = boost::asio;
namespace http = lanes::common::http;
using verb = boost::beast::http::verb;
using nlohmann::json;

namespace {

// A replica without sockets: a real engine on the sim backend, 256 blocks of 16 tokens.
struct fake_replica {
    // Outlives the engine: the engine thread posts each event to the executor of its stream,
    // possibly just after the answer went out (a context of each call's own could be gone).
    asio::io_context io;
    replica_config cfg;
    replica_metrics metrics;
    engine eng;
    api front;

    static replica_config config(std::int64_t max_model_len, double speedup) {
        replica_config c;
        c.backend = "sim";
        c.kv_blocks = 256;
        c.max_model_len = max_model_len;
        c.sim.speedup = speedup;
        return c;
    }
    explicit fake_replica(std::int64_t max_model_len = 8192, double speedup = 1000)
        : cfg(config(max_model_len, speedup))
        , metrics(cfg.model_name, cfg.block_size, cfg.kv_blocks)
        , eng(cfg, metrics, build_backend(cfg, backend_kind::sim))
        , front(cfg, eng, metrics) {
        eng.start();
    }
    ~fake_replica() { eng.stop(); }

    // Runs the handler for one request to its end (20 s at most).
    void call_into(fake_writer& out, verb v, std::string_view target, std::string body = {}) {
        http::request req;
        const auto name = boost::beast::http::to_string(v);
        req.start(v, std::string_view(name.data(), name.size()), target, 11);
        req.add("Content-Type", "application/json");
        req.body() = std::move(body);
        bool finished = false;
        asio::steady_timer deadline(io, 20s);
        io.restart();
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                co_await front.handle(req, out);
                finished = true;
                deadline.cancel();
            },
            asio::detached);
        deadline.async_wait([this](boost::system::error_code ec) {
            if (!ec)
                io.stop();
        });
        io.run();
        REQUIRE(finished);
    }
    fake_writer call(verb v, std::string_view target, std::string body = {}) {
        fake_writer out;
        call_into(out, v, target, std::move(body));
        return out;
    }
    fake_writer post(std::string_view target, const json& body) {
        return call(verb::post, target, body.dump());
    }

    // Waits (10 s at most) until the engine has nothing in flight and `done` holds.
    template <class F>
    bool settle(F done) {
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (std::chrono::steady_clock::now() < deadline) {
            const auto s = eng.load();
            if (s.running == 0 && s.waiting == 0 && done(s))
                return true;
            std::this_thread::sleep_for(1ms);
        }
        return false;
    }
};

// The sim backend's text for a request of `seed` whose prompt is `prompt_tokens` long.
std::string sim_text(std::uint64_t seed, std::size_t prompt_tokens, std::size_t n) {
    std::string s;
    for (std::size_t pos = prompt_tokens; pos < prompt_tokens + n; ++pos)
        s += static_cast<char>(synthetic_token(seed, pos));
    return s;
}

json error_of(const fake_writer& out) {
    return json::parse(out.body)["error"];
}

std::vector<json> sse_events(std::string_view bytes, bool& done) {
    http::sse_parser p;
    p.feed(bytes);
    std::vector<json> events;
    done = false;
    while (auto e = p.next()) {
        if (*e == "[DONE]")
            done = true;
        else
            events.push_back(json::parse(*e));
    }
    return events;
}

} // namespace

TEST_CASE("replica api: health, metrics, load and models", "[replica_api]") {
    fake_replica r;
    const auto health = r.call(verb::get, "/health");
    CHECK(health.status == 200);
    CHECK(health.content_type == "text/plain");
    CHECK(health.body.empty());
    CHECK(r.call(verb::head, "/health").status == 200); // GET routes take HEAD
    const auto metrics = r.call(verb::get, "/metrics");
    CHECK(metrics.status == 200);
    CHECK(metrics.content_type == common::metrics::registry::content_type);
    CHECK(metrics.body.find("vllm:num_requests_running{engine=\"0\",model_name=\"lanes-tiny\"}") !=
          std::string::npos);
    const auto load = r.call(verb::get, "/load?verbose=1"); // the query is not the path
    CHECK(load.status == 200);
    CHECK(load.content_type == "application/json");
    CHECK(json::parse(load.body) == json{{"kv_usage", 0.0},
                                         {"running", 0},
                                         {"waiting", 0},
                                         {"prefix_cache_hits", 0},
                                         {"prefix_cache_queries", 0},
                                         {"num_gpu_blocks", 256},
                                         {"block_size", 16},
                                         {"server_load", 0}});
    const auto before = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    const auto models = json::parse(r.call(verb::get, "/v1/models").body);
    CHECK(models["object"] == "list");
    REQUIRE(models["data"].size() == 1);
    const auto& m = models["data"][0];
    CHECK(m["id"] == "lanes-tiny");
    CHECK(m["object"] == "model");
    CHECK(m["owned_by"] == "lanes");
    CHECK(m["root"] == "lanes-tiny");
    CHECK(m["parent"].is_null());
    CHECK(m["max_model_len"] == 4096); // 256 blocks x 16 tokens, under --max-model-len 8192
    CHECK(m["created"].get<std::int64_t>() <= before); // when the api was made
    CHECK(m["created"].get<std::int64_t>() > before - 60);
}

TEST_CASE("replica api: 404 for an unknown path, 405 with Allow for a wrong method",
          "[replica_api]") {
    fake_replica r;
    const auto missing = r.call(verb::get, "/v2/nothing?x=1");
    CHECK(missing.status == 404);
    CHECK(error_of(missing)["message"] == "no route for /v2/nothing");
    CHECK(error_of(missing)["type"] == "NotFoundError");
    const auto get_completions = r.call(verb::get, "/v1/completions");
    CHECK(get_completions.status == 405);
    CHECK(get_completions.header("Allow") == "POST");
    CHECK(error_of(get_completions)["message"] == "/v1/completions takes POST");
    CHECK(error_of(get_completions)["type"] == "MethodNotAllowedError");
    CHECK(r.call(verb::get, "/v1/chat/completions").header("Allow") == "POST");
    const auto post_load = r.call(verb::post, "/load");
    CHECK(post_load.status == 405);
    CHECK(post_load.header("Allow") == "GET, HEAD");
    CHECK(r.call(verb::delete_, "/v1/models").status == 405);
}

TEST_CASE("replica api: a whole completion, its text, usage and finish reason", "[replica_api]") {
    fake_replica r;
    const auto out =
        r.post("/v1/completions",
               {{"model", "lanes-tiny"}, {"prompt", "hello"}, {"max_tokens", 8}, {"seed", 42}});
    REQUIRE(out.status == 200);
    CHECK(out.sends == 1);
    CHECK_FALSE(out.streamed);
    CHECK(out.content_type == "application/json");
    const auto j = json::parse(out.body);
    CHECK(j["id"].get<std::string>().starts_with("cmpl-"));
    CHECK(j["id"].get<std::string>().size() == 5 + 32);
    CHECK(j["object"] == "text_completion");
    CHECK(j["model"] == "lanes-tiny");
    REQUIRE(j["choices"].size() == 1);
    const auto& c = j["choices"][0];
    CHECK(c["text"] == sim_text(42, 6, 8)); // BOS + 5 bytes, then 8 tokens of seed 42
    CHECK(c["finish_reason"] == "length");
    CHECK(c["stop_reason"].is_null());
    CHECK(j["usage"] == json{{"prompt_tokens", 6},
                             {"total_tokens", 14},
                             {"completion_tokens", 8},
                             {"prompt_tokens_details", {{"cached_tokens", 0}}}});
    // No max_tokens: OpenAI's default of 16; no model: the replica's own.
    const auto dflt = json::parse(r.post("/v1/completions", {{"prompt", "hello"}}).body);
    CHECK(dflt["usage"]["completion_tokens"] == 16);
    CHECK(dflt["model"] == "lanes-tiny");
    // No seed: each request gets a fresh one, so two alike requests sample apart.
    const json unseeded = {{"prompt", "hello"}, {"max_tokens", 12}};
    CHECK(json::parse(r.post("/v1/completions", unseeded).body)["choices"][0]["text"] !=
          json::parse(r.post("/v1/completions", unseeded).body)["choices"][0]["text"]);
}

TEST_CASE("replica api: a repeated prompt hits the prefix cache, and /load counts it",
          "[replica_api]") {
    fake_replica r;
    const json body = {{"prompt", std::string(40, 'p')}, {"max_tokens", 4}, {"seed", 1}};
    const auto first = json::parse(r.post("/v1/completions", body).body);
    const auto second = json::parse(r.post("/v1/completions", body).body);
    // 41 tokens: two full blocks, both cached by the first request (the last token is always
    // computed). The same seed gives the same text.
    CHECK(first["usage"]["prompt_tokens_details"]["cached_tokens"] == 0);
    CHECK(second["usage"]["prompt_tokens_details"]["cached_tokens"] == 32);
    CHECK(second["choices"][0]["text"] == first["choices"][0]["text"]);
    REQUIRE(r.settle([](const load_snapshot& s) { return s.prefix_cache_queries == 82; }));
    const auto load = json::parse(r.call(verb::get, "/load").body);
    CHECK(load["prefix_cache_queries"] == 82);
    CHECK(load["prefix_cache_hits"] == 32);
    CHECK(load["server_load"] == 0);
}

TEST_CASE("replica api: a streamed chat, role with the first output, usage, then [DONE]",
          "[replica_api]") {
    fake_replica r;
    const auto out =
        r.post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "hi"}}}},
                                        {"max_tokens", 5},
                                        {"seed", 3},
                                        {"stream", true},
                                        {"stream_options", {{"include_usage", true}}}});
    REQUIRE(out.status == 200);
    CHECK(out.streamed);
    CHECK(out.ended);
    CHECK(out.content_type == "text/event-stream");
    const std::string id = out.header("x-request-id");
    CHECK(id.starts_with("chatcmpl-"));
    // Four text events, then the tail (last text with its finish reason, usage, [DONE]).
    REQUIRE(out.writes.size() == 5);
    bool done = false;
    const auto first = sse_events(out.writes[0], done);
    REQUIRE(first.size() == 2); // the role chunk rides with the first text, not before it
    CHECK(first[0]["choices"][0]["delta"] == json{{"role", "assistant"}, {"content", ""}});
    CHECK(out.body.ends_with("data: [DONE]\n\n"));
    const auto events = sse_events(out.body, done);
    CHECK(done);
    REQUIRE(events.size() == 7); // role, 5 deltas, usage
    std::string text;
    for (std::size_t i = 1; i <= 5; ++i) {
        CHECK(events[i]["id"] == id);
        CHECK(events[i]["object"] == "chat.completion.chunk");
        text += events[i]["choices"][0]["delta"]["content"].get<std::string>();
        CHECK(events[i]["choices"][0]["finish_reason"] == (i == 5 ? json("length") : json()));
    }
    // "<|user|>\nhi\n<|assistant|>\n" is 26 bytes: 27 tokens with BOS.
    CHECK(text == sim_text(3, 27, 5));
    CHECK(events[5]["choices"][0]["stop_reason"].is_null());
    CHECK(events[6]["choices"].empty());
    CHECK(events[6]["usage"]["prompt_tokens"] == 27);
    CHECK(events[6]["usage"]["completion_tokens"] == 5);
    CHECK(events[6]["usage"]["total_tokens"] == 32);
}

TEST_CASE("replica api: a streamed completion has no role chunk, and usage only when asked",
          "[replica_api]") {
    fake_replica r;
    const auto out = r.post("/v1/completions",
                            {{"prompt", "abc"}, {"max_tokens", 3}, {"seed", 9}, {"stream", true}});
    REQUIRE(out.status == 200);
    REQUIRE(out.writes.size() == 3);
    bool done = false;
    const auto events = sse_events(out.body, done);
    CHECK(done);
    REQUIRE(events.size() == 3);
    std::string text;
    for (const auto& e : events) {
        CHECK(e["object"] == "text_completion");
        CHECK(e["usage"].is_null());
        text += e["choices"][0]["text"].get<std::string>();
    }
    CHECK(text == sim_text(9, 4, 3));
    CHECK(events[2]["choices"][0]["finish_reason"] == "length");
}

TEST_CASE("replica api: refusals as vLLM words them", "[replica_api]") {
    fake_replica r;
    const auto wrong_model = r.post("/v1/completions", {{"model", "x"}, {"prompt", "hi"}});
    CHECK(wrong_model.status == 404);
    CHECK(error_of(wrong_model)["message"] == "The model `x` does not exist.");
    CHECK(error_of(wrong_model)["type"] == "NotFoundError");
    CHECK(error_of(wrong_model)["param"] == "model");
    CHECK(error_of(wrong_model)["code"] == 404);
    const auto two = r.post("/v1/completions", {{"prompt", "hi"}, {"n", 2}});
    CHECK(two.status == 400);
    CHECK(error_of(two)["message"] == "only n=1 is supported");
    CHECK(error_of(two)["param"] == "n");
    const auto echo = r.post("/v1/completions", {{"prompt", "hi"}, {"echo", true}});
    CHECK(echo.status == 400);
    CHECK(error_of(echo)["message"] == "'echo' is not supported by lanes replicas");
    CHECK(error_of(echo)["param"] == "echo");
    // The sim backend has no logits to give log-probabilities of.
    const auto logprobs = r.post("/v1/completions", {{"prompt", "hi"}, {"logprobs", 1}});
    CHECK(logprobs.status == 400);
    CHECK(error_of(logprobs)["message"] ==
          "'logprobs' needs the model's logits, and the sim backend computes none");
    CHECK(error_of(logprobs)["param"] == "logprobs");
    const auto chat_logprobs =
        r.post("/v1/chat/completions",
               {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"logprobs", true}});
    CHECK(chat_logprobs.status == 400);
    CHECK(error_of(chat_logprobs)["param"] == "logprobs");
    // Past --max-logprobs' default of 20, as vLLM's processor words it (-1: the vocabulary).
    const auto many = r.post("/v1/completions", {{"prompt", "hi"}, {"logprobs", 21}});
    CHECK(many.status == 400);
    CHECK(error_of(many)["message"] ==
          "Requested sample logprobs of 21, which is greater than max allowed: 20");
    const auto all = r.post("/v1/completions", {{"prompt", "hi"}, {"logprobs", -1}});
    CHECK(error_of(all)["message"] ==
          "Requested sample logprobs of 258, which is greater than max allowed: 20");
    const auto min_over =
        r.post("/v1/completions", {{"prompt", "hi"}, {"max_tokens", 4}, {"min_tokens", 5}});
    CHECK(min_over.status == 400);
    CHECK(error_of(min_over)["message"] ==
          "min_tokens must be less than or equal to max_tokens=4, got 5.");
    CHECK(error_of(min_over)["param"] == "min_tokens");
    const auto bad_json = r.call(verb::post, "/v1/completions", "{\"prompt\": ");
    CHECK(bad_json.status == 400);
    CHECK(error_of(bad_json)["type"] == "BadRequestError");
    // Nothing refused reached the engine.
    CHECK(r.metrics.prefix_queries.value() == 0.0);
    CHECK(r.eng.load().waiting == 0);
    // The sampling fields the replica applies are taken.
    const auto sampled = r.post("/v1/completions", {{"prompt", "hi"},
                                                    {"max_tokens", 4},
                                                    {"min_tokens", 4},
                                                    {"top_k", 5},
                                                    {"min_p", 0.1},
                                                    {"repetition_penalty", 1.2},
                                                    {"presence_penalty", 0.5},
                                                    {"frequency_penalty", 0.5},
                                                    {"stop_token_ids", {1, 2}}});
    CHECK(sampled.status == 200);
}

TEST_CASE("replica api: the context length bounds the prompt and max_tokens", "[replica_api]") {
    fake_replica r(64); // --max-model-len 64
    const auto long_prompt = r.post("/v1/completions", {{"prompt", std::string(63, 'a')}});
    CHECK(long_prompt.status == 400);
    CHECK(error_of(long_prompt)["message"] ==
          "This model's maximum context length is 64 tokens. However, your request has 64 input "
          "tokens. Please reduce the length of the input messages.");
    const auto too_many = r.post("/v1/completions", {{"prompt", "hello"}, {"max_tokens", 100}});
    CHECK(too_many.status == 400);
    CHECK(error_of(too_many)["message"] ==
          "'max_tokens' or 'max_completion_tokens' is too large: 100. This model's maximum context "
          "length is 64 tokens and your request has 6 input tokens (100 > 64 - 6).");
    CHECK(error_of(too_many)["param"] == "max_tokens");
    // At the bound exactly: 6 + 58 = 64 is allowed, and so is one token after 63.
    const auto full =
        json::parse(r.post("/v1/completions", {{"prompt", "hello"}, {"max_tokens", 58}}).body);
    CHECK(full["usage"]["completion_tokens"] == 58);
    const auto last = json::parse(
        r.post("/v1/completions", {{"prompt", std::string(62, 'a')}, {"max_tokens", 1}}).body);
    CHECK(last["usage"]["completion_tokens"] == 1);
    // Chat without max_tokens gets the rest of the context: 64 - 27.
    const auto chat = json::parse(
        r.post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "hi"}}}}})
            .body);
    CHECK(chat["usage"]["completion_tokens"] == 37);
    CHECK(chat["choices"][0]["finish_reason"] == "length");
    CHECK(chat["choices"][0]["message"]["role"] == "assistant");
}

TEST_CASE("replica api: a client that leaves mid-stream ends the stream and the request",
          "[replica_api]") {
    // Ten times slower than the others: 4000 tokens would take the engine seconds, so the request
    // can only end by the client leaving.
    fake_replica r(8192, 10);
    fake_writer out;
    out.leave_after_writes = 2;
    r.call_into(out, verb::post, "/v1/completions",
                json{{"prompt", "go"}, {"max_tokens", 4000}, {"stream", true}}.dump());
    CHECK(out.status == 200);
    CHECK(out.writes.size() == 2); // the third write found the client gone
    CHECK_FALSE(out.ended);
    CHECK(out.body.find("[DONE]") == std::string::npos);
    // The engine drops it as aborted, long before its 4000 tokens.
    REQUIRE(
        r.settle([&](const load_snapshot&) { return r.metrics.success("abort").value() == 1; }));
    CHECK(r.metrics.success("length").value() == 0);
    CHECK(r.metrics.generation_tokens.value() < 4000);
    CHECK(r.eng.load().kv_usage == 0.0);
}

TEST_CASE("replica api: seed -1 is no seed, as vLLM takes it", "[replica_api]") {
    fake_replica r;
    const auto text = [&](const json& seed) {
        const auto out =
            r.post("/v1/completions", {{"prompt", "hi"}, {"max_tokens", 8}, {"seed", seed}});
        REQUIRE(out.status == 200);
        return json::parse(out.body)["choices"][0]["text"].get<std::string>();
    };
    CHECK(text(7) == text(7));
    // Fresh seeds: two requests sample apart (alike by chance once in 46^8), and neither is the
    // draw of the seed 2^64 - 1 that -1 would be as a number.
    const auto a = text(-1), b = text(-1);
    CHECK(a != b);
    CHECK(a != sim_text(~std::uint64_t{0}, 3, 8));
}

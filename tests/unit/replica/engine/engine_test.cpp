// The engine end to end in process: requests in through request_stream, tokens out.
#include "replica/engine/engine.hpp"

#include "common/kv_events/events.hpp"
#include "replica/backends/backend.hpp"

#include <boost/asio.hpp>
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>
#include <variant>

using namespace lanes;
using namespace lanes::replica;
namespace asio = boost::asio;

namespace {

struct result {
    std::string text;
    stream_event last;
};

replica_config tiny_config(std::int64_t seed = 0) {
    replica_config cfg;
    cfg.backend = "cpu";
    cfg.preset = "tiny";
    cfg.kv_blocks = 256;
    cfg.seed = seed;
    return cfg;
}

// Submits each prompt and collects its whole output.
std::vector<result> generate(engine& eng, const std::vector<engine_request>& requests) {
    asio::io_context io;
    std::vector<result> results(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
        auto stream = std::make_shared<request_stream>(io.get_executor());
        REQUIRE(eng.submit(requests[i], stream) == submit_status::accepted);
        asio::co_spawn(
            io,
            [stream, &r = results[i]]() -> asio::awaitable<void> {
                for (;;) {
                    stream_event ev = co_await stream->next();
                    r.text += ev.text;
                    if (ev.finished) {
                        r.last = ev;
                        co_return;
                    }
                }
            },
            asio::detached);
    }
    io.run();
    return results;
}

engine_request make_request(std::string prompt, std::int64_t max_tokens, double temperature = 0.0,
                            std::uint64_t seed = 1) {
    engine_request r;
    r.prompt = common::encode_prompt(prompt);
    r.sampling.max_tokens = max_tokens;
    r.sampling.temperature = temperature;
    r.sampling.seed = seed;
    r.sampling.ignore_eos = true;
    return r;
}

// The backend the config names, as the replica builds it.
std::unique_ptr<backend> backend_for(const replica_config& cfg) {
    return build_backend(cfg, *parse_backend_kind(cfg.backend));
}

// A backend that computes nothing: it records each step's batch and moves a manual clock on by
// one step's time, so the engine's timings are exact.
class stepping_backend final : public backend {
public:
    explicit stepping_backend(std::shared_ptr<engine_clock::time_point> now)
        : now_(std::move(now)) {}
    std::string_view name() const override { return "stepping"; }
    bool forward(std::span<const batch_entry> batch, std::vector<std::vector<float>>&) override {
        std::size_t tokens = 0;
        for (const auto& e : batch)
            tokens += e.tokens.size();
        step_tokens->push_back(tokens);
        *now_ += step;
        return false; // no logits: the engine picks tokens without a model
    }
    static constexpr auto step = std::chrono::milliseconds(10);
    std::shared_ptr<std::vector<std::size_t>> step_tokens =
        std::make_shared<std::vector<std::size_t>>();

private:
    std::shared_ptr<engine_clock::time_point> now_;
};

bool all_printable(const std::string& s) {
    for (unsigned char c : s)
        if (!((c >= 0x20 && c <= 0x7e) || c == '\n'))
            return false;
    return true;
}

} // namespace

TEST_CASE("cpu model: same seed gives the same tokens, another seed other tokens", "[engine]") {
    auto cfg_a = tiny_config(7);
    auto cfg_b = tiny_config(8);
    replica_metrics ma("m", 16, 256), mb("m", 16, 256), mc("m", 16, 256);
    engine a(cfg_a, ma, backend_for(cfg_a)), a2(cfg_a, mc, backend_for(cfg_a)),
        b(cfg_b, mb, backend_for(cfg_b));
    a.start();
    a2.start();
    b.start();
    const std::vector<engine_request> reqs = {make_request("The quick brown fox", 48),
                                              make_request("Hello", 48, 0.8, 5)};
    const auto ra = generate(a, reqs);
    const auto ra2 = generate(a2, reqs);
    const auto rb = generate(b, reqs);
    for (std::size_t i = 0; i < reqs.size(); ++i) {
        CHECK(ra[i].text.size() == 48);
        CHECK(ra[i].text == ra2[i].text);
        CHECK(ra[i].last.finish == finish_reason::length);
        CHECK(all_printable(ra[i].text));
        CHECK(all_printable(rb[i].text));
    }
    CHECK(ra[0].text != rb[0].text);
}

TEST_CASE("batching does not change a greedy request's output", "[engine]") {
    auto cfg = tiny_config(3);
    replica_metrics m1("m", 16, 256), m2("m", 16, 256);
    engine alone(cfg, m1, backend_for(cfg)), busy(cfg, m2, backend_for(cfg));
    alone.start();
    busy.start();
    const auto solo = generate(alone, {make_request("batch me", 32)});
    std::vector<engine_request> many = {make_request("batch me", 32)};
    for (int i = 0; i < 6; ++i)
        many.push_back(make_request(std::string(40 + 30 * i, 'a' + static_cast<char>(i)), 20));
    const auto crowd = generate(busy, many);
    CHECK(solo[0].text == crowd[0].text);
}

TEST_CASE("stop strings and max_tokens end requests with the right reason", "[engine]") {
    auto cfg = tiny_config(1);
    replica_metrics m("m", 16, 256);
    engine eng(cfg, m, backend_for(cfg));
    eng.start();
    const auto free_run = generate(eng, {make_request("abc", 64)});
    REQUIRE(free_run[0].text.size() == 64);
    // Use a substring of the free run as a stop string: the output must end right before it.
    const std::string stop = free_run[0].text.substr(10, 3);
    auto req = make_request("abc", 64);
    req.sampling.stop = {stop};
    const auto stopped = generate(eng, {req});
    CHECK(stopped[0].last.finish == finish_reason::stop);
    CHECK(stopped[0].text == free_run[0].text.substr(0, free_run[0].text.find(stop)));
}

TEST_CASE("prefix hits are counted at admission and skip computation", "[engine]") {
    auto cfg = tiny_config(2);
    replica_metrics m("m", 16, 256);
    engine eng(cfg, m, backend_for(cfg));
    eng.start();
    const std::string prompt(1000, 'x');
    generate(eng, {make_request(prompt, 4)});
    CHECK(m.prefix_hits.value() == 0);
    CHECK(m.prefix_queries.value() == 1001);
    const auto second = generate(eng, {make_request(prompt, 4)});
    CHECK(m.prefix_queries.value() == 2002);
    CHECK(m.prefix_hits.value() == 992); // 62 full blocks; the 1001st token is computed
    CHECK(second[0].last.cached_tokens == 992);
    // The engine publishes its gauges right after the step that finished the request.
    auto snap = eng.load();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (snap.running != 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        snap = eng.load();
    }
    CHECK(snap.prefix_cache_hits == 992);
    CHECK(snap.running == 0);
    CHECK(snap.kv_usage == 0.0); // finished: blocks are free (and still cached)
}

TEST_CASE("sim backend runs the same scheduler without a model", "[engine]") {
    auto cfg = tiny_config();
    cfg.backend = "sim";
    cfg.sim.speedup = 100.0; // keep the test fast
    replica_metrics m("m", 16, 256);
    engine eng(cfg, m, backend_for(cfg));
    eng.start();
    CHECK(eng.backend_name() == "sim");
    const auto r = generate(eng, {make_request("hello sim", 10), make_request("hello sim", 10)});
    CHECK(r[0].text.size() == 10);
    CHECK(all_printable(r[0].text));
    CHECK(m.generation_tokens.value() == 20);
}

TEST_CASE("the engine runs the backend and clock it is given", "[engine]") {
    auto cfg = tiny_config();
    cfg.max_num_batched_tokens = 64; // a 100-token prompt takes two prefill steps
    auto now = std::make_shared<engine_clock::time_point>();
    auto fake = std::make_unique<stepping_backend>(now);
    const auto steps = fake->step_tokens;
    replica_metrics m("m", 16, 256);
    engine eng(cfg, m, std::move(fake), [now] { return *now; });
    CHECK(eng.backend_name() == "stepping");
    eng.start();
    auto req = make_request(std::string(99, 'q'), 3); // + BOS: 100 prompt tokens
    req.arrival = eng.now();
    const auto r = generate(eng, {req});
    CHECK(r[0].text.size() == 3);
    eng.stop();
    // Two prefill steps (64 + 36 tokens), then one token per decode step.
    CHECK(*steps == std::vector<std::size_t>{64, 36, 1, 1});
    // The first token came out of the second step, the last of the fourth: exact, on the clock
    // the backend moved, whatever the real time taken.
    CHECK(m.ttft.count() == 1);
    CHECK(m.ttft.sum() == Approx(0.020));
    CHECK(m.e2e.sum() == Approx(0.040));
    CHECK(m.itl.count() == 2);
    CHECK(m.itl.sum() == Approx(0.020));
}

TEST_CASE("the KV-event stream opens with AllBlocksCleared: at start with a replay socket, else "
          "in the first step's batch",
          "[engine][kv_events]") {
    namespace ev = common::kv_events;
    const bool clear_at_start = GENERATE(true, false);
    auto cfg = tiny_config();
    replica_metrics m("m", 16, 256);
    engine eng(cfg, m, backend_for(cfg));
    std::mutex mutex;
    std::vector<ev::batch> batches;
    eng.publish_kv_events(
        [&](ev::batch b) {
            std::lock_guard lock(mutex);
            batches.push_back(std::move(b));
        },
        clear_at_start);
    eng.start();
    {
        std::lock_guard lock(mutex);
        // Alone at start: a subscriber that comes later gets it by replay. Without a replay
        // socket nothing goes out before the first step, which no subscriber could miss.
        REQUIRE(batches.size() == (clear_at_start ? 1U : 0U));
        if (clear_at_start) {
            REQUIRE(batches[0].events.size() == 1);
            CHECK(std::holds_alternative<ev::all_blocks_cleared>(batches[0].events[0]));
        }
    }
    generate(eng, {make_request(std::string(100, 'a'), 2)});
    generate(eng, {make_request(std::string(100, 'b'), 2)});
    eng.stop();
    std::lock_guard lock(mutex);
    std::size_t clears = 0, stored = 0;
    for (const auto& b : batches)
        for (const auto& e : b.events) {
            clears += std::holds_alternative<ev::all_blocks_cleared>(e);
            stored += std::holds_alternative<ev::block_stored>(e);
        }
    CHECK(clears == 1); // once per process, whichever way
    CHECK(stored >= 2);
    REQUIRE(batches.size() >= 2);
    // The clear comes first in the stream and before any block the process stores.
    REQUIRE_FALSE(batches[0].events.empty());
    CHECK(std::holds_alternative<ev::all_blocks_cleared>(batches[0].events[0]));
    if (!clear_at_start) {
        REQUIRE(batches[0].events.size() >= 2);
        CHECK(std::holds_alternative<ev::block_stored>(batches[0].events[1]));
    }
}

namespace {

// A backend whose logits are the same every step: only the given byte ids are finite.
class scripted_backend final : public backend {
public:
    explicit scripted_backend(std::vector<std::pair<common::token_id, float>> finite)
        : logits_(common::vocab_size, -std::numeric_limits<float>::infinity()) {
        for (const auto& [id, v] : finite)
            logits_[id] = v;
    }
    std::string_view name() const override { return "scripted"; }
    bool forward(std::span<const batch_entry> batch,
                 std::vector<std::vector<float>>& logits) override {
        for (const auto& e : batch)
            if (e.want_logits)
                logits.push_back(logits_);
        return true;
    }

private:
    std::vector<float> logits_;
};

result run_scripted(std::vector<std::pair<common::token_id, float>> finite,
                    const std::function<void(sampling_params&)>& set) {
    auto cfg = tiny_config();
    replica_metrics m("m", 16, 256);
    engine eng(cfg, m, std::make_unique<scripted_backend>(std::move(finite)));
    eng.start();
    auto req = make_request("go", 8);
    req.sampling.ignore_eos = false;
    set(req.sampling);
    return generate(eng, {req})[0];
}

} // namespace

TEST_CASE("min_tokens keeps EOS out of the draw until that many tokens are out", "[engine]") {
    const std::vector<std::pair<common::token_id, float>> eos_first = {{common::eos_token, 5.0f},
                                                                       {'a', 3.0f}};
    const auto at_once = run_scripted(eos_first, [](sampling_params&) {});
    CHECK(at_once.text.empty());
    CHECK(at_once.last.finish == finish_reason::stop);
    CHECK(at_once.last.completion_tokens == 1);
    const auto held = run_scripted(eos_first, [](sampling_params& s) { s.min_tokens = 3; });
    CHECK(held.text == "aaa");
    CHECK(held.last.finish == finish_reason::stop);
    CHECK(held.last.completion_tokens == 4); // EOS counts, its text does not
    CHECK_FALSE(held.last.stop_reason.text);
    CHECK_FALSE(held.last.stop_reason.token);
}

TEST_CASE("stop_token_ids end the output, out of its text, and name the id", "[engine]") {
    const std::vector<std::pair<common::token_id, float>> b_first = {{'b', 5.0f}, {'a', 3.0f}};
    const auto free_run = run_scripted(b_first, [](sampling_params&) {});
    CHECK(free_run.text == "bbbbbbbb");
    const auto stopped = run_scripted(b_first, [](sampling_params& s) {
        s.stop_token_ids = {'b'};
        s.min_tokens = 2; // barred from the draw twice, then drawn and stopping
    });
    CHECK(stopped.text == "aa");
    CHECK(stopped.last.finish == finish_reason::stop);
    CHECK(stopped.last.stop_reason.token == 'b');
    CHECK(stopped.last.completion_tokens == 3);
    // Stop strings too are looked for only past min_tokens.
    const auto late = run_scripted(b_first, [](sampling_params& s) {
        s.stop = {"b"};
        s.min_tokens = 2;
    });
    CHECK(late.text == "bb");
    CHECK(late.last.stop_reason.text == "b");
    CHECK(late.last.completion_tokens == 3);
}

TEST_CASE("logprobs go with the events: the raw log-softmax of each chosen token", "[engine]") {
    // 'a' 2, 'b' 1, EOS 0: log-softmax over those three.
    const std::vector<std::pair<common::token_id, float>> logits = {
        {'a', 2.0f}, {'b', 1.0f}, {common::eos_token, 0.0f}};
    const double log_total = std::log(std::exp(2.0) + std::exp(1.0) + 1.0);
    auto cfg = tiny_config();
    replica_metrics m("m", 16, 256);
    engine eng(cfg, m, std::make_unique<scripted_backend>(logits));
    eng.start();
    auto req = make_request("go", 3);
    req.sampling.logprobs = 2;
    asio::io_context io;
    auto stream = std::make_shared<request_stream>(io.get_executor());
    REQUIRE(eng.submit(req, stream) == submit_status::accepted);
    std::vector<common::openai::token_logprob> all;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            for (;;) {
                stream_event ev = co_await stream->next();
                all.insert(all.end(), ev.logprobs.begin(), ev.logprobs.end());
                if (ev.finished)
                    co_return;
            }
        },
        asio::detached);
    io.run();
    REQUIRE(all.size() == 3);
    for (const auto& t : all) {
        CHECK(t.chosen.token == "a");
        CHECK(t.chosen.logprob == Approx(2.0 - log_total));
        // The chosen token first, then the likeliest others: a (chosen, also rank 1), b.
        REQUIRE(t.alternatives.size() == 2);
        CHECK(t.alternatives[0].token == "a");
        CHECK(t.alternatives[1].token == "b");
        CHECK(t.alternatives[1].logprob == Approx(1.0 - log_total));
    }
}

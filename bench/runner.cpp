#include "bench/runner.hpp"

#include "common/sse.hpp"

#include <boost/asio.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <random>

namespace lanes::bench {

namespace asio = boost::asio;
namespace http = common::http;
namespace bhttp = boost::beast::http;
using clock_type = std::chrono::steady_clock;

std::vector<prompt_spec> random_workload(const bench_config& cfg) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(cfg.seed));
    std::uniform_int_distribution<int> printable(0x20, 0x7e);
    std::vector<prompt_spec> prompts(static_cast<std::size_t>(cfg.requests));
    for (auto& p : prompts) {
        p.prompt.resize(static_cast<std::size_t>(cfg.input_len));
        for (auto& c : p.prompt)
            c = static_cast<char>(printable(rng));
        p.max_tokens = cfg.output_len;
    }
    return prompts;
}

namespace {

double since(clock_type::time_point t) {
    return std::chrono::duration<double>(clock_type::now() - t).count();
}

// Reads one SSE event's JSON and updates the record; true for events that carry output text.
bool account_event(const std::string& data, request_record& rec) {
    if (data == "[DONE]")
        return false;
    const auto j = nlohmann::json::parse(data, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
        rec.error = "malformed SSE event";
        return false;
    }
    if (j.contains("error")) {
        rec.error = "stream error: " + j["error"].value("message", std::string("?"));
        return false;
    }
    if (j.contains("usage") && j["usage"].is_object()) {
        rec.prompt_tokens = j["usage"].value("prompt_tokens", std::int64_t{0});
        rec.completion_tokens = j["usage"].value("completion_tokens", std::int64_t{0});
    }
    if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty())
        return false;
    const auto& c = j["choices"][0];
    const std::string text =
        c.contains("text") && c["text"].is_string() ? c["text"].get<std::string>() : std::string();
    return !text.empty();
}

asio::awaitable<void> one_request(http::client_connection& conn, const http::url& target,
                                  const bench_config& cfg, const prompt_spec& p,
                                  request_record& rec) {
    const auto start = clock_type::now();
    nlohmann::json body = {{"prompt", p.prompt},
                           {"max_tokens", p.max_tokens},
                           {"stream", true},
                           {"ignore_eos", true},
                           {"stream_options", {{"include_usage", true}}}};
    if (!cfg.model.empty())
        body["model"] = cfg.model;
    http::request req{bhttp::verb::post, target.base_path + "/v1/completions", 11};
    req.set(bhttp::field::content_type, "application/json");
    req.keep_alive(true);
    req.body() = body.dump();
    if (!conn.is_open()) {
        if (auto ec = co_await conn.connect(target, cfg.request_timeout)) {
            rec.error = "connect: " + ec.message();
            co_return;
        }
    }
    if (auto ec = co_await conn.write(req, cfg.request_timeout)) {
        rec.error = "write: " + ec.message();
        co_return;
    }
    if (auto ec = co_await conn.read_header(cfg.request_timeout)) {
        rec.error = "response: " + ec.message();
        co_return;
    }
    rec.status = static_cast<int>(conn.header().result_int());
    rec.replica = std::string(conn.header()["x-lanes-replica"]);
    common::sse_parser sse;
    std::string piece;
    auto last = start;
    while (!conn.done()) {
        if (auto ec = co_await conn.read_chunk(piece, cfg.request_timeout)) {
            rec.error = "body: " + ec.message();
            co_return;
        }
        sse.feed(piece);
        while (auto event = sse.next()) {
            if (!account_event(*event, rec))
                continue;
            const auto now = clock_type::now();
            if (rec.output_chunks == 0)
                rec.ttft = std::chrono::duration<double>(now - start).count();
            else
                rec.itl.push_back(std::chrono::duration<double>(now - last).count());
            last = now;
            ++rec.output_chunks;
        }
    }
    rec.e2e = since(start);
    if (rec.status != 200 && rec.error.empty())
        rec.error = "status " + std::to_string(rec.status);
    if (!conn.reusable())
        conn.close();
}

asio::awaitable<void> worker(const http::url& target, const bench_config& cfg,
                             const std::vector<prompt_spec>& prompts,
                             std::vector<request_record>& records, std::size_t& next) {
    http::client_connection conn(co_await asio::this_coro::executor);
    while (next < prompts.size()) {
        const std::size_t i = next++;
        co_await one_request(conn, target, cfg, prompts[i], records[i]);
        if (!records[i].error.empty())
            conn.close();
    }
}

} // namespace

std::vector<request_record> run(const bench_config& cfg, const http::url& target,
                                const std::vector<prompt_spec>& prompts, double& wall_seconds) {
    asio::io_context io(1);
    std::vector<request_record> records(prompts.size());
    std::size_t next = 0;
    const auto start = clock_type::now();
    const auto workers =
        std::min<std::size_t>(static_cast<std::size_t>(cfg.concurrency), prompts.size());
    for (std::size_t w = 0; w < workers; ++w)
        asio::co_spawn(io, worker(target, cfg, prompts, records, next), asio::detached);
    io.run();
    wall_seconds = since(start);
    return records;
}

} // namespace lanes::bench

#include "bench/runner.hpp"

#include "common/http/sse.hpp"

#include <boost/asio.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>
#include <simdjson.h>

#include <chrono>
#include <cstdio>
#include <queue>
#include <random>

namespace lanes::bench {

namespace asio = boost::asio;
namespace http = common::http;
namespace bhttp = boost::beast::http;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr auto progress_period = std::chrono::milliseconds(500);

double seconds(clock_type::duration d) {
    return std::chrono::duration<double>(d).count();
}

// Reads one SSE event's JSON and updates the record; true for events that carry output text.
// One event per token per stream: parsed on demand (simdjson) into nothing but the fields read,
// so that the load generator is not what saturates first.
bool account_event(const std::string& data, request_record& rec) {
    namespace od = simdjson::ondemand;
    if (data == "[DONE]")
        return false;
    thread_local od::parser parser;
    thread_local std::string padded;
    padded.assign(data);
    padded.resize(data.size() + simdjson::SIMDJSON_PADDING);
    const auto malformed = [&rec] {
        rec.error = "protocol: malformed SSE event";
        return false;
    };
    od::document doc;
    od::object event;
    if (parser.iterate(padded.data(), data.size(), padded.size()).get(doc) ||
        doc.get_object().get(event))
        return malformed();
    bool text = false;
    for (auto field : event) {
        std::string_view key;
        od::value value;
        if (field.unescaped_key().get(key) || field.value().get(value))
            return malformed();
        if (key == "error") {
            std::string_view message = "?";
            od::object error;
            if (!value.get_object().get(error)) {
                std::string_view m;
                if (!error.find_field_unordered("message").get_string().get(m))
                    message = m;
            }
            rec.error = "stream: " + std::string(message);
            return false;
        }
        if (key == "usage") {
            od::object usage;
            if (value.get_object().get(usage)) // null usage on events before the last
                continue;
            std::int64_t n = 0;
            if (!usage.find_field_unordered("prompt_tokens").get_int64().get(n))
                rec.prompt_tokens = n;
            if (!usage.find_field_unordered("completion_tokens").get_int64().get(n))
                rec.completion_tokens = n;
        } else if (key == "choices") {
            od::array choices;
            if (value.get_array().get(choices))
                return malformed();
            for (auto choice : choices) { // the first choice only
                od::object c;
                std::string_view t;
                if (!choice.get_object().get(c) &&
                    !c.find_field_unordered("text").get_string().get(t))
                    text = !t.empty();
                break;
            }
        }
    }
    return text; // (bytes after the object go unchecked)
}

struct run_state {
    const bench_config& cfg;
    const http::url& target;
    const std::vector<stream>& workload;
    std::vector<std::size_t> first_index; // index of each stream's first record
    std::vector<request_record>& records;
    clock_type::time_point start;
    clock_type::time_point finish{}; // when the last request ended
    asio::steady_timer* progress_timer = nullptr;
    std::size_t done = 0;
    std::size_t failed = 0;
    std::size_t next_stream = 0;
    // session_arrivals: each session's next turn and connection, and the sessions between turns
    // by when their think time ends.
    std::vector<std::size_t> next_turn;
    std::vector<std::unique_ptr<http::client_connection>> session_conn;
    using ready_at = std::pair<clock_type::time_point, std::size_t>;
    std::priority_queue<ready_at, std::vector<ready_at>, std::greater<>> ready;
    std::size_t sent = 0;
};

asio::awaitable<void> one_request(http::client_connection& conn, run_state& st,
                                  const request_spec& spec, request_record& rec) {
    const auto start = clock_type::now();
    rec.start_s = seconds(start - st.start);
    nlohmann::json body = {{"prompt", spec.prompt},
                           {"max_tokens", spec.max_tokens},
                           {"stream", true},
                           {"ignore_eos", true},
                           {"stream_options", {{"include_usage", true}}}};
    if (!st.cfg.model.empty())
        body["model"] = st.cfg.model;
    http::outgoing_request req{bhttp::verb::post, st.target.base_path + "/v1/completions", 11};
    req.set(bhttp::field::content_type, "application/json");
    if (spec.session)
        req.set("x-session-id", *spec.session);
    req.keep_alive(true);
    req.body() = body.dump();
    const auto timeout = st.cfg.request_timeout;
    // Every way out records when the request ended: a failure is charted at its end, as an
    // answer is.
    const auto fail = [&rec, start](std::string what) {
        rec.error = std::move(what);
        rec.e2e = seconds(clock_type::now() - start);
    };
    // One co_await per statement: GCC 12 mishandles co_await inside ||, && and ?: expressions.
    boost::system::error_code ec;
    if (!conn.is_open())
        ec = co_await conn.connect(st.target, timeout);
    if (ec) {
        fail("connect: " + ec.message());
        co_return;
    }
    ec = co_await conn.write(req, timeout);
    if (!ec)
        ec = co_await conn.read_header(timeout);
    if (ec) {
        fail("transport: " + ec.message());
        co_return;
    }
    rec.status = conn.head().status();
    rec.replica = std::string(conn.head().field("x-lanes-replica"));
    common::http::sse_parser sse;
    std::string piece, plain;
    auto last = start;
    const bool event_stream = conn.head().field("content-type").starts_with("text/event-stream");
    while (!conn.done()) {
        if ((ec = co_await conn.read_chunk(piece, timeout))) {
            fail("transport: " + ec.message());
            co_return;
        }
        if (!event_stream) {
            plain += piece;
            continue;
        }
        sse.feed(piece);
        while (auto event = sse.next()) {
            if (!account_event(*event, rec))
                continue;
            const auto now = clock_type::now();
            if (rec.output_chunks == 0)
                rec.ttft = seconds(now - start);
            else
                rec.itl.push_back(seconds(now - last));
            last = now;
            ++rec.output_chunks;
        }
    }
    rec.e2e = seconds(clock_type::now() - start);
    if (rec.status != 200 && rec.error.empty())
        rec.error = "status " + std::to_string(rec.status);
    // A 200 that streamed no text is no answer: counted a success, it would add a TTFT of 0.
    if (rec.error.empty() && !event_stream)
        rec.error = "protocol: not an event stream";
    else if (rec.error.empty() && rec.output_chunks == 0)
        rec.error = "protocol: no output";
    // A server that sends no usage chunk: its events are the best count there is.
    if (rec.error.empty() && rec.completion_tokens == 0)
        rec.completion_tokens = rec.output_chunks;
    if (!conn.reusable())
        conn.close();
}

// Runs stream `s` (its turns in order) on `conn`, a keep-alive connection that may already be
// open from an earlier stream.
asio::awaitable<void> run_stream(run_state& st, std::size_t s, http::client_connection& conn) {
    const auto& turns = st.workload[s];
    for (std::size_t t = 0; t < turns.size(); ++t) {
        request_record& rec = st.records[st.first_index[s] + t];
        co_await one_request(conn, st, turns[t], rec);
        if (++st.done == st.records.size()) {
            st.finish = clock_type::now(); // the run's end, whatever timers are still set
            if (st.progress_timer != nullptr)
                st.progress_timer->cancel();
        }
        if (!rec.error.empty()) {
            ++st.failed;
            conn.close();
        }
    }
}

// One of --concurrency workers: takes the next stream until none are left, keeping its
// connection open from one stream to the next (as HTTP clients with a connection pool do).
asio::awaitable<void> closed_loop_worker(run_state& st) {
    http::client_connection conn(co_await asio::this_coro::executor);
    while (st.next_stream < st.workload.size()) {
        const std::size_t s = st.next_stream++;
        co_await run_stream(st, s, conn);
    }
}

asio::awaitable<void> open_loop_stream(run_state& st, std::size_t s, double due_s) {
    st.records[st.first_index[s]].scheduled_s = due_s;
    http::client_connection conn(co_await asio::this_coro::executor);
    co_await run_stream(st, s, conn);
}

// Streams start at their arrival times (Poisson or the trace's), each on its own connection.
asio::awaitable<void> open_loop(run_state& st) {
    auto ex = co_await asio::this_coro::executor;
    std::mt19937_64 rng(static_cast<std::uint64_t>(st.cfg.seed));
    std::exponential_distribution<double> gap(st.cfg.rate > 0 ? st.cfg.rate : 1.0);
    asio::steady_timer timer(ex);
    double at = 0;
    for (std::size_t s = 0; s < st.workload.size(); ++s) {
        at = st.cfg.trace_times ? std::max(0.0, st.workload[s].front().arrival_s) : at + gap(rng);
        timer.expires_at(st.start + std::chrono::duration_cast<clock_type::duration>(
                                        std::chrono::duration<double>(at)));
        co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
        asio::co_spawn(ex, open_loop_stream(st, s, at), asio::detached);
    }
}

// One turn of session `s` on its own connection; the session is ready for its next turn once
// that turn's think time has passed.
asio::awaitable<void> session_turn(run_state& st, std::size_t s, double due_s) {
    const std::size_t t = st.next_turn[s]++;
    const auto& turns = st.workload[s];
    request_record& rec = st.records[st.first_index[s] + t];
    rec.scheduled_s = due_s;
    if (!st.session_conn[s])
        st.session_conn[s] =
            std::make_unique<http::client_connection>(co_await asio::this_coro::executor);
    co_await one_request(*st.session_conn[s], st, turns[t], rec);
    if (++st.done == st.records.size()) {
        st.finish = clock_type::now();
        if (st.progress_timer != nullptr)
            st.progress_timer->cancel();
    }
    if (!rec.error.empty()) {
        ++st.failed;
        st.session_conn[s]->close();
    }
    if (t + 1 < turns.size())
        st.ready.emplace(clock_type::now() +
                             std::chrono::duration_cast<clock_type::duration>(
                                 std::chrono::duration<double>(turns[t + 1].think_s)),
                         s);
    else
        st.session_conn[s].reset();
}

// Poisson arrivals of requests: each takes the session whose think time ended longest ago, or
// else starts the next session; an arrival that finds every session busy or thinking is lost.
asio::awaitable<void> session_loop(run_state& st) {
    auto ex = co_await asio::this_coro::executor;
    std::mt19937_64 rng(static_cast<std::uint64_t>(st.cfg.seed));
    std::exponential_distribution<double> gap(st.cfg.rate);
    st.next_turn.assign(st.workload.size(), 0);
    st.session_conn.resize(st.workload.size());
    asio::steady_timer timer(ex);
    double at = 0;
    while (st.sent < st.records.size()) {
        at += gap(rng);
        const auto due = st.start + std::chrono::duration_cast<clock_type::duration>(
                                        std::chrono::duration<double>(at));
        timer.expires_at(due);
        co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
        std::size_t s = st.workload.size();
        // A ready session's next turn with probability continue_share (always once every
        // session has started), else a new session.
        const bool ready = !st.ready.empty() && st.ready.top().first <= clock_type::now();
        const bool fresh = st.next_stream < st.workload.size();
        if (ready && (!fresh || std::bernoulli_distribution(st.cfg.continue_share)(rng))) {
            s = st.ready.top().second;
            st.ready.pop();
        } else if (fresh) {
            s = st.next_stream++;
        }
        if (s == st.workload.size())
            continue;
        ++st.sent;
        asio::co_spawn(ex, session_turn(st, s, at), asio::detached);
    }
}

asio::awaitable<void> progress(run_state& st, std::size_t total) {
    asio::steady_timer timer(co_await asio::this_coro::executor);
    st.progress_timer = &timer;
    while (st.done < total) {
        std::fprintf(stderr, "\r%zu/%zu requests, %zu failed, %.1f s", st.done, total, st.failed,
                     seconds(clock_type::now() - st.start));
        timer.expires_after(progress_period);
        co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    st.progress_timer = nullptr;
    std::fprintf(stderr, "\r%zu/%zu requests, %zu failed, %.1f s\n", st.done, total, st.failed,
                 seconds(clock_type::now() - st.start));
}

} // namespace

std::vector<request_record> run(const bench_config& cfg, const http::url& target,
                                const std::vector<stream>& workload, double& wall_seconds) {
    asio::io_context io(1);
    std::vector<request_record> records;
    run_state st{cfg, target, workload, {}, records, clock_type::now()};
    for (const auto& s : workload) {
        st.first_index.push_back(records.size());
        records.resize(records.size() + s.size());
    }
    st.start = clock_type::now();
    if (cfg.rate > 0 && cfg.session_arrivals) {
        asio::co_spawn(io, session_loop(st), asio::detached);
    } else if (cfg.rate > 0 || cfg.trace_times) {
        asio::co_spawn(io, open_loop(st), asio::detached);
    } else {
        const auto workers =
            std::min<std::size_t>(static_cast<std::size_t>(cfg.concurrency), workload.size());
        for (std::size_t w = 0; w < workers; ++w)
            asio::co_spawn(io, closed_loop_worker(st), asio::detached);
    }
    if (cfg.progress)
        asio::co_spawn(io, progress(st, records.size()), asio::detached);
    io.run();
    // Up to the last request's end (the progress line's timer may wake a little later).
    wall_seconds =
        seconds((st.finish != clock_type::time_point{} ? st.finish : clock_type::now()) - st.start);
    return records;
}

} // namespace lanes::bench

#include "fake_engine.hpp"

#include "common/http/parse.hpp"
#include "common/http/routes.hpp"
#include "common/http/server.hpp"
#include "common/http/sse.hpp"

#include <boost/asio.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <thread>

namespace lanes::test {

namespace asio = boost::asio;
namespace http = common::http;
namespace bhttp = boost::beast::http;

struct fake_engine::state {
    mutable std::mutex mutex;
    std::vector<std::string> models;
    std::chrono::milliseconds models_delay{0};
    std::string owned_by;
    int health = 200;
    std::string metrics;
    script answer_with;
    std::vector<received> requests;
    std::vector<received> monitor;

    asio::io_context io;
    std::unique_ptr<http::server> server;
    std::thread thread;
};

std::string fake_engine::received::header(std::string_view name) const {
    for (const auto& [n, v] : headers)
        if (http::iequals_ascii(n, name))
            return v;
    return {};
}

namespace {

fake_engine::received record(const http::request& req) {
    fake_engine::received r;
    r.method = std::string(req.method_string());
    r.target = std::string(req.target());
    for (std::size_t i = 0; i < req.field_count(); ++i)
        r.headers.emplace_back(std::string(req.name(i)), std::string(req.value(i)));
    r.body = req.body();
    return r;
}

asio::awaitable<void> serve(fake_engine::state* st, http::request& req,
                            http::response_writer& out) {
    const fake_engine::received got = record(req);
    const std::string path(http::path_of(req.target()));
    if (req.method() == bhttp::verb::get &&
        (path == "/health" || path == "/metrics" || path == "/v1/models")) {
        int health = 200;
        std::chrono::milliseconds delay{0};
        std::string body, type = "application/json";
        {
            std::lock_guard lock(st->mutex);
            st->monitor.push_back(got);
            health = st->health;
            if (path == "/metrics") {
                body = st->metrics;
                type = "text/plain; version=0.0.4";
            } else if (path == "/v1/models") {
                nlohmann::json data = nlohmann::json::array();
                for (const auto& m : st->models)
                    data.push_back({{"id", m}, {"object", "model"}, {"owned_by", st->owned_by}});
                body = nlohmann::json{{"object", "list"}, {"data", data}}.dump();
                delay = st->models_delay;
            }
        }
        if (delay.count() > 0) {
            asio::steady_timer timer(co_await asio::this_coro::executor, delay);
            co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
        }
        const int status = path == "/health" ? health : 200;
        co_await out.send(static_cast<bhttp::status>(status), type, {}, body);
        co_return;
    }
    fake_engine::script script;
    {
        std::lock_guard lock(st->mutex);
        st->requests.push_back(got);
        script = st->answer_with;
    }
    const fake_engine::answer a = script ? script(got) : fake_engine::answer{};
    std::vector<http::header_view> headers;
    for (const auto& [n, v] : a.headers)
        headers.emplace_back(n, v);
    if (a.events.empty()) {
        co_await out.send(static_cast<bhttp::status>(a.status), a.content_type, headers, a.body);
        co_return;
    }
    if (!co_await out.begin_stream(static_cast<bhttp::status>(a.status), "text/event-stream",
                                   headers))
        co_return;
    for (const auto& e : a.events)
        if (!co_await out.write_chunk(http::sse_event(e)))
            co_return;
    if (co_await out.write_chunk(http::sse_done))
        co_await out.end_stream();
}

} // namespace

fake_engine::fake_engine(std::vector<std::string> models, std::string owned_by)
    : st_(std::make_unique<state>()) {
    st_->models = std::move(models);
    st_->owned_by = std::move(owned_by);
    // The handler holds a plain pointer: the state outlives the server (the destructor stops and
    // joins first), and a shared one would be a cycle through the server that owns the handler.
    state* st = st_.get();
    st_->server = std::make_unique<http::server>(
        st_->io, http::server_config{},
        [st](http::request& req, http::response_writer& out) { return serve(st, req, out); },
        "fake-engine");
    port_ = st_->server->listen("127.0.0.1", 0);
    st_->thread = std::thread([st] { st->io.run(); });
}

fake_engine::~fake_engine() {
    st_->server->stop();
    st_->io.stop();
    st_->thread.join();
}

std::string fake_engine::url() const {
    return "http://127.0.0.1:" + std::to_string(port_);
}

void fake_engine::set_script(script s) {
    std::lock_guard lock(st_->mutex);
    st_->answer_with = std::move(s);
}

void fake_engine::set_models(std::vector<std::string> models) {
    std::lock_guard lock(st_->mutex);
    st_->models = std::move(models);
}

void fake_engine::set_models_delay(std::chrono::milliseconds delay) {
    std::lock_guard lock(st_->mutex);
    st_->models_delay = delay;
}

void fake_engine::set_health(int status) {
    std::lock_guard lock(st_->mutex);
    st_->health = status;
}

void fake_engine::set_metrics(std::string text) {
    std::lock_guard lock(st_->mutex);
    st_->metrics = std::move(text);
}

std::vector<fake_engine::received> fake_engine::requests(std::string_view path) const {
    std::lock_guard lock(st_->mutex);
    std::vector<received> out;
    for (const auto& r : st_->requests)
        if (path.empty() || http::path_of(r.target) == path)
            out.push_back(r);
    return out;
}

std::vector<fake_engine::received> fake_engine::monitor_requests(std::string_view path) const {
    std::lock_guard lock(st_->mutex);
    std::vector<received> out;
    for (const auto& r : st_->monitor)
        if (http::path_of(r.target) == path)
            out.push_back(r);
    return out;
}

} // namespace lanes::test

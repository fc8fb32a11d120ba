#include "router/fleet/replica_monitor.hpp"

#include "common/json_depth.hpp"
#include "common/log.hpp"
#include "common/metrics/prom_parser.hpp"
#include "router/fleet/health_report.hpp"
#include "router/fleet/metrics_reader.hpp"

#include <boost/asio.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>

#include <nlohmann/json.hpp>

namespace lanes::router {

namespace asio = boost::asio;
namespace http = common::http;
using clock_type = std::chrono::steady_clock;

replica_monitor::replica_monitor(asio::io_context& io, replica_pool& pool, router_metrics& metrics,
                                 monitor_config cfg, const upstream_config& upstream)
    : io_(io)
    , pool_(pool)
    , metrics_(metrics)
    , cfg_(std::move(cfg))
    , connect_timeout_(upstream.connect_timeout)
    , max_idle_connections_(static_cast<std::size_t>(upstream.max_idle_connections))
    , stopping_(std::make_shared<std::atomic<bool>>(false))
    , fleet_hits_(cfg_.hit_ratio_window) {
    metrics_.prefix_hit_ratio.set(fleet_hits_.ratio()); // NaN: nothing queried yet
}

// Every coroutine here runs on the io_context's own executor: one thread runs it (the router's
// main thread; the I/O threads run io_contexts of their own), so no strand is needed, and a
// connection a scrape gives back is taken by the next scrape, or a request on this io_context,
// without a rebind (a strand per task made every reuse one: three system calls).
void replica_monitor::start() {
    asio::co_spawn(io_.get_executor(),
                   per_replica_loop(cfg_.scrape_interval, &replica::monitor_state::scrape_busy,
                                    &replica_monitor::scrape),
                   asio::detached);
    asio::co_spawn(io_.get_executor(),
                   per_replica_loop(cfg_.health_interval, &replica::monitor_state::probe_busy,
                                    &replica_monitor::probe),
                   asio::detached);
    asio::co_spawn(io_.get_executor(),
                   per_replica_loop(cfg_.models_interval, &replica::monitor_state::models_busy,
                                    &replica_monitor::read_models),
                   asio::detached);
    if (!cfg_.dns_names.empty())
        asio::co_spawn(io_.get_executor(), dns_loop(), asio::detached);
}

void replica_monitor::stop() {
    stopping_->store(true);
}

// A replica removed while its scrape or probe was out: what came back is about nothing routed.
bool replica_monitor::still_in_pool(const replica& r) const {
    return pool_.find(r.id()).get() == &r;
}

namespace {

// Deepest /v1/models answer read: a list of model objects needs a handful of levels.
constexpr std::size_t models_max_depth = 32;

// Clears a replica's busy flag however the task holding it ends (an exception included).
struct busy_release {
    std::atomic<bool>& flag;
    ~busy_release() { flag.store(false); }
};

// The end of a detached monitor task: an exception is logged (and the task's busy flag was
// released by its busy_release), never silently lost.
void task_done(std::exception_ptr e) {
    if (!e)
        return;
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& x) {
        LANES_LOG_THROTTLED(error, "monitor", "a monitor task failed: " << x.what());
    }
}

} // namespace

// Every `interval`, starts `task` for each replica that is not still busy with the last one.
asio::awaitable<void>
replica_monitor::per_replica_loop(common::http::duration interval,
                                  std::atomic<bool> replica::monitor_state::*busy,
                                  replica_task task) {
    auto stopping = stopping_;
    asio::steady_timer timer(co_await asio::this_coro::executor);
    while (!stopping->load()) {
        for (const auto& r : pool_.all())
            if (!((*r).monitor.*busy).exchange(true))
                asio::co_spawn(io_.get_executor(), (this->*task)(r), task_done);
        timer.expires_after(interval);
        co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    }
}

asio::awaitable<http::fetch_result> replica_monitor::get(replica& r, std::string_view path,
                                                         common::http::duration timeout) {
    http::fetch_options options;
    options.connect_timeout = connect_timeout_;
    options.total_timeout = timeout;
    options.keep_alive = true;
    if (!cfg_.replica_api_key.empty())
        options.headers = {{"Authorization", "Bearer " + cfg_.replica_api_key}};
    const auto executor = co_await asio::this_coro::executor;
    auto conn = r.take_idle(executor);
    auto res = co_await http::fetch_on(conn, executor, r.address(), boost::beast::http::verb::get,
                                       path, options);
    if (conn && conn->is_open())
        r.give_back(std::move(conn), max_idle_connections_);
    co_return res;
}

asio::awaitable<void> replica_monitor::scrape(std::shared_ptr<replica> r) {
    const busy_release release{r->monitor.scrape_busy};
    if (clock_type::now().time_since_epoch().count() < r->monitor.scrape_not_before.load())
        co_return;
    const auto res = co_await get(*r, "/metrics", cfg_.scrape_timeout);
    if (stopping_->load() || !still_in_pool(*r))
        co_return;
    // A scrape that got no answer (refused, reset, slow) says nothing of the replica's health,
    // which the probes judge: its load goes stale (--stale-after), that is all.
    if (res.ec)
        co_return;
    r->monitor.scrape_answered.store(true);
    if (res.status == 404 || res.status == 405 || res.status == 501) {
        if (r->monitor.scrape_not_before.exchange(
                (clock_type::now() + cfg_.metrics_missing_interval).time_since_epoch().count()) ==
            0)
            LANES_LOG(info, "monitor",
                      r->id() << " has no /metrics (status " << res.status
                              << "): routing on the router's own counts; asking again every "
                              << cfg_.metrics_missing_interval.count() << " ms");
        co_return;
    }
    if (res.status != 200)
        co_return;
    const auto parsed = common::prom::parse(res.body);
    scraped_stats s = read_replica_metrics(parsed);
    s.at = clock_type::now();
    const auto block_before = r->stats().block_size;
    if (s.prefill_seconds && s.prefills && s.prompt_tokens && s.prefix_cache_hits && s.finished) {
        // (one scrape of a replica at a time: the fit is this coroutine's alone)
        r->monitor.prefill.observe(
            {*s.prefill_seconds, *s.prefills, *s.prompt_tokens, *s.prefix_cache_hits, *s.finished,
             std::chrono::duration<double>(s.at.time_since_epoch()).count()});
        s.prefill = r->monitor.prefill.cost();
    }
    r->set_stats(s);
    mirror_counters(*r, s);
    if (s.block_size != block_before)
        pool_.update_fleet(cfg_.default_block_size, cfg_.bytes_per_token);
}

// Mirrors a replica's cumulative prefix counters as monotonic router counters: the increase since
// the last scrape is added; a drop (the replica restarted) adds the new value.
void replica_monitor::mirror_counters(replica& r, const scraped_stats& s) {
    if (!s.prefix_cache_hits || !s.prefix_cache_queries)
        return;
    replica::monitor_state::mirrored_counters& last =
        r.monitor.mirrored; // (one scrape of a replica at a time)
    auto delta = [](double now, double before) { return now >= before ? now - before : now; };
    if (last.seen && *s.prefix_cache_queries < last.queries)
        r.epoch.fetch_add(1, std::memory_order_relaxed); // it restarted: its cache is empty
    const double hits = delta(*s.prefix_cache_hits, last.hits);
    const double queries = delta(*s.prefix_cache_queries, last.queries);
    metrics_.replica_prefix_hits.with({r.id()}).inc(hits);
    metrics_.replica_prefix_queries.with({r.id()}).inc(queries);
    // A replica's first scrape is its baseline: what it served before this router saw it is not
    // the window's.
    if (last.seen) {
        fleet_hits_.add(hits, queries, clock_type::now());
        metrics_.prefix_hit_ratio.set(fleet_hits_.ratio());
    }
    last = {true, *s.prefix_cache_hits, *s.prefix_cache_queries};
}

asio::awaitable<void> replica_monitor::probe(std::shared_ptr<replica> r) {
    const busy_release release{r->monitor.probe_busy};
    const auto res = co_await get(*r, "/health", cfg_.health_timeout);
    // A probe this process could not make (out of descriptors) says nothing of the replica.
    if (stopping_->load() || !still_in_pool(*r) || common::http::local_resource_error(res.ec))
        co_return;
    const bool ok = !res.ec && res.status == 200;
    r->monitor.probe_answered.store(true);
    if (!ok) {
        const std::string why = res.ec ? res.ec.message() : "status " + std::to_string(res.status);
        // Each replica's first failure, and each new reason, at once; repeats twice a minute.
        LANES_LOG_THROTTLED_BY(warn, "health", r->id() + " " + why, 30'000,
                               r->id() << " /health probe failed: " << why);
        r->note_error("/health probe failed: " + why);
    }
    // Connected but no answer in time: busy or stuck, not gone, so capped as a failed request is.
    const bool slow = res.ec == boost::beast::error::timeout && res.connected;
    report_health(*r, ok, metrics_, slow ? failure_origin::probe_slow : failure_origin::probe);
}

// What a replica serves, from its /v1/models. A read that fails keeps what was known.
asio::awaitable<void> replica_monitor::read_models(std::shared_ptr<replica> r) {
    const busy_release release{r->monitor.models_busy};
    const auto res = co_await get(*r, "/v1/models", cfg_.models_timeout);
    if (stopping_->load() || !still_in_pool(*r) || res.ec || res.status != 200)
        co_return;
    // A list nested past any model's object is not read (copying and dumping it would recurse).
    if (common::nests_deeper_than(res.body, models_max_depth))
        co_return;
    const auto doc = nlohmann::json::parse(res.body, nullptr, false);
    if (doc.is_discarded() || !doc.is_object() || !doc.contains("data") || !doc["data"].is_array())
        co_return;
    model_list m;
    m.known = true;
    bool all_lanes = true;
    for (const auto& entry : doc["data"]) {
        if (!entry.is_object() || !entry.contains("id") || !entry["id"].is_string())
            continue;
        m.ids.push_back(entry["id"].get<std::string>());
        m.objects.push_back(entry.dump());
        // A lanes replica with a model's tokenizer reports its digest: its ids are the model's,
        // so it counts as an engine (hashed in real ids), not as the byte vocabulary.
        all_lanes = all_lanes && entry.value("owned_by", "") == "lanes" &&
                    !entry.contains("lanes_tokenizer");
    }
    m.lanes = all_lanes && !m.ids.empty();
    const auto before = r->models();
    if (before->known && before->ids == m.ids && before->lanes == m.lanes &&
        before->objects == m.objects)
        co_return; // nothing new
    if (!before->known || before->ids != m.ids)
        LANES_LOG(info, "monitor",
                  r->id() << (before->known ? " now serves " : " serves ")
                          << nlohmann::json(m.ids).dump());
    r->set_models(std::move(m));
    pool_.update_fleet(cfg_.default_block_size, cfg_.bytes_per_token);
}

asio::awaitable<void> replica_monitor::refresh_models() {
    const auto now = clock_type::now().time_since_epoch();
    const auto gap = std::chrono::duration_cast<clock_type::duration>(cfg_.models_refresh_gap);
    auto last = last_models_refresh_.load();
    if (now.count() - last < gap.count() ||
        !last_models_refresh_.compare_exchange_strong(last, now.count()))
        co_return; // one refresh at a time, and not more often than that
    for (const auto& r : pool_.all())
        if (!r->monitor.models_busy.exchange(true))
            co_await read_models(r);
}

std::vector<asio::ip::address> one_per_host(const std::vector<asio::ip::address>& resolved) {
    const bool any_v4 =
        std::any_of(resolved.begin(), resolved.end(), [](const auto& a) { return a.is_v4(); });
    std::vector<asio::ip::address> out;
    for (const auto& a : resolved)
        if ((a.is_v4() || !any_v4) && std::find(out.begin(), out.end(), a) == out.end())
            out.push_back(a);
    return out;
}

asio::awaitable<void> replica_monitor::dns_loop() {
    auto stopping = stopping_;
    asio::steady_timer timer(co_await asio::this_coro::executor);
    asio::ip::tcp::resolver resolver(co_await asio::this_coro::executor);
    while (!stopping->load()) {
        for (const auto& name : cfg_.dns_names) {
            // "https://name:port": TLS to every address, each certificate checked for `name`.
            const bool tls = name.starts_with("https://");
            const std::string_view spec = std::string_view(name).substr(tls ? 8 : 0);
            const auto colon = spec.rfind(':');
            const std::string host(spec.substr(0, colon)), port(spec.substr(colon + 1));
            auto [ec, results] =
                co_await resolver.async_resolve(host, port, asio::as_tuple(asio::use_awaitable));
            if (ec) {
                LANES_LOG(warn, "dns", "cannot resolve " << name << ": " << ec.message());
                continue; // keep the last known set rather than dropping every replica
            }
            std::vector<asio::ip::address> addresses;
            for (const auto& entry : results)
                addresses.push_back(entry.endpoint().address());
            std::set<std::string> seen;
            for (const auto& address : one_per_host(addresses)) {
                http::url u{address.to_string(), results.begin()->endpoint().port(), "", tls,
                            tls ? host : ""};
                seen.insert(u.str());
                if (pool_.add(u, name))
                    LANES_LOG(info, "dns", name << ": added " << u.str());
            }
            for (const auto& r : pool_.all())
                if (r->source == name && !seen.contains(r->id()) && pool_.remove(r->id()))
                    LANES_LOG(info, "dns", name << ": removed " << r->id());
        }
        timer.expires_after(cfg_.dns_interval);
        co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    }
}

} // namespace lanes::router

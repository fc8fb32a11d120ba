// The HTTP server's listener and accept loop; one connection's work is in session.cpp.
#include "common/http/server.hpp"

#include "common/allocator.hpp"
#include "common/http/client.hpp"
#include "common/http/session.hpp"
#include "common/log.hpp"

#include <boost/asio.hpp>
#include <boost/asio/as_tuple.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>

namespace lanes::common::http {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

struct server::state {
    state(asio::io_context& io_, std::shared_ptr<session_context> ctx_)
        : io(io_)
        , ctx(std::move(ctx_))
        , accept_strand(asio::make_strand(io_)) {}

    asio::io_context& io;
    std::shared_ptr<session_context> ctx;
    // Optional only so that release_listener() can drop it while its io_context exists.
    std::optional<asio::strand<asio::io_context::executor_type>> accept_strand;
    std::optional<tcp::acceptor> acceptor;
    std::vector<asio::io_context*> workers; // connections go round-robin here when set
    std::size_t next_worker = 0;            // used by the accept loop only
    // Per io_context (worker, or the one `io`): its sessions' delayed watches. Accept loop only.
    std::vector<std::weak_ptr<watch_delay>> watch_lists;
    std::atomic<std::size_t> connections{0};
    std::atomic<std::uint64_t> refused{0};
    std::mutex mutex;
    std::set<std::weak_ptr<session>, std::owner_less<std::weak_ptr<session>>> sessions;
};

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

asio::awaitable<void> run_session(std::shared_ptr<session> s, std::shared_ptr<server::state> st) {
    try {
        co_await s->run();
    } catch (const std::exception& e) {
        // A session ends here whatever happened in it: its connection slot is given back.
        LANES_LOG_THROTTLED(error, "http", st->ctx->name << ": connection failed: " << e.what());
    }
    std::lock_guard lock(st->mutex);
    st->sessions.erase(s);
    st->connections.fetch_sub(1);
}

asio::awaitable<void> accept_loop(std::shared_ptr<server::state> st) {
    const duration max_backoff =
        std::max(st->ctx->cfg.accept_backoff_max, st->ctx->cfg.accept_backoff);
    duration backoff = st->ctx->cfg.accept_backoff;
    while (!st->ctx->stopping.load()) {
        // A connection on a worker (one thread per worker) needs no strand; on the shared
        // io_context its I/O is serialised by one when several threads run it.
        asio::io_context* context = &st->io;
        std::size_t slot = 0;
        if (!st->workers.empty()) {
            slot = st->next_worker++ % st->workers.size();
            context = st->workers[slot];
        }
        const bool shared_context = st->workers.empty() && st->ctx->cfg.threads > 1;
        asio::any_io_executor target = context->get_executor();
        if (shared_context)
            target = asio::make_strand(*context);
        // The client's address comes with the accept (no getpeername per connection).
        tcp::endpoint peer;
        auto [ec, socket] = co_await st->acceptor->async_accept(target, peer, use_tuple);
        if (ec) {
            if (ec == asio::error::operation_aborted || st->ctx->stopping.load())
                break;
            if (local_resource_error(ec)) {
                // The pending connection stays in the backlog and would fail again at once:
                // stop accepting for a while (as nginx does) rather than spin.
                LANES_LOG_THROTTLED(warn, "http",
                                    st->ctx->name << ": accept paused for " << backoff.count()
                                                  << " ms: " << ec.message());
                asio::steady_timer pause(*st->accept_strand, backoff);
                co_await pause.async_wait(use_tuple);
                backoff = std::min(backoff * 2, max_backoff);
            } else {
                LANES_LOG_THROTTLED(warn, "http",
                                    st->ctx->name << ": accept failed: " << ec.message());
            }
            continue;
        }
        backoff = st->ctx->cfg.accept_backoff;
        const std::size_t cap = st->ctx->cfg.max_connections;
        if (cap > 0 && st->connections.load() >= cap) {
            st->refused.fetch_add(1);
            LANES_LOG_THROTTLED(warn, "http",
                                st->ctx->name << ": connection closed at once: " << cap
                                              << " open (--max-connections)");
            boost::system::error_code ignored;
            socket.close(ignored);
            continue;
        }
        auto executor = socket.get_executor();
        // The io_context's list of watches waiting to start: made again when none of its
        // sessions holds it (weak here, so it goes with its io_context, never after it).
        std::shared_ptr<watch_delay> watches;
        if (st->ctx->cfg.client_watch_delay.count() > 0) {
            if (st->watch_lists.size() <= slot)
                st->watch_lists.resize(slot + 1);
            watches = st->watch_lists[slot].lock();
            if (!watches) {
                watches = std::make_shared<watch_delay>(
                    context->get_executor(), st->ctx->cfg.client_watch_delay, shared_context);
                st->watch_lists[slot] = watches;
            }
        }
        auto s = std::make_shared<session>(std::move(socket), peer, st->ctx, std::move(watches));
        LANES_LOG(debug, "http", st->ctx->name << ": connection from " << s->remote());
        {
            std::lock_guard lock(st->mutex);
            st->sessions.insert(s);
            st->connections.fetch_add(1);
        }
        asio::co_spawn(executor, run_session(s, st), asio::detached);
    }
}

} // namespace

server::server(asio::io_context& io, server_config config, handler h, std::string name,
               error_writer errors)
    : state_(std::make_shared<state>(io, std::make_shared<session_context>(config, std::move(h),
                                                                           std::move(errors),
                                                                           std::move(name)))) {}

server::~server() {
    stop();
}

void server::spread_over(std::vector<asio::io_context*> workers) {
    state_->workers = std::move(workers);
}

void server::on_answered(answered_hook hook) {
    state_->ctx->answered = std::move(hook);
}

void server::screen_heads(head_screen screen) {
    state_->ctx->screen = std::move(screen);
}

unsigned short server::listen(const std::string& host, unsigned short port) {
    auto& st = *state_;
    const auto& cfg = st.ctx->cfg;
    if (!cfg.tls_cert_file.empty() || !cfg.tls_key_file.empty())
        st.ctx->tls = std::make_shared<tls_identity>(cfg.tls_cert_file, cfg.tls_key_file);
    tcp::endpoint ep{asio::ip::make_address(host), port};
    const std::string shown = ep.address().is_v6() ? "[" + host + "]" : host;
    st.acceptor.emplace(*st.accept_strand);
    boost::system::error_code ec;
    st.acceptor->open(ep.protocol(), ec);
    if (!ec)
        st.acceptor->set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec && cfg.reuse_port)
        st.acceptor->set_option(
            asio::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>(true), ec);
    if (!ec)
        st.acceptor->bind(ep, ec);
    if (!ec)
        st.acceptor->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
        std::string message = st.ctx->name + " cannot listen on " + shown + ":" +
                              std::to_string(port) + ": " + ec.message();
        if (ec == asio::error::address_in_use)
            message += cfg.reuse_port ? " (held by a process without --reuse-port)"
                                      : " (another process listens there; processes meant to "
                                        "share it each need --reuse-port)";
        st.acceptor.reset();
        throw std::runtime_error(message);
    }
    const unsigned short bound = st.acceptor->local_endpoint().port();
    LANES_LOG(info, "http",
              st.ctx->name << " listening on " << (st.ctx->tls ? "https" : "http") << "://" << shown
                           << ":" << bound << " (" << allocator_name() << ")");
    asio::co_spawn(*st.accept_strand, accept_loop(state_), asio::detached);
    return bound;
}

void server::stop() {
    auto st = state_;
    if (st->ctx->stopping.exchange(true))
        return;
    if (!st->accept_strand)
        return; // released: nothing listens any more
    asio::post(*st->accept_strand, [st] {
        boost::system::error_code ec;
        if (st->acceptor)
            st->acceptor->close(ec);
    });
    std::lock_guard lock(st->mutex);
    for (const auto& weak : st->sessions)
        if (auto s = weak.lock())
            s->close_if_idle();
}

std::string server::reload_tls() {
    const auto& tls = state_->ctx->tls;
    if (!tls)
        return {};
    std::string error = tls->reload();
    if (error.empty())
        LANES_LOG(info, "http",
                  state_->ctx->name << ": TLS certificate re-read from " << tls->cert_file());
    else
        LANES_LOG(error, "http",
                  state_->ctx->name << ": TLS certificate not re-read, the one in force stays: "
                                    << error);
    return error;
}

void server::release_listener() {
    state_->acceptor.reset();
    state_->accept_strand.reset();
}

std::size_t server::active_requests() const {
    return state_->ctx->active.load();
}
std::size_t server::open_connections() const {
    return state_->connections.load();
}
std::uint64_t server::refused_connections() const {
    return state_->refused.load();
}

fd_limits raise_open_file_limit() {
    fd_limits out;
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0)
        return out;
    out.soft_before = lim.rlim_cur;
    out.hard = lim.rlim_max;
    if (lim.rlim_cur < lim.rlim_max) {
        rlimit raised = lim;
        raised.rlim_cur = lim.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0)
            lim = raised;
    }
    out.soft = lim.rlim_cur;
    LANES_LOG(info, "http",
              "open files: soft limit " << out.soft << " (was " << out.soft_before << "), hard "
                                        << out.hard);
    return out;
}

namespace {

std::size_t descriptor_table_size() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.starts_with("FDSize:"))
            return static_cast<std::size_t>(std::strtoull(line.c_str() + 7, nullptr, 10));
    return 0;
}

} // namespace

std::size_t grow_descriptor_table(std::size_t slots) {
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY)
        slots = static_cast<std::size_t>(std::min<std::uint64_t>(slots, lim.rlim_cur));
    // Slot slots - 1 is past the table's end when the table is smaller, so it is free.
    if (slots > 64 && descriptor_table_size() < slots) {
        const int source = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        const int high = source < 0
                             ? -1
                             : ::fcntl(source, F_DUPFD_CLOEXEC,
                                       static_cast<int>(std::min<std::size_t>(slots - 1, INT_MAX)));
        if (high >= 0)
            ::close(high);
        if (source >= 0)
            ::close(source);
    }
    const std::size_t size = descriptor_table_size();
    LANES_LOG(info, "http", "descriptor table: " << size << " slots");
    return size;
}

std::size_t fitting_max_connections(std::uint64_t soft, std::size_t per_connection,
                                    std::size_t reserve) {
    if (soft == RLIM_INFINITY || soft > (std::uint64_t{1} << 40))
        soft = std::uint64_t{1} << 20;
    if (soft <= reserve + per_connection)
        return 1;
    return static_cast<std::size_t>((soft - reserve) / std::max<std::size_t>(per_connection, 1));
}

} // namespace lanes::common::http

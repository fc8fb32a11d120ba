// The HTTP server's listener and accept loop, and the wire helpers both halves use; one
// connection's work is in common/http_session.cpp.
#include "common/http/server.hpp"

#include "common/allocator.hpp"
#include "common/http/parse.hpp"
#include "common/http/session.hpp"
#include "common/log.hpp"

namespace lanes::common::http {

// A few fields are usual; more grow the table.
constexpr std::size_t usual_fields = 8;

request::span request::keep(std::string_view s) {
    const auto at = reinterpret_cast<std::uintptr_t>(s.data());
    const auto base = reinterpret_cast<std::uintptr_t>(source_);
    if (source_ && at >= base && at + s.size() <= base + text_.size()) // within start_in's copy
        return {static_cast<std::uint32_t>(at - base), static_cast<std::uint32_t>(s.size())};
    const span out{static_cast<std::uint32_t>(text_.size()), static_cast<std::uint32_t>(s.size())};
    source_ = nullptr; // appending may move text_: no more views into the source from here
    text_.append(s);
    return out;
}

void request::reset(std::string_view text, const char* source, beast_http::verb verb,
                    std::string_view method, std::string_view target, unsigned version) {
    text_.assign(text);
    source_ = source;
    fields_.clear();
    fields_.reserve(usual_fields);
    body_.clear();
    verb_ = verb;
    version_ = version;
    method_ = keep(method);
    target_ = keep(target);
}

void request::start(beast_http::verb verb, std::string_view method, std::string_view target,
                    unsigned version, std::size_t text_bytes) {
    text_.reserve(text_bytes);
    reset({}, nullptr, verb, method, target, version);
}

void request::start_in(std::string_view header, beast_http::verb verb, std::string_view method,
                       std::string_view target, unsigned version) {
    reset(header, header.data(), verb, method, target, version);
}

void request::add(std::string_view name, std::string_view value) {
    const span n = keep(name);
    fields_.emplace_back(n, keep(value));
}

std::optional<std::string_view> request::find(std::string_view name) const {
    for (const auto& [n, v] : fields_)
        if (iequals_ascii(slice(n), name))
            return slice(v);
    return std::nullopt;
}

std::string_view request::operator[](beast_http::field name) const {
    const auto s = beast_http::to_string(name);
    return (*this)[std::string_view(s.data(), s.size())];
}

bool request::keep_alive() const {
    bool close = false, keep = false;
    for (const auto& [n, v] : fields_)
        if (field_name_is(slice(n), "connection")) {
            close = close || list_has(slice(v), "close");
            keep = keep || list_has(slice(v), "keep-alive");
        }
    return version_ >= 11 ? !close : keep && !close;
}

response make_response(const request& req, beast_http::status status, std::string body,
                       std::string_view content_type) {
    response res{status, req.version()};
    res.set(beast_http::field::server, server_header);
    res.set(beast_http::field::content_type, content_type);
    res.keep_alive(req.keep_alive());
    res.body() = std::move(body);
    res.prepare_payload();
    return res;
}

namespace {

template <class Fields>
void append_fields(std::string& out, const Fields& fields) {
    for (const auto& f : fields) {
        out += f.name_string();
        out += ": ";
        out += f.value();
        out += "\r\n";
    }
    out += "\r\n";
}

} // namespace

std::string_view version_text(unsigned version) {
    return version == 10 ? "HTTP/1.0" : "HTTP/1.1";
}

std::string serialize_header(const outgoing_request& req) {
    std::string out;
    out.reserve(256);
    out += req.method_string();
    out += ' ';
    out += req.target();
    out += ' ';
    out += version_text(req.version());
    out += "\r\n";
    append_fields(out, req.base());
    return out;
}

std::string serialize_header(const response& res) {
    std::string out;
    out.reserve(256);
    out += version_text(res.version());
    out += ' ';
    out += std::to_string(res.result_int());
    out += ' ';
    out += res.reason();
    out += "\r\n";
    append_fields(out, res.base());
    return out;
}

namespace {

asio::awaitable<void> run_session(std::shared_ptr<session> s, std::shared_ptr<server::state> st) {
    co_await s->run();
    std::lock_guard lock(st->mutex);
    st->sessions.erase(s);
    st->connections.fetch_sub(1);
}

asio::awaitable<void> accept_loop(std::shared_ptr<server::state> st) {
    while (!st->stopping.load()) {
        // A connection on a worker (one thread per worker) needs no strand; on the shared
        // io_context its I/O is serialised by one when several threads run it.
        asio::io_context* context = &st->io;
        std::size_t slot = 0;
        if (!st->workers.empty()) {
            slot = st->next_worker++ % st->workers.size();
            context = st->workers[slot];
        }
        const bool shared_context = st->workers.empty() && st->cfg.threads > 1;
        asio::any_io_executor target = context->get_executor();
        if (shared_context)
            target = asio::make_strand(*context);
        auto [ec, socket] = co_await st->acceptor->async_accept(target, use_tuple);
        if (ec) {
            if (ec == asio::error::operation_aborted || st->stopping.load())
                break;
            LANES_LOG(warn, "http", st->name << ": accept failed: " << ec.message());
            continue;
        }
        auto executor = socket.get_executor();
        // The io_context's list of watches waiting to start: made again when none of its
        // sessions holds it (weak here, so it goes with its io_context, never after it).
        std::shared_ptr<watch_delay> watches;
        if (st->cfg.client_watch_delay.count() > 0) {
            if (st->watch_lists.size() <= slot)
                st->watch_lists.resize(slot + 1);
            watches = st->watch_lists[slot].lock();
            if (!watches) {
                watches = std::make_shared<watch_delay>(context->get_executor(),
                                                        st->cfg.client_watch_delay, shared_context);
                st->watch_lists[slot] = watches;
            }
        }
        auto s = std::make_shared<session>(std::move(socket), st, std::move(watches));
        LANES_LOG(debug, "http", st->name << ": connection from " << s->remote());
        {
            std::lock_guard lock(st->mutex);
            st->sessions.insert(s);
            st->connections.fetch_add(1);
        }
        asio::co_spawn(executor, run_session(s, st), asio::detached);
    }
}

} // namespace

server::server(asio::io_context& io, server_config config, handler h, std::string name)
    : state_(std::make_shared<state>(io, config, std::move(h), std::move(name))) {}

server::~server() {
    stop();
}

void server::spread_over(std::vector<asio::io_context*> workers) {
    state_->workers = std::move(workers);
}

unsigned short server::listen(const std::string& host, unsigned short port) {
    auto& st = *state_;
    tcp::endpoint ep{asio::ip::make_address(host), port};
    st.acceptor.emplace(st.accept_strand);
    st.acceptor->open(ep.protocol());
    st.acceptor->set_option(asio::socket_base::reuse_address(true));
    st.acceptor->bind(ep);
    st.acceptor->listen(asio::socket_base::max_listen_connections);
    const unsigned short bound = st.acceptor->local_endpoint().port();
    const std::string shown = ep.address().is_v6() ? "[" + host + "]" : host;
    LANES_LOG(info, "http",
              st.name << " listening on http://" << shown << ":" << bound << " ("
                      << allocator_name() << ")");
    asio::co_spawn(st.accept_strand, accept_loop(state_), asio::detached);
    return bound;
}

void server::stop() {
    auto st = state_;
    if (st->stopping.exchange(true))
        return;
    asio::post(st->accept_strand, [st] {
        boost::system::error_code ec;
        if (st->acceptor)
            st->acceptor->close(ec);
    });
    std::lock_guard lock(st->mutex);
    for (const auto& weak : st->sessions)
        if (auto s = weak.lock())
            s->close_if_idle();
}

std::size_t server::active_requests() const {
    return state_->active.load();
}
std::size_t server::open_connections() const {
    return state_->connections.load();
}

} // namespace lanes::common::http

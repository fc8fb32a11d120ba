#include "router/fleet/kv_sources.hpp"

#include "common/http/fetch.hpp"

#include <boost/beast/core/string.hpp>

#include <algorithm>
#include <charconv>

namespace lanes::router {

namespace ev = common::kv_events;
using clock_type = std::chrono::steady_clock;

std::vector<zmq::message_t> recv_frames(zmq::socket_t& s, std::size_t max) {
    std::vector<zmq::message_t> frames;
    for (;;) {
        zmq::message_t m;
        if (!s.recv(m, zmq::recv_flags::dontwait))
            break;
        const bool more = m.more();
        if (frames.size() < max)
            frames.push_back(std::move(m));
        if (!more)
            break;
    }
    return frames;
}

std::optional<replayed_batches> request_replay(zmq::socket_t& dealer, std::int64_t from,
                                               std::chrono::milliseconds timeout,
                                               const std::atomic<bool>& stopping) {
    const std::string seq = ev::sequence_frame(from);
    try {
        dealer.send(zmq::const_buffer("", 0), zmq::send_flags::sndmore);
        dealer.send(zmq::buffer(seq), zmq::send_flags::none);
    } catch (const zmq::error_t&) {
        return std::nullopt;
    }
    replayed_batches got;
    const auto deadline = clock_type::now() + timeout;
    while (!stopping.load()) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
        if (left.count() <= 0)
            break;
        zmq::pollitem_t item{dealer.handle(), 0, ZMQ_POLLIN, 0};
        zmq::poll(&item, 1, left);
        if (!(item.revents & ZMQ_POLLIN))
            continue;
        auto frames = recv_frames(dealer, 3); // "", seq, payload
        if (frames.size() != 3)
            continue;
        const auto n = ev::read_sequence(frames[1].to_string_view());
        if (!n)
            continue;
        if (*n == -1)
            return got; // the end marker
        got.emplace_back(*n, frames[2].to_string());
    }
    return std::nullopt; // cut short: not to be trusted as complete
}

std::string_view to_string(dump_outcome o) {
    switch (o) {
    case dump_outcome::ok:
        return "ok";
    case dump_outcome::failed:
        return "failed";
    case dump_outcome::refused:
        return "refused";
    case dump_outcome::undecodable:
        return "undecodable";
    }
    return "unknown";
}

block_dump_result read_block_dump(const common::http::url& replica, const block_dump_settings& s) {
    common::http::fetch_options opts;
    opts.total_timeout = s.timeout;
    opts.connect_timeout = std::min(s.timeout, opts.connect_timeout);
    opts.body_limit = s.max_bytes;
    opts.headers.emplace_back("Authorization", "Bearer " + s.token);
    const std::string path(ev::dump_path);
    const auto res =
        common::http::fetch_blocking(replica, boost::beast::http::verb::get, path, opts);
    block_dump_result out;
    const auto fail = [&out](dump_outcome outcome, std::string why) {
        out.outcome = outcome;
        out.why = std::move(why);
        return out;
    };
    if (res.ec)
        return fail(dump_outcome::failed, res.ec.message());
    if (res.status != 200)
        return fail(dump_outcome::refused, "HTTP " + std::to_string(res.status));
    std::optional<std::int64_t> next;
    for (const auto& [name, value] : res.headers)
        if (boost::beast::iequals(name, ev::dump_next_seq_header)) {
            std::int64_t v = 0;
            const auto* end = value.data() + value.size();
            if (auto [p, ec] = std::from_chars(value.data(), end, v);
                ec == std::errc() && p == end && v >= 0)
                next = v;
        }
    if (!next)
        return fail(dump_outcome::undecodable,
                    "no " + std::string(ev::dump_next_seq_header) + " header");
    block_dump d;
    d.next_seq = *next;
    std::string error;
    ev::decode_limits lim;
    lim.max_bytes = s.max_bytes;
    if (!ev::decode(res.body, d.blocks, error, lim))
        return fail(dump_outcome::undecodable, error);
    out.dump = std::move(d);
    return out;
}

} // namespace lanes::router

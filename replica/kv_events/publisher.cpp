#include "replica/kv_events/publisher.hpp"

#include "common/log.hpp"

#include <zmq.hpp>

#include <array>
#include <chrono>
#include <stdexcept>

namespace lanes::replica {

namespace ev = common::kv_events;

struct kv_event_publisher::sockets {
    zmq::context_t ctx{1};
    zmq::socket_t pub{ctx, zmq::socket_type::pub};
    std::optional<zmq::socket_t> replay;
    std::deque<std::pair<std::int64_t, std::string>> buffer; // (seq, payload), publisher thread
};

namespace {

std::string bind_endpoint(zmq::socket_t& s, const std::string& endpoint) {
    try {
        s.bind(endpoint);
    } catch (const zmq::error_t& e) {
        throw std::runtime_error("cannot bind KV events endpoint " + endpoint + ": " + e.what());
    }
    return s.get(zmq::sockopt::last_endpoint);
}

} // namespace

kv_event_publisher::kv_event_publisher(kv_events_config cfg)
    : cfg_(std::move(cfg))
    , zmq_(std::make_unique<sockets>()) {
    zmq_->pub.set(zmq::sockopt::sndhwm, cfg_.hwm);
    zmq_->pub.set(zmq::sockopt::linger, 0);
    bound_ = bind_endpoint(zmq_->pub, cfg_.endpoint);
    if (!cfg_.replay_endpoint.empty()) {
        zmq_->replay.emplace(zmq_->ctx, zmq::socket_type::router);
        zmq_->replay->set(zmq::sockopt::linger, 0);
        replay_bound_ = bind_endpoint(*zmq_->replay, cfg_.replay_endpoint);
    }
    LANES_LOG(info, "kv-events",
              "publishing on " << bound_
                               << (replay_bound_.empty() ? "" : ", replay on " + replay_bound_)
                               << (cfg_.topic.empty() ? "" : ", topic " + cfg_.topic));
    thread_ = std::thread([this] { run(); });
}

kv_event_publisher::~kv_event_publisher() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable())
        thread_.join();
}

bool kv_event_publisher::publish(ev::batch b) {
    {
        std::lock_guard lock(mutex_);
        const std::int64_t seq = next_seq_++;
        if (queue_.size() >= cfg_.max_queue) {
            dropped_.fetch_add(1);
            return false;
        }
        queue_.emplace_back(seq, std::move(b));
    }
    wake_.notify_one();
    return true;
}

void kv_event_publisher::run() {
    auto& z = *zmq_;
    const zmq::const_buffer topic(cfg_.topic.data(), cfg_.topic.size());
    for (;;) {
        std::deque<std::pair<std::int64_t, ev::batch>> ready;
        {
            std::unique_lock lock(mutex_);
            wake_.wait_for(lock, std::chrono::milliseconds(10),
                           [this] { return stopping_ || !queue_.empty(); });
            if (stopping_ && queue_.empty())
                return;
            ready.swap(queue_);
        }
        for (auto& [seq, b] : ready) {
            std::string payload = ev::encode(b);
            const std::string seq_bytes = ev::sequence_frame(seq);
            try {
                z.pub.send(topic, zmq::send_flags::sndmore | zmq::send_flags::dontwait);
                z.pub.send(zmq::buffer(seq_bytes),
                           zmq::send_flags::sndmore | zmq::send_flags::dontwait);
                z.pub.send(zmq::buffer(payload), zmq::send_flags::dontwait);
                sent_.fetch_add(1);
            } catch (const zmq::error_t& e) {
                LANES_LOG_THROTTLED(warn, "kv-events", "a batch was not sent: " << e.what());
            }
            z.buffer.emplace_back(seq, std::move(payload));
            if (z.buffer.size() > cfg_.buffer_steps)
                z.buffer.pop_front();
        }
        if (!z.replay)
            continue;
        // Replay requests: [identity, empty, 8-byte start sequence].
        for (;;) {
            std::array<zmq::message_t, 4> parts;
            std::size_t n = 0;
            bool more = true;
            auto got = z.replay->recv(parts[0], zmq::recv_flags::dontwait);
            if (!got)
                break;
            n = 1;
            more = z.replay->get(zmq::sockopt::rcvmore) != 0;
            while (more) {
                zmq::message_t extra;
                zmq::message_t& into = n < parts.size() ? parts[n] : extra;
                (void)z.replay->recv(into, zmq::recv_flags::none);
                ++n;
                more = z.replay->get(zmq::sockopt::rcvmore) != 0;
            }
            if (n != 3) {
                LANES_LOG_THROTTLED(warn, "kv-events", "a replay request of " << n << " frames");
                continue;
            }
            const auto start = ev::read_sequence(parts[2].to_string_view());
            if (!start)
                continue;
            const std::string identity = parts[0].to_string();
            const auto reply = [&](std::string_view seq, std::string_view payload) {
                z.replay->send(zmq::buffer(identity), zmq::send_flags::sndmore);
                z.replay->send(zmq::const_buffer("", 0), zmq::send_flags::sndmore);
                z.replay->send(zmq::buffer(seq), zmq::send_flags::sndmore);
                z.replay->send(zmq::buffer(payload), zmq::send_flags::none);
            };
            try {
                for (const auto& [seq, payload] : z.buffer)
                    if (seq >= *start)
                        reply(ev::sequence_frame(seq), payload);
                reply(ev::sequence_frame(-1), "");
            } catch (const zmq::error_t& e) {
                LANES_LOG_THROTTLED(warn, "kv-events", "a replay was cut: " << e.what());
            }
        }
    }
}

} // namespace lanes::replica

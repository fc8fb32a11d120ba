#include "replica/engine.hpp"

#include "common/log.hpp"
#include "replica/stop_matcher.hpp"

#include <xxhash.h>

#include <algorithm>

namespace lanes::replica {

namespace {

double seconds_between(engine_clock::time_point a, engine_clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

// Stand-in model until the real backends land: a deterministic printable token from the seed,
// the position and the previous token.
common::token_id toy_next_token(std::uint64_t seed, std::size_t position, common::token_id last) {
    const std::uint64_t key[3] = {seed, position, last};
    const std::uint64_t h = XXH3_64bits(key, sizeof key);
    constexpr char alphabet[] = "etaoin shrdlu cmfwyp vbgkqjxz ETAOIN SHRDLU.,\n";
    return static_cast<unsigned char>(alphabet[h % (sizeof alphabet - 1)]);
}

} // namespace

struct engine::sequence {
    engine_request req;
    std::shared_ptr<request_stream> stream;
    std::vector<common::token_id> output;
    stop_matcher stops;
    engine_clock::time_point scheduled{};
    engine_clock::time_point last_token{};

    sequence(engine_request r, std::shared_ptr<request_stream> s)
        : req(std::move(r))
        , stream(std::move(s))
        , stops(req.sampling.stop) {}
};

engine::engine(const replica_config& cfg, replica_metrics& metrics)
    : cfg_(cfg)
    , metrics_(metrics) {
    snapshot_.num_blocks = cfg.kv_blocks;
    snapshot_.block_size = cfg.block_size;
}

engine::~engine() {
    stop();
}

void engine::start() {
    thread_ = std::thread([this] { run(); });
}

void engine::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable())
        thread_.join();
}

submit_status engine::submit(engine_request req, std::shared_ptr<request_stream> stream) {
    stream->set_cancel_hook([this] { wake_.notify_all(); });
    {
        std::lock_guard lock(mutex_);
        if (stopping_)
            return submit_status::stopped;
        const auto queued = incoming_.size() + static_cast<std::size_t>(snapshot_.waiting);
        if (queued >= static_cast<std::size_t>(cfg_.max_waiting))
            return submit_status::queue_full;
        incoming_.push_back(std::make_unique<sequence>(std::move(req), std::move(stream)));
    }
    wake_.notify_all();
    return submit_status::accepted;
}

load_snapshot engine::load() const {
    std::lock_guard lock(mutex_);
    return snapshot_;
}

std::size_t engine::in_flight() const {
    std::lock_guard lock(mutex_);
    return incoming_.size() + static_cast<std::size_t>(snapshot_.running + snapshot_.waiting);
}

void engine::run() {
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] {
                return stopping_ || !incoming_.empty() || !waiting_.empty() || !running_.empty();
            });
            if (stopping_)
                break;
        }
        admit_incoming();
        step();
        publish_gauges();
    }
    admit_incoming();
    for (auto& seq : waiting_)
        finish(*seq, "abort");
    for (auto& seq : running_)
        finish(*seq, "abort");
    waiting_.clear();
    running_.clear();
    publish_gauges();
}

void engine::admit_incoming() {
    {
        std::lock_guard lock(mutex_);
        while (!incoming_.empty()) {
            waiting_.push_back(std::move(incoming_.front()));
            incoming_.pop_front();
        }
    }
    while (!waiting_.empty() && running_.size() < static_cast<std::size_t>(cfg_.max_num_seqs)) {
        auto seq = std::move(waiting_.front());
        waiting_.pop_front();
        seq->scheduled = engine_clock::now();
        metrics_.queue_time.observe(seconds_between(seq->req.arrival, seq->scheduled));
        metrics_.prefix_queries.inc(static_cast<double>(seq->req.prompt.size()));
        running_.push_back(std::move(seq));
    }
}

void engine::step() {
    const auto now = engine_clock::now();
    for (auto& seq : running_) {
        if (seq->stream->cancelled()) {
            finish(*seq, "abort");
            continue;
        }
        const auto& prompt = seq->req.prompt;
        const common::token_id last = seq->output.empty() ? prompt.back() : seq->output.back();
        const common::token_id tok =
            toy_next_token(seq->req.sampling.seed, prompt.size() + seq->output.size(), last);
        seq->output.push_back(tok);
        metrics_.generation_tokens.inc();
        if (seq->output.size() == 1) {
            metrics_.prompt_tokens.inc(static_cast<double>(prompt.size()));
            metrics_.ttft.observe(seconds_between(seq->req.arrival, now));
        } else {
            metrics_.itl.observe(seconds_between(seq->last_token, now));
        }
        seq->last_token = now;
        const char byte = static_cast<char>(tok);
        const bool hit_stop = seq->stops.append(std::string_view(&byte, 1));
        const auto total = static_cast<std::int64_t>(prompt.size() + seq->output.size());
        if (hit_stop) {
            finish(*seq, "stop");
        } else if (static_cast<std::int64_t>(seq->output.size()) >= seq->req.sampling.max_tokens ||
                   total >= cfg_.max_model_len) {
            finish(*seq, "length");
        } else if (std::string text = seq->stops.take_ready(); !text.empty()) {
            stream_event ev;
            ev.text = std::move(text);
            seq->stream->push(std::move(ev));
        }
    }
    std::erase_if(running_, [](const auto& seq) { return seq->stream == nullptr; });
}

void engine::finish(sequence& seq, const std::string& reason) {
    const auto now = engine_clock::now();
    stream_event ev;
    ev.text = seq.stops.take_all();
    ev.finished = true;
    ev.finish_reason = reason;
    ev.prompt_tokens = static_cast<std::int64_t>(seq.req.prompt.size());
    ev.completion_tokens = static_cast<std::int64_t>(seq.output.size());
    metrics_.success(reason).inc();
    if (reason != "abort")
        metrics_.e2e.observe(seconds_between(seq.req.arrival, now));
    seq.stream->push(std::move(ev));
    seq.stream = nullptr; // marks the sequence for removal
}

void engine::publish_gauges() {
    metrics_.running.set(static_cast<double>(running_.size()));
    metrics_.waiting.set(static_cast<double>(waiting_.size()));
    std::lock_guard lock(mutex_);
    snapshot_.running = static_cast<std::int64_t>(running_.size());
    snapshot_.waiting = static_cast<std::int64_t>(waiting_.size());
    snapshot_.prefix_cache_queries = static_cast<std::int64_t>(metrics_.prefix_queries.value());
    snapshot_.prefix_cache_hits = static_cast<std::int64_t>(metrics_.prefix_hits.value());
}

} // namespace lanes::replica

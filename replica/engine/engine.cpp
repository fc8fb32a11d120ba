#include "replica/engine/engine.hpp"

#include "common/log.hpp"
#include "common/prompt/utf8.hpp"
#include "replica/engine/sampler.hpp"
#include "replica/engine/stop_matcher.hpp"

#include <algorithm>
#include <iterator>
#include <stdexcept>

namespace lanes::replica {

namespace {

double seconds_between(engine_clock::time_point a, engine_clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

// How long the engine thread sleeps when it has sequences but could schedule none (cannot
// happen with valid limits; a bound against a busy loop all the same).
constexpr auto stalled_wait = std::chrono::milliseconds(5);

} // namespace

struct engine::live : sequence {
    engine_request req;
    std::shared_ptr<request_stream> stream;
    stop_matcher stops;
    vocabulary::text_stream text;
    engine_clock::time_point last_token{};
    engine_clock::time_point scheduled{};                // first admitted: its prefill begins
    std::vector<common::openai::token_logprob> logprobs; // not yet in an event
    bool done = false;

    live(engine_request r, std::shared_ptr<request_stream> s, const vocabulary& v)
        : req(std::move(r))
        , stream(std::move(s))
        , stops(req.sampling.stop)
        , text(v) {
        tokens = req.prompt;
        num_prompt = tokens.size();
        hash_root = req.hash_root;
    }
};

engine::engine(const replica_config& cfg, replica_metrics& metrics, std::unique_ptr<backend> b,
               engine_clock_fn clock)
    : cfg_(cfg)
    , metrics_(metrics)
    , backend_(std::move(b))
    , clock_(std::move(clock))
    , num_blocks_(static_cast<std::size_t>(cfg.kv_blocks))
    , blocks_(num_blocks_)
    , scheduler_(blocks_, {static_cast<std::size_t>(cfg.block_size),
                           static_cast<std::size_t>(cfg.max_num_seqs),
                           static_cast<std::size_t>(cfg.max_num_batched_tokens)}) {
    const model_config model = replica_model(cfg);
    LANES_LOG(info, "engine",
              "backend " << backend_->describe() << ", "
                         << (cfg.model.empty() ? "preset " + cfg.preset : "model " + cfg.model)
                         << " (" << model.parameter_count() / 1000 << "k parameters, "
                         << model.vocab << "-id vocabulary), " << num_blocks_ << " KV blocks of "
                         << cfg.block_size << " tokens");
    snapshot_.num_blocks = static_cast<std::int64_t>(num_blocks_);
    snapshot_.block_size = cfg.block_size;
}

engine::~engine() {
    stop();
}

std::size_t engine::max_sequence_tokens() const {
    return std::min<std::size_t>(static_cast<std::size_t>(cfg_.max_model_len),
                                 num_blocks_ * static_cast<std::size_t>(cfg_.block_size));
}

void engine::publish_kv_events(std::function<void(common::kv_events::batch)> sink,
                               bool clear_at_start) {
    kv_sink_ = std::move(sink);
    kv_clear_at_start_ = clear_at_start;
    blocks_.record_events(static_cast<std::size_t>(cfg_.block_size));
}

namespace {

double unix_seconds() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

} // namespace

void engine::start() {
    if (kv_sink_ && kv_clear_at_start_) {
        common::kv_events::batch first;
        first.ts = unix_seconds();
        first.events.emplace_back(common::kv_events::all_blocks_cleared{});
        first.data_parallel_rank = 0;
        kv_sink_(std::move(first));
        ++kv_batches_;
    }
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
        incoming_.push_back(std::make_unique<live>(std::move(req), std::move(stream), vocab_));
        ++snapshot_.waiting; // visible to /load at once
    }
    wake_.notify_all();
    return submit_status::accepted;
}

bool engine::request_kv_dump(std::function<void(kv_dump)> done) {
    if (!kv_sink_)
        return false;
    {
        std::lock_guard lock(mutex_);
        if (stopping_)
            return false;
        dump_waiters_.push_back(std::move(done));
    }
    wake_.notify_all();
    return true;
}

void engine::serve_kv_dumps() {
    std::vector<std::function<void(kv_dump)>> waiters;
    {
        std::lock_guard lock(mutex_);
        waiters.swap(dump_waiters_);
    }
    if (waiters.empty())
        return;
    kv_dump d{blocks_.dump(), kv_batches_};
    for (std::size_t i = 0; i + 1 < waiters.size(); ++i)
        waiters[i](d);
    waiters.back()(std::move(d));
}

load_snapshot engine::load() const {
    std::lock_guard lock(mutex_);
    return snapshot_;
}

void engine::run() {
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] {
                return stopping_ || !incoming_.empty() || !live_.empty() || !dump_waiters_.empty();
            });
            if (stopping_)
                break;
        }
        serve_kv_dumps();
        admit_incoming();
        drop_cancelled();
        step();
        publish_gauges();
    }
    serve_kv_dumps(); // none waits for a pause that will not come
    admit_incoming();
    for (auto& [id, seq] : live_)
        finish(*seq, finish_reason::abort);
    live_.clear();
    publish_gauges();
}

void engine::admit_incoming() {
    std::lock_guard lock(mutex_);
    while (!incoming_.empty()) {
        auto seq = std::move(incoming_.front());
        incoming_.pop_front();
        seq->id = next_id_++;
        scheduler_.add(seq.get());
        live_.emplace(seq->id, std::move(seq));
    }
}

void engine::drop_cancelled() {
    for (auto it = live_.begin(); it != live_.end();) {
        if (it->second->stream->cancelled()) {
            scheduler_.remove(it->second.get());
            finish(*it->second, finish_reason::abort);
            it = live_.erase(it);
        } else {
            ++it;
        }
    }
}

void engine::step() {
    const schedule_output plan = scheduler_.schedule();
    metrics_.preemptions.inc(static_cast<double>(plan.preempted.size()));
    const auto now = clock_();
    for (const auto& a : plan.admitted) {
        if (!a.first)
            continue;
        metrics_.prefix_queries.inc(static_cast<double>(a.query_tokens));
        metrics_.prefix_hits.inc(static_cast<double>(a.hit_tokens));
        auto& seq = *static_cast<live*>(a.seq);
        seq.scheduled = now;
        metrics_.queue_time.observe(seconds_between(seq.req.arrival, now));
    }
    if (plan.chunks.empty()) {
        std::unique_lock lock(mutex_);
        wake_.wait_for(lock, stalled_wait);
        return;
    }
    std::vector<batch_entry> batch;
    batch.reserve(plan.chunks.size());
    for (const auto& c : plan.chunks) {
        const sequence& s = *c.seq;
        batch_entry e;
        e.tokens = std::span(s.tokens).subspan(s.num_computed, c.num_tokens);
        e.start_pos = s.num_computed;
        e.block_table = s.blocks;
        e.want_logits = s.num_computed + c.num_tokens == s.tokens.size();
        batch.push_back(e);
    }
    logits_.clear();
    const bool has_logits = backend_->forward(batch, logits_);
    const auto done_at = clock_();
    std::size_t next_logits = 0;
    for (std::size_t i = 0; i < plan.chunks.size(); ++i) {
        auto& seq = *static_cast<live*>(plan.chunks[i].seq);
        scheduler_.on_computed(&seq, plan.chunks[i].num_tokens);
        if (!batch[i].want_logits)
            continue;
        const auto position = seq.tokens.size();
        const sampling_params& sp = seq.req.sampling;
        // min_tokens: EOS and the stop ids are out of the draw until enough are out (vLLM's
        // MinTokensLogitsProcessor).
        const bool early = static_cast<std::int64_t>(seq.num_generated()) < sp.min_tokens;
        const sample_options so{sp.temperature,
                                sp.top_p,
                                sp.seed,
                                !sp.ignore_eos && !early,
                                sp.top_k,
                                sp.min_p,
                                sp.repetition_penalty,
                                sp.presence_penalty,
                                sp.frequency_penalty};
        const std::span<const common::token_id> all(seq.tokens);
        const sample_context context{all.first(seq.num_prompt), all.subspan(seq.num_prompt),
                                     early ? std::span<const common::token_id>(sp.stop_token_ids)
                                           : std::span<const common::token_id>()};
        if (!has_logits) {
            emit_token(seq, vocab_.synthetic(sp.seed, position), done_at);
            continue;
        }
        const auto& logits = logits_[next_logits++];
        const common::token_id tok = sample(logits, so, position, &vocab_, context);
        if (sp.logprobs)
            seq.logprobs.push_back(logprobs_of(logits, tok, *sp.logprobs));
        emit_token(seq, tok, done_at);
    }
    for (auto it = live_.begin(); it != live_.end();) {
        if (it->second->done) {
            scheduler_.remove(it->second.get());
            it = live_.erase(it);
        } else {
            ++it;
        }
    }
    if (kv_sink_) {
        auto events = blocks_.take_events();
        if (!events.empty()) {
            common::kv_events::batch b;
            b.ts = unix_seconds();
            if (kv_batches_ == 0) // the stream's opening clear, not sent at start()
                b.events.emplace_back(common::kv_events::all_blocks_cleared{});
            std::move(events.begin(), events.end(), std::back_inserter(b.events));
            b.data_parallel_rank = 0;
            kv_sink_(std::move(b));
            ++kv_batches_;
        }
    }
}

void engine::emit_token(live& seq, common::token_id tok, engine_clock::time_point now) {
    seq.tokens.push_back(tok);
    metrics_.generation_tokens.inc();
    if (seq.num_generated() == 1) {
        metrics_.prompt_tokens.inc(static_cast<double>(seq.num_prompt));
        metrics_.ttft.observe(seconds_between(seq.req.arrival, now));
        metrics_.prefill_time.observe(seconds_between(seq.scheduled, now));
    } else {
        metrics_.itl.observe(seconds_between(seq.last_token, now));
    }
    seq.last_token = now;
    const sampling_params& sp = seq.req.sampling;
    const auto generated = static_cast<std::int64_t>(seq.num_generated());
    // As vLLM's check_stop: nothing but length ends an output shorter than min_tokens; a stop
    // id ends it with the id as stop_reason, and (as EOS) its text is left out.
    const bool may_stop = generated >= sp.min_tokens;
    const bool eos = vocab_.is_eos(tok);
    const bool stop_id = may_stop && std::find(sp.stop_token_ids.begin(), sp.stop_token_ids.end(),
                                               tok) != sp.stop_token_ids.end();
    bool stop = (eos && !sp.ignore_eos && may_stop) || stop_id;
    if (!eos && !stop_id) // stop strings only past min_tokens (vLLM's detokenizer)
        stop = seq.stops.append(seq.text.push(tok), generated > sp.min_tokens);
    if (stop)
        return finish(seq, finish_reason::stop,
                      stop_id ? std::optional<common::token_id>(tok) : std::nullopt);
    if (generated >= sp.max_tokens || seq.tokens.size() >= max_sequence_tokens())
        return finish(seq, finish_reason::length);
    std::string text = seq.stops.take_ready();
    if (!text.empty() || !seq.logprobs.empty()) {
        stream_event ev;
        ev.text = std::move(text);
        ev.logprobs = std::move(seq.logprobs);
        seq.logprobs.clear();
        seq.stream->push(std::move(ev));
    }
}

common::openai::token_logprob engine::logprobs_of(std::span<const float> logits,
                                                  common::token_id tok, std::size_t top) const {
    const auto text = [this](common::token_id id) {
        if (const auto* model = vocab_.model()) // special tokens as their content, as vLLM
            return model->decode(std::span(&id, 1), false);
        return id < 256 ? common::utf8_lossy(std::string(1, static_cast<char>(id))) : std::string();
    };
    const token_logprobs raw = raw_logprobs(logits, tok, top);
    common::openai::token_logprob out;
    out.chosen = {text(tok), raw.chosen};
    // vLLM's per-position dict: the chosen token, then the top ones by rank.
    out.alternatives.push_back(out.chosen);
    for (const auto& [id, logprob] : raw.top)
        if (id != tok && out.alternatives.size() < top + 1)
            out.alternatives.push_back({text(id), logprob});
    return out;
}

void engine::finish(live& seq, finish_reason reason, std::optional<common::token_id> stop_token) {
    if (seq.done)
        return;
    seq.done = true;
    stream_event ev;
    if (!seq.stops.matched())
        seq.stops.append(seq.text.finish()); // bytes of a sequence the end cut short
    ev.text = seq.stops.take_all();
    ev.logprobs = std::move(seq.logprobs);
    ev.finished = true;
    ev.finish = reason;
    if (reason == finish_reason::stop) // null when EOS ended it
        ev.stop_reason = seq.stops.matched();
    if (stop_token)
        ev.stop_reason.token = *stop_token;
    ev.prompt_tokens = static_cast<std::int64_t>(seq.num_prompt);
    ev.completion_tokens = static_cast<std::int64_t>(seq.num_generated());
    ev.cached_tokens = static_cast<std::int64_t>(seq.cached_tokens);
    metrics_.success(std::string(to_string(reason))).inc();
    if (reason != finish_reason::abort)
        metrics_.e2e.observe(seconds_between(seq.req.arrival, clock_()));
    seq.stream->push(std::move(ev));
}

void engine::publish_gauges() {
    const auto running = static_cast<std::int64_t>(scheduler_.num_running());
    const auto waiting = static_cast<std::int64_t>(scheduler_.num_waiting());
    metrics_.running.set(static_cast<double>(running));
    metrics_.waiting.set(static_cast<double>(waiting));
    metrics_.kv_usage.set(blocks_.usage());
    std::lock_guard lock(mutex_);
    snapshot_.running = running;
    snapshot_.waiting = waiting + static_cast<std::int64_t>(incoming_.size());
    snapshot_.kv_usage = blocks_.usage();
    snapshot_.prefix_cache_queries = static_cast<std::int64_t>(metrics_.prefix_queries.value());
    snapshot_.prefix_cache_hits = static_cast<std::int64_t>(metrics_.prefix_hits.value());
}

} // namespace lanes::replica

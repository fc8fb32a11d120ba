#include "bench/sim/sim_replica.hpp"

#include "replica/backends/sim_backend.hpp"
#include "replica/engine/sampler.hpp"

#include <algorithm>

namespace lanes::bench::sim {

sim_replica::sim_replica(const replica_model& model)
    : model_(model)
    , blocks_(model.num_blocks)
    , scheduler_(blocks_, {model.block_size, model.max_num_seqs, model.max_num_batched_tokens}) {}

std::size_t sim_replica::max_sequence_tokens() const {
    return std::min(model_.max_model_len, model_.num_blocks * model_.block_size);
}

void sim_replica::submit(std::uint64_t request, std::vector<common::token_id> prompt,
                         std::size_t max_tokens, double now) {
    auto s = std::make_unique<seq>();
    s->arrived = now;
    s->request = request;
    s->max_tokens = std::max<std::size_t>(max_tokens, 1);
    s->tokens = std::move(prompt);
    s->num_prompt = s->tokens.size();
    incoming_.push_back(std::move(s));
}

std::optional<double> sim_replica::start_step(double now) {
    if (stepping_)
        return std::nullopt;
    while (!incoming_.empty()) {
        auto s = std::move(incoming_.front());
        incoming_.pop_front();
        s->id = next_id_++;
        scheduler_.add(s.get());
        live_.emplace(s->id, std::move(s));
    }
    if (live_.empty())
        return std::nullopt;
    plan_ = scheduler_.schedule();
    preemptions_ += static_cast<std::int64_t>(plan_.preempted.size());
    for (const auto& a : plan_.admitted) {
        if (!a.first)
            continue;
        auto& admitted = *static_cast<seq*>(a.seq);
        admitted.scheduled = now;
        queue_seconds_ += now - admitted.arrived;
        queued_ += 1;
        queries_ += static_cast<double>(a.query_tokens);
        hits_ += static_cast<double>(a.hit_tokens);
    }
    if (plan_.chunks.empty())
        return std::nullopt; // cannot happen with valid limits (the engine waits 5 ms then)
    std::vector<replica::batch_entry> batch;
    batch.reserve(plan_.chunks.size());
    for (const auto& c : plan_.chunks) {
        const replica::sequence& s = *c.seq;
        replica::batch_entry e;
        e.tokens = std::span(s.tokens).subspan(s.num_computed, c.num_tokens);
        e.start_pos = s.num_computed;
        e.block_table = s.blocks;
        e.want_logits = s.num_computed + c.num_tokens == s.tokens.size();
        batch.push_back(e);
    }
    const auto ms =
        replica::sim_step_time(model_.cost, batch, model_.num_blocks * model_.block_size);
    stepping_ = true;
    ++steps_;
    step_start_ = now;
    step_end_ = now + ms.count() / 1000.0;
    return step_end_;
}

void sim_replica::finish_step(std::vector<token_event>& out) {
    if (!stepping_)
        return;
    stepping_ = false;
    for (const auto& c : plan_.chunks) {
        auto& s = *static_cast<seq*>(c.seq);
        const bool emits = s.num_computed + c.num_tokens == s.tokens.size();
        scheduler_.on_computed(&s, c.num_tokens);
        if (!emits)
            continue;
        s.tokens.push_back(replica::synthetic_token(s.request, s.tokens.size()));
        token_event ev{s.request, s.num_generated() == 1, false, s.cached_tokens};
        if (ev.first) {
            prefill_seconds_ += step_end_ - s.scheduled;
            prefills_ += 1;
            prompt_tokens_ += static_cast<double>(s.num_prompt);
        }
        if (s.num_generated() >= s.max_tokens || s.tokens.size() >= max_sequence_tokens()) {
            ev.finished = true;
            finished_ += 1;
            scheduler_.remove(&s);
            live_.erase(s.id);
        }
        out.push_back(ev);
    }
    plan_ = {};
}

replica_load sim_replica::load() const {
    return {blocks_.usage(), static_cast<std::int64_t>(scheduler_.num_running()),
            static_cast<std::int64_t>(scheduler_.num_waiting() + incoming_.size())};
}

} // namespace lanes::bench::sim

#include "replica/engine/sampler.hpp"

#include "replica/engine/vocabulary.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace lanes::replica {

namespace {

std::uint64_t mix(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// Above this many candidates, sampling without top-p skips the sort (byte vocabularies stay on
// the sorted path, which keeps their draws as they were).
constexpr std::size_t large_vocabulary = 4096;

double unit_draw(std::uint64_t seed, std::uint64_t position) {
    return static_cast<double>(mix(mix(seed) ^ position) >> 11) * (1.0 / 9007199254740992.0);
}

} // namespace

bool sampleable(common::token_id id, bool allow_eos) {
    if (id == common::eos_token)
        return allow_eos;
    return (id >= 0x20 && id <= 0x7e) || id == '\n';
}

void apply_penalties(std::vector<float>& logits, const sample_options& o, const sample_context& c) {
    const auto in_range = [&](common::token_id id) { return id < logits.size(); };
    if (o.repetition_penalty != 1.0) {
        std::vector<common::token_id> seen(c.prompt.begin(), c.prompt.end());
        seen.insert(seen.end(), c.output.begin(), c.output.end());
        std::sort(seen.begin(), seen.end());
        seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
        const auto penalty = static_cast<float>(o.repetition_penalty);
        for (const common::token_id id : seen) {
            if (!in_range(id))
                continue;
            float& l = logits[id];
            l = l > 0 ? l / penalty : l * penalty;
        }
    }
    if (o.presence_penalty == 0.0 && o.frequency_penalty == 0.0)
        return;
    std::vector<common::token_id> out(c.output.begin(), c.output.end());
    std::sort(out.begin(), out.end());
    for (std::size_t i = 0; i < out.size();) {
        std::size_t j = i;
        while (j < out.size() && out[j] == out[i])
            ++j;
        if (in_range(out[i]))
            logits[out[i]] -= static_cast<float>(o.frequency_penalty * static_cast<double>(j - i) +
                                                 o.presence_penalty);
        i = j;
    }
}

common::token_id sample(std::span<const float> logits, const sample_options& o,
                        std::uint64_t position, const vocabulary* vocab, const sample_context& c) {
    // Penalties and barred ids change a copy; without them the logits are read as they are.
    std::vector<float> adjusted;
    const bool penalize =
        o.repetition_penalty != 1.0 || o.presence_penalty != 0.0 || o.frequency_penalty != 0.0;
    if (penalize || !c.barred.empty()) {
        adjusted.assign(logits.begin(), logits.end());
        if (penalize)
            apply_penalties(adjusted, o, c);
        for (const common::token_id id : c.barred)
            if (id < adjusted.size())
                adjusted[id] = -std::numeric_limits<float>::infinity();
        logits = adjusted;
    }
    struct cand {
        common::token_id id;
        float logit;
    };
    std::vector<cand> cands;
    cands.reserve(logits.size());
    for (std::size_t i = 0; i < logits.size(); ++i) {
        const auto id = static_cast<common::token_id>(i);
        const bool drawable =
            vocab != nullptr ? vocab->sampleable(id, o.allow_eos) : sampleable(id, o.allow_eos);
        if (drawable && std::isfinite(logits[i]))
            cands.push_back({id, logits[i]});
    }
    if (cands.empty())
        return vocab != nullptr ? vocab->synthetic(o.seed, position)
                                : synthetic_token(o.seed, position);
    const auto by_logit = [](const cand& a, const cand& b) { return a.logit < b.logit; };
    if (o.temperature <= 1e-6) // greedy; ties go to the lower id
        return std::max_element(cands.begin(), cands.end(), by_logit)->id;
    if (o.min_p > 0.0) {
        // min-p: drop what is less likely than min_p times the likeliest, at the temperature.
        const float top = std::max_element(cands.begin(), cands.end(), by_logit)->logit;
        std::erase_if(cands, [&](const cand& x) {
            return std::exp((x.logit - top) / o.temperature) < o.min_p;
        });
    }
    const bool top_k = o.top_k > 0 && static_cast<std::size_t>(o.top_k) < cands.size();
    if (o.top_p >= 1.0 && !top_k && cands.size() > large_vocabulary) {
        // No nucleus to cut: draw from the whole softmax in id order, without sorting a model
        // vocabulary's 100k+ candidates for every token.
        const float top = std::max_element(cands.begin(), cands.end(), by_logit)->logit;
        double total = 0.0;
        std::vector<double> weights(cands.size());
        for (std::size_t i = 0; i < cands.size(); ++i) {
            weights[i] = std::exp((cands[i].logit - top) / o.temperature);
            total += weights[i];
        }
        double u = unit_draw(o.seed, position) * total;
        for (std::size_t i = 0; i < cands.size(); ++i) {
            u -= weights[i];
            if (u < 0)
                return cands[i].id;
        }
        return cands.back().id;
    }
    const auto before = [](const cand& a, const cand& b) {
        return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    };
    if (top_k) { // top-k: the k likeliest, then top-p among them (as vLLM's apply_top_k_top_p)
        const auto k = static_cast<std::size_t>(o.top_k);
        std::partial_sort(cands.begin(), cands.begin() + static_cast<std::ptrdiff_t>(k),
                          cands.end(), before);
        cands.resize(k);
    } else {
        std::sort(cands.begin(), cands.end(), before);
    }
    std::vector<double> probs(cands.size());
    double total = 0.0;
    for (std::size_t i = 0; i < cands.size(); ++i) {
        probs[i] = std::exp((cands[i].logit - cands[0].logit) / o.temperature);
        total += probs[i];
    }
    // Nucleus: keep the smallest prefix whose mass reaches top_p.
    std::size_t keep = cands.size();
    double mass = 0.0;
    for (std::size_t i = 0; i < cands.size(); ++i) {
        mass += probs[i] / total;
        if (mass >= o.top_p) {
            keep = i + 1;
            break;
        }
    }
    double kept_total = 0.0;
    for (std::size_t i = 0; i < keep; ++i)
        kept_total += probs[i];
    double u = unit_draw(o.seed, position) * kept_total;
    for (std::size_t i = 0; i < keep; ++i) {
        u -= probs[i];
        if (u < 0)
            return cands[i].id;
    }
    return cands[keep - 1].id;
}

token_logprobs raw_logprobs(std::span<const float> logits, common::token_id chosen,
                            std::size_t top) {
    token_logprobs out;
    double peak = -std::numeric_limits<double>::infinity();
    for (const float l : logits)
        peak = std::max(peak, static_cast<double>(l));
    double sum = 0.0;
    if (std::isfinite(peak))
        for (const float l : logits)
            sum += std::exp(static_cast<double>(l) - peak);
    const double log_total = std::isfinite(peak) ? peak + std::log(sum) : 0.0;
    const auto logprob = [&](common::token_id id) {
        return id < logits.size() ? static_cast<double>(logits[id]) - log_total
                                  : -std::numeric_limits<double>::infinity();
    };
    out.chosen = logprob(chosen);
    top = std::min(top, logits.size());
    if (top == 0)
        return out;
    std::vector<common::token_id> ids(logits.size());
    for (std::size_t i = 0; i < ids.size(); ++i)
        ids[i] = static_cast<common::token_id>(i);
    const auto key = [&](common::token_id id) { // NaN last: the order stays strict and weak
        return std::isnan(logits[id]) ? -std::numeric_limits<float>::infinity() : logits[id];
    };
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(top), ids.end(),
                      [&](common::token_id a, common::token_id b) {
                          return key(a) > key(b) || (key(a) == key(b) && a < b);
                      });
    for (std::size_t i = 0; i < top; ++i)
        out.top.emplace_back(ids[i], logprob(ids[i]));
    return out;
}

common::token_id synthetic_token(std::uint64_t seed, std::uint64_t position) {
    static constexpr char alphabet[] = "etaoin shrdlu cmfwyp vbgkqjxz ETAOIN SHRDLU.,\n";
    return static_cast<unsigned char>(alphabet[mix(seed ^ mix(position)) % (sizeof alphabet - 1)]);
}

} // namespace lanes::replica

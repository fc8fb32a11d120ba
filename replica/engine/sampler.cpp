#include "replica/engine/sampler.hpp"

#include "replica/engine/vocabulary.hpp"

#include <algorithm>
#include <cmath>
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

common::token_id sample(std::span<const float> logits, const sample_options& o,
                        std::uint64_t position, const vocabulary* vocab) {
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
    if (o.temperature <= 1e-6) { // greedy; ties go to the lower id
        return std::max_element(cands.begin(), cands.end(),
                                [](const cand& a, const cand& b) { return a.logit < b.logit; })
            ->id;
    }
    if (o.top_p >= 1.0 && cands.size() > large_vocabulary) {
        // No nucleus to cut: draw from the whole softmax in id order, without sorting a model
        // vocabulary's 100k+ candidates for every token.
        const float top =
            std::max_element(cands.begin(), cands.end(), [](const cand& a, const cand& b) {
                return a.logit < b.logit;
            })->logit;
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
    std::sort(cands.begin(), cands.end(), [](const cand& a, const cand& b) {
        return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
    });
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

common::token_id synthetic_token(std::uint64_t seed, std::uint64_t position) {
    static constexpr char alphabet[] = "etaoin shrdlu cmfwyp vbgkqjxz ETAOIN SHRDLU.,\n";
    return static_cast<unsigned char>(alphabet[mix(seed ^ mix(position)) % (sizeof alphabet - 1)]);
}

} // namespace lanes::replica

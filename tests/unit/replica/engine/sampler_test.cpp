// Sampling restricted to printable text: greedy at temperature 0, softmax with nucleus truncation
// otherwise, a draw that depends only on (seed, position), and the synthetic tokens of the sim
// backend.
#include "replica/engine/sampler.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <vector>

using namespace lanes;
using namespace lanes::replica;

namespace {

constexpr float minus_inf = -std::numeric_limits<float>::infinity();

// Logits where only the given tokens are finite: every other one is out of the draw.
std::vector<float> only(std::initializer_list<std::pair<char, float>> tokens) {
    std::vector<float> l(common::vocab_size, minus_inf);
    for (const auto& [c, v] : tokens)
        l[static_cast<unsigned char>(c)] = v;
    return l;
}

// How often `token` is drawn over positions 0..n-1.
double frequency(const std::vector<float>& logits, const sample_options& o, common::token_id token,
                 int n) {
    int hits = 0;
    for (int p = 0; p < n; ++p)
        hits += sample(logits, o, static_cast<std::uint64_t>(p)) == token;
    return static_cast<double>(hits) / n;
}

bool in_text(common::token_id t) {
    return (t >= 0x20 && t <= 0x7e) || t == '\n';
}

} // namespace

TEST_CASE("sampleable: printable ASCII and newline, EOS only when allowed", "[sampler]") {
    CHECK(sampleable(' ', false));
    CHECK(sampleable('~', false));
    CHECK(sampleable('A', false));
    CHECK(sampleable('\n', false));
    CHECK_FALSE(sampleable('\t', true)); // unlike common::is_printable: no tabs in output
    CHECK_FALSE(sampleable(0x1f, true));
    CHECK_FALSE(sampleable(0x7f, true));
    CHECK_FALSE(sampleable(0x80, true));
    CHECK_FALSE(sampleable(0xff, true));
    CHECK_FALSE(sampleable(common::bos_token, true));
    CHECK(sampleable(common::eos_token, true));
    CHECK_FALSE(sampleable(common::eos_token, false));
}

TEST_CASE("greedy at temperature 0: the argmax among sampleable finite tokens", "[sampler]") {
    std::vector<float> l(common::vocab_size, 0.0f);
    l[200] = 10; // not text
    l['\t'] = 9;
    l[common::bos_token] = 9;
    l['q'] = 5;
    l['z'] = 4;
    const sample_options greedy{0.0, 1.0, 1, true};
    CHECK(sample(l, greedy, 0) == 'q');
    CHECK(sample(l, greedy, 12345) == 'q'); // no draw: the position does not matter
    l['b'] = 5;                             // a tie goes to the lower id
    CHECK(sample(l, greedy, 0) == 'b');
    l[common::eos_token] = 6;
    CHECK(sample(l, greedy, 0) == common::eos_token);
    CHECK(sample(l, {0.0, 1.0, 1, false}, 0) == 'b'); // ignore_eos
    l['b'] = std::numeric_limits<float>::infinity();  // non-finite logits are skipped
    l['q'] = std::numeric_limits<float>::quiet_NaN();
    CHECK(sample(l, {0.0, 1.0, 1, false}, 0) == 'z');
    CHECK(sample(l, {1e-7, 1.0, 1, false}, 0) == 'z'); // at or below 1e-6: still greedy
    // Nothing sampleable: the synthetic token of (seed, position).
    const std::vector<float> none(common::vocab_size, minus_inf);
    CHECK(sample(none, {0.0, 1.0, 3, true}, 17) == synthetic_token(3, 17));
    CHECK(sample(none, {1.0, 1.0, 3, true}, 17) == synthetic_token(3, 17));
}

TEST_CASE("sampling never draws a token outside text, however likely", "[sampler]") {
    std::vector<float> l(common::vocab_size, 0.0f);
    for (common::token_id t : {0U, 9U, 0x7fU, 0x80U, 200U, 255U, common::bos_token})
        l[t] = 50; // e^50 times as likely as any text token, were they allowed
    const sample_options o{1.0, 1.0, 11, false};
    for (std::uint64_t p = 0; p < 2000; ++p) {
        const auto t = sample(l, o, p);
        REQUIRE(in_text(t));
    }
}

TEST_CASE("the draw depends only on (seed, position)", "[sampler]") {
    std::vector<float> l(common::vocab_size, 0.0f);
    l['e'] = 3;
    const sample_options a{0.9, 0.95, 1, true}, b{0.9, 0.95, 2, true};
    int differ = 0;
    for (std::uint64_t p = 0; p < 100; ++p) {
        REQUIRE(sample(l, a, p) == sample(l, a, p));
        differ += sample(l, a, p) != sample(l, b, p);
    }
    CHECK(differ > 50); // another seed is another text (93 of 100 for seeds 1 and 2)
    int moves = 0;      // and the position moves the draw
    for (std::uint64_t p = 1; p < 100; ++p)
        moves += sample(l, a, p) != sample(l, a, p - 1);
    CHECK(moves > 50);
}

TEST_CASE("top_p keeps the smallest prefix whose mass reaches it", "[sampler]") {
    // Softmax of (2, 1, 0): a 0.665, b 0.245, c 0.090.
    const auto l = only({{'a', 2.0f}, {'b', 1.0f}, {'c', 0.0f}});
    std::map<common::token_id, int> half, most, all;
    for (std::uint64_t p = 0; p < 2000; ++p) {
        ++half[sample(l, {1.0, 0.5, 99, true}, p)];
        ++most[sample(l, {1.0, 0.8, 99, true}, p)];
        ++all[sample(l, {1.0, 1.0, 99, true}, p)];
    }
    CHECK(half.size() == 1); // 0.665 >= 0.5: only a
    CHECK(half['a'] == 2000);
    REQUIRE(most.size() == 2); // 0.665 < 0.8 <= 0.910: a and b
    CHECK(most.count('c') == 0);
    // Renormalized over the two: b has 1 / (e + 1) = 0.269 (2000 draws: within 0.04).
    CHECK(most['b'] / 2000.0 == Approx(0.2689).margin(0.04));
    CHECK(all.size() == 3);
    CHECK(all['c'] / 2000.0 == Approx(0.0900).margin(0.03));
    // top_p exactly the first token's mass keeps it alone.
    const auto even = only({{'a', 0.0f}, {'b', 0.0f}});
    CHECK(frequency(even, {1.0, 0.5, 4, true}, 'a', 500) == 1.0);
}

TEST_CASE("temperature 1 draws with softmax probability (seed 123, 20000 draws, +-0.015)",
          "[sampler]") {
    // Four candidates, one with logit 2: p = e^2 / (e^2 + 3) = 0.7112. The standard error of a
    // frequency over 20000 draws is 0.0032, so 0.015 is over 4.5 of them.
    const auto l = only({{'x', 2.0f}, {'y', 0.0f}, {'z', 0.0f}, {'w', 0.0f}});
    CHECK(frequency(l, {1.0, 1.0, 123, true}, 'x', 20000) == Approx(0.7112).margin(0.015));
    CHECK(frequency(l, {1.0, 1.0, 123, true}, 'y', 20000) == Approx(0.0963).margin(0.015));
    // Temperature 2 halves the logits: e / (e + 3) = 0.4754.
    CHECK(frequency(l, {2.0, 1.0, 123, true}, 'x', 20000) == Approx(0.4754).margin(0.015));
    // Over the whole vocabulary only the 95 printable, newline and EOS share the rest: e^3 / (e^3 +
    // 96) = 0.1730 for 'e', 1 / (e^3 + 96) = 0.0086 for EOS.
    std::vector<float> full(common::vocab_size, 0.0f);
    full['e'] = 3;
    CHECK(frequency(full, {1.0, 1.0, 7, true}, 'e', 20000) == Approx(0.1730).margin(0.015));
    CHECK(frequency(full, {1.0, 1.0, 7, true}, common::eos_token, 20000) ==
          Approx(0.0086).margin(0.004));
}

TEST_CASE("synthetic_token: text from a fixed alphabet, deterministic in (seed, position)",
          "[sampler]") {
    const std::string alphabet = "etaoin shrdlu cmfwyp vbgkqjxz ETAOIN SHRDLU.,\n";
    std::set<common::token_id> seen;
    int differ = 0;
    for (std::uint64_t p = 0; p < 1000; ++p) {
        const auto t = synthetic_token(1, p);
        REQUIRE(t == synthetic_token(1, p));
        REQUIRE(alphabet.find(static_cast<char>(t)) != std::string::npos);
        seen.insert(t);
        differ += t != synthetic_token(2, p);
    }
    CHECK(seen.size() == 42); // every distinct character of the alphabet turns up
    CHECK(seen.count('\n') == 1);
    CHECK(differ > 900); // 1 - 1/42 of positions, about
}

TEST_CASE("repetition_penalty divides positive logits of prompt and output tokens, multiplies "
          "the others",
          "[sampler]") {
    std::vector<float> l = only({{'a', 2.0f}, {'b', -1.0f}, {'c', 1.5f}, {'d', -1.5f}});
    const std::vector<common::token_id> prompt = {'a'}, output = {'b'};
    sample_options o;
    o.repetition_penalty = 2.0;
    apply_penalties(l, o, {prompt, output, {}});
    CHECK(l['a'] == 1.0f);  // 2.0 / 2
    CHECK(l['b'] == -2.0f); // -1.0 * 2
    CHECK(l['c'] == 1.5f);  // in neither
    CHECK(l['d'] == -1.5f);
    // Greedy after penalties: 'a' (2.0) would win; penalized (1.0), 'c' (1.5) does.
    const std::vector<float> raw = only({{'a', 2.0f}, {'c', 1.5f}});
    const sample_options greedy{0.0, 1.0, 1, false};
    CHECK(sample(raw, greedy, 0) == 'a');
    sample_options penalized = greedy;
    penalized.repetition_penalty = 2.0;
    CHECK(sample(raw, penalized, 0, nullptr, {prompt, {}, {}}) == 'c');
    CHECK(sample(raw, penalized, 0, nullptr, {{}, prompt, {}}) == 'c'); // output tokens too
}

TEST_CASE("presence and frequency penalties count output tokens only", "[sampler]") {
    const std::vector<float> raw = only({{'a', 2.0f}, {'b', 1.0f}});
    const std::vector<common::token_id> three_a = {'a', 'a', 'a'}, one_a = {'a'},
                                        two_a = {'a', 'a'};
    sample_options o{0.0, 1.0, 1, false};
    o.presence_penalty = 1.5;
    CHECK(sample(raw, o, 0, nullptr, {three_a, {}, {}}) == 'a'); // the prompt does not count
    CHECK(sample(raw, o, 0, nullptr, {{}, one_a, {}}) == 'b');   // 2.0 - 1.5 = 0.5 < 1.0
    o.presence_penalty = 0.0;
    o.frequency_penalty = 0.6;
    CHECK(sample(raw, o, 0, nullptr, {{}, one_a, {}}) == 'a'); // 2.0 - 0.6 = 1.4
    CHECK(sample(raw, o, 0, nullptr, {{}, two_a, {}}) == 'b'); // 2.0 - 1.2 = 0.8
    std::vector<float> l = raw;
    o.presence_penalty = -0.5; // negative penalties favour what was said
    apply_penalties(l, o, {three_a, two_a, {}});
    CHECK(l['a'] == Approx(2.0 - 1.2 + 0.5));
    CHECK(l['b'] == 1.0f);
}

TEST_CASE("min_p drops what is less likely than min_p times the likeliest", "[sampler]") {
    // Probabilities relative to 'a': 1, 0.5, 0.05.
    const std::vector<float> l = only({{'a', 0.0f}, {'b', std::log(0.5f)}, {'c', std::log(0.05f)}});
    sample_options o{1.0, 1.0, 3, false};
    CHECK(frequency(l, o, 'c', 4000) > 0.01); // 0.05 / 1.55, about 3%
    o.min_p = 0.1;
    CHECK(frequency(l, o, 'c', 4000) == 0.0);
    CHECK(frequency(l, o, 'b', 4000) == Approx(0.5 / 1.5).margin(0.03));
}

TEST_CASE("top_k keeps the k likeliest, and top_p then cuts among them", "[sampler]") {
    // Probabilities 0.5, 0.3, 0.2.
    const std::vector<float> l =
        only({{'a', std::log(0.5f)}, {'b', std::log(0.3f)}, {'c', std::log(0.2f)}});
    sample_options o{1.0, 1.0, 5, false};
    o.top_k = 1;
    CHECK(frequency(l, o, 'a', 500) == 1.0);
    o.top_k = 2;
    CHECK(frequency(l, o, 'c', 4000) == 0.0);
    CHECK(frequency(l, o, 'b', 4000) == Approx(0.3 / 0.8).margin(0.03));
    // top_p 0.6 over all three keeps a and b (0.5 < 0.6 <= 0.8); over the top 2, renormalized
    // (0.625, 0.375), a alone reaches it.
    o.top_k = 0;
    o.top_p = 0.6;
    CHECK(frequency(l, o, 'b', 4000) > 0.2);
    o.top_k = 2;
    CHECK(frequency(l, o, 'b', 4000) == 0.0);
}

TEST_CASE("barred ids are never drawn (stop_token_ids before min_tokens)", "[sampler]") {
    const std::vector<float> l = only({{'a', 3.0f}, {'b', 1.0f}});
    const std::vector<common::token_id> barred = {'a'};
    CHECK(sample(l, {0.0, 1.0, 1, false}, 0, nullptr, {{}, {}, barred}) == 'b');
    CHECK(frequency(l, {1.0, 1.0, 1, false}, 'a', 200) > 0.5);
    for (std::uint64_t p = 0; p < 200; ++p)
        REQUIRE(sample(l, {1.0, 1.0, 1, false}, p, nullptr, {{}, {}, barred}) == 'b');
}

TEST_CASE("raw_logprobs is the log-softmax of the raw logits", "[sampler]") {
    const std::vector<float> l = {1.0f, 3.0f, 2.0f, minus_inf};
    const double log_total = std::log(std::exp(1.0) + std::exp(3.0) + std::exp(2.0));
    const auto lp = raw_logprobs(l, 0, 2);
    CHECK(lp.chosen == Approx(1.0 - log_total));
    REQUIRE(lp.top.size() == 2);
    CHECK(lp.top[0].first == 1);
    CHECK(lp.top[0].second == Approx(3.0 - log_total));
    CHECK(lp.top[1].first == 2);
    CHECK(lp.top[1].second == Approx(2.0 - log_total));
    CHECK(std::isinf(raw_logprobs(l, 3, 0).chosen));
    CHECK(raw_logprobs(l, 1, 10).top.size() == 4); // at most the vocabulary
    CHECK(raw_logprobs(l, 1, 0).top.empty());
}

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

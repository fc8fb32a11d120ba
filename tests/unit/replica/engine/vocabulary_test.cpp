// The engine's vocabulary: the byte vocabulary as before, or a model's (the tiny test
// tokenizer): what may be drawn, what ends a sequence, and text that never splits a character.
#include "replica/engine/vocabulary.hpp"

#include "replica/engine/sampler.hpp"

#include <catch2/catch.hpp>

#include <vector>

using namespace lanes;
using namespace lanes::replica;

namespace {

const std::string tiny_dir = std::string(LANES_SOURCE_DIR) + "/tests/fixtures/tokenizer-tiny";

} // namespace

TEST_CASE("vocabulary: the byte vocabulary is the sampler's", "[vocabulary]") {
    const vocabulary bytes;
    CHECK(bytes.size() == common::vocab_size);
    CHECK(bytes.is_eos(common::eos_token));
    for (common::token_id id = 0; id < common::vocab_size; ++id) {
        CHECK(bytes.sampleable(id, true) == sampleable(id, true));
        CHECK(bytes.sampleable(id, false) == sampleable(id, false));
    }
    CHECK(bytes.synthetic(3, 17) == synthetic_token(3, 17));
    vocabulary::text_stream text(bytes);
    CHECK(text.push('a') == "a");
    CHECK(text.finish().empty());
}

TEST_CASE("vocabulary: a model's ids, end ids and streamed text", "[vocabulary]") {
    const vocabulary v(common::model_tokenizer::load(tiny_dir));
    REQUIRE(v.size() == 439);
    CHECK(v.is_eos(438)); // <|im_end|>
    CHECK(v.is_eos(436)); // generation_config's other end id
    CHECK(v.sampleable(438, true));
    CHECK_FALSE(v.sampleable(438, false));
    CHECK_FALSE(v.sampleable(437, true)); // <|im_start|>: special, never drawn
    CHECK(v.sampleable(300, false));
    CHECK_FALSE(v.sampleable(439, true)); // past the vocabulary
    // The sim backend's synthetic ids spell the same letters as in the byte vocabulary.
    const auto& bpe = v.model()->bpe();
    for (std::uint64_t p = 0; p < 50; ++p) {
        const auto id = v.synthetic(9, p);
        CHECK(bpe.decode(std::vector<common::token_id>{id}) ==
              std::string(1, static_cast<char>(synthetic_token(9, p))));
    }
    // A two-byte character split over two byte tokens comes out whole, once.
    const std::vector<common::token_id> ids = bpe.encode("caf\xc3\xa9!", false);
    vocabulary::text_stream text(v);
    std::string out;
    for (const auto id : ids) {
        const std::string piece = text.push(id);
        const bool whole =
            piece.find('\xc3') == std::string::npos || piece.find('\xa9') != std::string::npos;
        CHECK(whole);
        out += piece;
    }
    out += text.finish();
    CHECK(out == "caf\xc3\xa9!");
}

TEST_CASE("sampler: a model vocabulary draws over all of it, specials aside", "[vocabulary]") {
    const vocabulary v(common::model_tokenizer::load(tiny_dir));
    std::vector<float> logits(v.size(), 0.0f);
    logits[437] = 50.0f; // a special token: never drawn, whatever its logit
    logits[438] = 40.0f; // the end token: drawn when allowed
    CHECK(sample(logits, {0.0, 1.0, 1, true}, 0, &v) == 438);
    CHECK(sample(logits, {0.0, 1.0, 1, false}, 0, &v) != 438);
    logits[438] = 0.0f;
    std::vector<int> seen(v.size(), 0);
    for (std::uint64_t p = 0; p < 4000; ++p)
        ++seen[sample(logits, {1.0, 1.0, 5, false}, p, &v)];
    CHECK(seen[437] == 0);
    int distinct = 0;
    for (const int n : seen)
        distinct += n > 0 ? 1 : 0;
    CHECK(distinct > 300); // uniform logits: most of the 436 drawable ids within 4000 draws
}

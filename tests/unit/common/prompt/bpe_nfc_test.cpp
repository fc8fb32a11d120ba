// The tokenizer's NFC shortcut (bpe_tokenizer_impl.hpp): normalizing only the non-ASCII
// stretches gives what normalizing the whole text gives.
#include "common/prompt/bpe_tokenizer_impl.hpp"

#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

TEST_CASE("bpe tokenizer: NFC of the non-ASCII stretches is NFC of the whole", "[bpe]") {
    // ASCII letters that compose with a following mark, marks in both canonical orders,
    // precomposed letters, Hangul jamo that compose into syllables, and CJK.
    const std::vector<std::string> pieces = {"e",
                                             "a",
                                             " ",
                                             "x",
                                             "\xcc\x81" /* U+0301 */,
                                             "\xcc\xa3" /* U+0323 */,
                                             "\xc3\xa9" /* é */,
                                             "\xe1\x84\x80" /* U+1100 */,
                                             "\xe1\x85\xa1" /* U+1161 */,
                                             "\xe1\x86\xa8" /* U+11A8 */,
                                             "\xe4\xb8\x96" /* 世 */,
                                             "\xe2\x80\x94" /* — */,
                                             "\n",
                                             "A\xcc\x8a" /* A + ring */};
    std::mt19937 rng(5);
    for (int n = 0; n < 2000; ++n) {
        std::string text;
        const int len = static_cast<int>(rng() % 12);
        for (int i = 0; i < len; ++i) {
            text += pieces[rng() % pieces.size()];
        }
        INFO(text);
        CHECK(lanes::common::nfc_of_non_ascii(text) == lanes::common::nfc(text));
    }
}

// Parity of common/prompt's bpe_tokenizer with Hugging Face's Rust tokenizers: reads what
// oracle.mjs wrote (the corpus, and per tokenizer file the reference's ids with and without
// special tokens and its decodes) and checks, for every string and file, that lanes' ids are the
// same, that lanes' decode of the reference's ids is the reference's decode (skipping special
// tokens and not), and that streaming decode returns the same text. Exit 1 on any difference.
//   lanes_tokenizer_parity ORACLE_JSON [--throughput]
#include "common/prompt/bpe_tokenizer.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using lanes::common::bpe_stream_decoder;
using lanes::common::bpe_tokenizer;
using lanes::common::token_id;

namespace {

std::string show_ids(const std::vector<token_id>& ids) {
    std::string s = "[";
    for (std::size_t i = 0; i < ids.size() && i < 40; ++i) {
        s += (i > 0 ? "," : "") + std::to_string(ids[i]);
    }
    return s + (ids.size() > 40 ? ",...]" : "]");
}

std::string show_text(const std::string& text) {
    nlohmann::json j = text.size() > 120 ? text.substr(0, 120) + "..." : text;
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string stream_decode(const bpe_tokenizer& tokenizer, const std::vector<token_id>& ids,
                          bool skip) {
    bpe_stream_decoder stream(tokenizer, skip);
    std::string text;
    for (token_id id : ids) {
        text += stream.push(id);
    }
    return text + stream.finish();
}

struct checker {
    const std::string& file;
    int mismatches = 0;

    void expect(bool ok, const std::string& what, const std::string& text, const std::string& got,
                const std::string& want) {
        if (ok) {
            return;
        }
        if (++mismatches <= 10) {
            std::printf("  MISMATCH %s: %s on %s\n    lanes:     %s\n    reference: %s\n",
                        file.c_str(), what.c_str(), show_text(text).c_str(), got.c_str(),
                        want.c_str());
        }
    }
};

// A quick single-thread figure, not a benchmark of record: the corpus strings one by one, then
// the corpus joined into one document of about 1 MB, each encoded over and over for a second
// after a warm-up pass (the word cache filled).
void throughput(const bpe_tokenizer& tokenizer, const std::vector<std::string>& corpus) {
    std::string joined;
    for (const auto& text : corpus) {
        joined += text + "\n";
    }
    std::string document;
    while (document.size() < 1000000) {
        document += joined;
    }
    const std::vector<std::string> one_document = {document};
    for (const auto* docs : {&corpus, &one_document}) {
        for (const auto& text : *docs) {
            tokenizer.encode(text, false);
        }
        std::size_t bytes = 0;
        std::size_t tokens = 0;
        const auto start = std::chrono::steady_clock::now();
        double seconds = 0;
        while (seconds < 1.0) {
            for (const auto& text : *docs) {
                tokens += tokenizer.encode(text, false).size();
                bytes += text.size();
            }
            seconds =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        }
        std::printf("  throughput, %s: %.1f MB/s (%.1f M tokens/s)\n",
                    docs == &corpus ? "corpus strings" : "1 MB document",
                    static_cast<double>(bytes) / seconds / 1e6,
                    static_cast<double>(tokens) / seconds / 1e6);
    }
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: lanes_tokenizer_parity ORACLE_JSON [--throughput]\n");
        return 2;
    }
    const bool measure = argc > 2 && std::string(argv[2]) == "--throughput";
    std::ifstream in(argv[1], std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "cannot read %s\n", argv[1]);
        return 2;
    }
    const auto oracle = nlohmann::json::parse(in);
    const auto corpus = oracle.at("corpus").get<std::vector<std::string>>();
    int failed_files = 0;
    for (const auto& file : oracle.at("files")) {
        const auto name = file.at("name").get<std::string>();
        const auto load_start = std::chrono::steady_clock::now();
        auto tokenizer = bpe_tokenizer::from_file(file.at("path").get<std::string>());
        const double load_s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
        checker check{name};
        const auto& cases = file.at("cases");
        for (std::size_t i = 0; i < corpus.size(); ++i) {
            const std::string& text = corpus[i];
            const auto& c = cases.at(i);
            const auto want_special = c.at("ids_special").get<std::vector<token_id>>();
            const auto want_plain = c.at("ids_plain").get<std::vector<token_id>>();
            const auto got_special = tokenizer.encode(text, true);
            const auto got_plain = tokenizer.encode(text, false);
            check.expect(got_special == want_special, "ids with special tokens", text,
                         show_ids(got_special), show_ids(want_special));
            check.expect(got_plain == want_plain, "ids without special tokens", text,
                         show_ids(got_plain), show_ids(want_plain));
            for (const bool skip : {true, false}) {
                const auto want = c.at(skip ? "decode_skip" : "decode_keep").get<std::string>();
                const auto got = tokenizer.decode(want_special, skip);
                const std::string how = skip ? " (skip_special_tokens)" : " (keeping specials)";
                check.expect(got == want, "decode" + how, text, show_text(got), show_text(want));
                const auto streamed = stream_decode(tokenizer, want_special, skip);
                check.expect(streamed == got, "streaming decode" + how, text, show_text(streamed),
                             show_text(got));
            }
        }
        std::printf("%s: %zu strings, %d mismatches (vocabulary %zu, loaded in %.2f s)\n",
                    name.c_str(), corpus.size(), check.mismatches, tokenizer.vocab_size(), load_s);
        if (measure) {
            throughput(tokenizer, corpus);
        }
        failed_files += check.mismatches > 0 ? 1 : 0;
    }
    return failed_files == 0 ? 0 : 1;
}

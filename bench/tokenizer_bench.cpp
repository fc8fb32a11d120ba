// lanes-tokenizer-bench: encode throughput of common/prompt's BPE tokenizer on one thread. Loads
// a tokenizer.json (timing the load and measuring what the loaded state keeps: the bytes its
// C++ objects still hold, counted by this program's operator new, and the resident-set growth
// once the allocator has handed freed pages back), encodes every document of
// a corpus once to warm up, then again round after round (add_special_tokens false) until both
// --seconds and --min-rounds are reached. Prints one JSON line: bytes/s, tokens/s and the tokens
// of one pass over the corpus, the checksum that bench/scripts/tokenizer_reference.mjs must
// match. Pin it to one core from outside (taskset); bench/scripts/tokenizer-bench.sh does.
#include "common/allocator.hpp"
#include "common/config_util.hpp"
#include "common/prompt/bpe_tokenizer.hpp"

#include <malloc.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iterator>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

// The bytes allocated through operator new and not yet freed while counting is on (the load
// only: the encode loop runs without the count's cost). Usable sizes, as the allocator gives them.
bool counting = false;
std::int64_t counted_bytes = 0;

} // namespace

void* operator new(std::size_t size) {
    void* p = std::malloc(size == 0 ? 1 : size);
    if (p == nullptr)
        throw std::bad_alloc();
    if (counting)
        counted_bytes += static_cast<std::int64_t>(malloc_usable_size(p));
    return p;
}

void operator delete(void* p) noexcept {
    if (counting && p != nullptr)
        counted_bytes -= static_cast<std::int64_t>(malloc_usable_size(p));
    std::free(p);
}

void operator delete(void* p, std::size_t) noexcept {
    operator delete(p);
}

namespace {

using lanes::common::bpe_tokenizer;
using clock_type = std::chrono::steady_clock;

struct bench_config {
    std::string tokenizer; // tokenizer.json
    std::string corpus;    // JSON array of documents
    std::string name;      // the label of the output line (default: --tokenizer)
    double seconds = 10;   // the least time spent encoding after the warm-up
    std::int64_t min_rounds = 2;
};

double since(clock_type::time_point start) {
    return std::chrono::duration<double>(clock_type::now() - start).count();
}

// What the process holds: the bytes counted through operator new and the resident set, with
// freed memory handed back first so that the load's transient JSON does not count.
struct memory_use {
    std::int64_t heap = 0;
    std::int64_t rss = 0;
    static memory_use now() {
        lanes::common::return_free_memory();
        malloc_trim(0);
        memory_use m;
        m.heap = counted_bytes;
        long pages_total = 0;
        long pages_resident = 0;
        if (FILE* f = std::fopen("/proc/self/statm", "r")) {
            if (std::fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2)
                pages_resident = 0;
            std::fclose(f);
        }
        m.rss = static_cast<std::int64_t>(pages_resident) * sysconf(_SC_PAGESIZE);
        return m;
    }
};

std::vector<std::string> read_corpus(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw std::runtime_error("cannot open " + path);
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    auto docs = nlohmann::json::parse(text).get<std::vector<std::string>>();
    if (docs.empty())
        throw std::runtime_error(path + ": no documents");
    return docs;
}

// One pass over the corpus: the tokens it gives.
std::int64_t encode_all(const bpe_tokenizer& tok, const std::vector<std::string>& docs) {
    std::int64_t tokens = 0;
    for (const auto& doc : docs)
        tokens += static_cast<std::int64_t>(tok.encode(doc, false).size());
    return tokens;
}

nlohmann::json run(const bench_config& cfg) {
    const auto docs = read_corpus(cfg.corpus);
    std::int64_t corpus_bytes = 0;
    for (const auto& doc : docs)
        corpus_bytes += static_cast<std::int64_t>(doc.size());

    const memory_use before = memory_use::now();
    counting = true;
    const auto load_start = clock_type::now();
    const auto tok = bpe_tokenizer::from_file(cfg.tokenizer);
    const double load_s = since(load_start);
    counting = false;
    const memory_use after = memory_use::now();
    // The vocabulary's own bytes, to set the memory figures against.
    std::int64_t token_bytes = 0;
    for (std::size_t id = 0; id < tok.vocab_size(); ++id)
        token_bytes += static_cast<std::int64_t>(
            tok.token_bytes(static_cast<lanes::common::token_id>(id)).size());

    const auto warm_start = clock_type::now();
    const std::int64_t tokens = encode_all(tok, docs);
    const double warm_s = since(warm_start);

    std::int64_t rounds = 0;
    bool mismatch = false;
    const auto start = clock_type::now();
    double elapsed = 0;
    while (rounds < cfg.min_rounds || elapsed < cfg.seconds) {
        mismatch = mismatch || encode_all(tok, docs) != tokens;
        ++rounds;
        elapsed = since(start);
    }
    const double total_bytes = static_cast<double>(corpus_bytes * rounds);
    return {
        {"side", "lanes"},
        {"name", cfg.name.empty() ? cfg.tokenizer : cfg.name},
        {"vocab_size", tok.vocab_size()},
        {"load_s", load_s},
        {"heap_bytes", after.heap - before.heap},
        {"rss_delta_bytes", after.rss - before.rss},
        {"token_bytes", token_bytes},
        {"documents", docs.size()},
        {"corpus_bytes", corpus_bytes},
        {"tokens", tokens},
        {"warmup_s", warm_s},
        {"rounds", rounds},
        {"seconds", elapsed},
        {"bytes_per_s", total_bytes / elapsed},
        {"tokens_per_s", static_cast<double>(tokens * rounds) / elapsed},
        {"rounds_agree", !mismatch},
    };
}

} // namespace

int main(int argc, char** argv) {
    bench_config cfg;
    lanes::common::flag_set f("lanes-tokenizer-bench",
                              "Encode throughput of lanes' BPE tokenizer on one thread.");
    f.add("tokenizer", cfg.tokenizer, "the tokenizer.json to load").value_name("PATH");
    f.add("corpus", cfg.corpus, "JSON array of documents to encode").value_name("PATH");
    f.add("name", cfg.name, "label of the output line (default: --tokenizer)");
    f.add("seconds", cfg.seconds, "least time spent encoding after the warm-up pass");
    f.add("min-rounds", cfg.min_rounds, "least passes over the corpus after the warm-up pass");
    auto errors = f.parse(argc, argv);
    if (f.print_if_requested())
        return 0;
    if (cfg.tokenizer.empty())
        errors.push_back("--tokenizer is required");
    if (cfg.corpus.empty())
        errors.push_back("--corpus is required");
    if (cfg.min_rounds < 1)
        errors.push_back("--min-rounds must be at least 1");
    if (!errors.empty())
        return lanes::common::report_config_errors("lanes-tokenizer-bench", errors);
    try {
        std::printf("%s\n", run(cfg).dump().c_str());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "lanes-tokenizer-bench: %s\n", e.what());
        return 1;
    }
    return 0;
}

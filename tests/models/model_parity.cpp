// lanes_model_parity --model DIR --tokens 1,2,3 [--greedy N]: loads a checkpoint through the
// replica's loader and runs the cpu backend over the tokens, printing the JSON that
// tests/models/reference.py prints for the same model: {"logits": [one row per input position],
// "greedy": [N ids], "prefill_vs_decode": max |difference|}. Every position's logits come from
// decoding the tokens one at a time; the last position is also computed by one prefill of the
// whole list, and the two must agree (the field reports by how much). A loader error goes to
// stderr with exit 1.
#include "replica/backends/cpu_backend.hpp"
#include "replica/models/checkpoint.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

namespace {

using namespace lanes;

std::vector<common::token_id> parse_ids(const std::string& text) {
    std::vector<common::token_id> ids;
    std::size_t pos = 0;
    while (pos < text.size()) {
        const std::size_t comma = text.find(',', pos);
        ids.push_back(static_cast<common::token_id>(
            std::stoul(text.substr(pos, comma == std::string::npos ? comma : comma - pos))));
        if (comma == std::string::npos)
            break;
        pos = comma + 1;
    }
    return ids;
}

// One sequence in its own blocks: decode `ids` one at a time from position `start`.
struct sequence_runner {
    replica::backend& b;
    std::size_t block_size;
    std::vector<replica::block_id> table;

    std::vector<float> step(std::span<const common::token_id> tokens, std::size_t start) {
        const std::size_t need = (start + tokens.size() + block_size - 1) / block_size;
        while (table.size() < need)
            table.push_back(static_cast<replica::block_id>(table.size()));
        replica::batch_entry e{tokens, start, table, true};
        std::vector<std::vector<float>> out;
        b.forward(std::span(&e, 1), out);
        return out.at(0);
    }
};

} // namespace

int main(int argc, char** argv) {
    std::string dir, tokens;
    std::size_t greedy = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        if (flag == "--model")
            dir = argv[i + 1];
        else if (flag == "--tokens")
            tokens = argv[i + 1];
        else if (flag == "--greedy")
            greedy = std::stoul(argv[i + 1]);
    }
    if (dir.empty() || tokens.empty()) {
        std::fprintf(stderr, "usage: lanes_model_parity --model DIR --tokens 1,2,3 [--greedy N]\n");
        return 2;
    }
    try {
        replica::loaded_checkpoint ck = replica::load_checkpoint(dir);
        const std::size_t len = replica::checkpoint_max_model_len(ck.model, 8192);
        const std::vector<common::token_id> ids = parse_ids(tokens);
        const std::size_t block_size = 16;
        const std::size_t blocks = (ids.size() + greedy + block_size) / block_size + 1;
        if (ids.size() + greedy > len)
            throw std::runtime_error("more tokens than the model's context");
        replica::model_weights copy = ck.weights;
        replica::cpu_backend decode_b(std::move(ck.weights), blocks, block_size);
        replica::cpu_backend prefill_b(std::move(copy), blocks, block_size);
        sequence_runner dec{decode_b, block_size, {}};
        nlohmann::json rows = nlohmann::json::array();
        std::vector<float> last;
        for (std::size_t i = 0; i < ids.size(); ++i) {
            last = dec.step(std::span(ids).subspan(i, 1), i);
            rows.push_back(last);
        }
        sequence_runner pre{prefill_b, block_size, {}};
        const std::vector<float> whole = pre.step(ids, 0);
        float worst = 0;
        for (std::size_t v = 0; v < whole.size(); ++v)
            worst = std::max(worst, std::fabs(whole[v] - last[v]));
        std::vector<common::token_id> out;
        std::size_t pos = ids.size();
        for (std::size_t g = 0; g < greedy; ++g, ++pos) {
            const auto best = static_cast<common::token_id>(
                std::max_element(last.begin(), last.end()) - last.begin()); // ties: lowest id
            out.push_back(best);
            last = dec.step(std::span(&out.back(), 1), pos);
        }
        std::cout << nlohmann::json{{"logits", rows}, {"greedy", out}, {"prefill_vs_decode", worst}}
                         .dump()
                  << "\n";
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "lanes_model_parity: %s\n", e.what());
        return 1;
    }
}

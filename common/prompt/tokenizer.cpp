#include "common/prompt/tokenizer.hpp"

namespace lanes::common {

std::vector<token_id> encode_prompt(std::string_view text) {
    std::vector<token_id> ids;
    ids.reserve(text.size() + 1);
    ids.push_back(bos_token);
    for (char c : text) {
        ids.push_back(static_cast<token_id>(static_cast<unsigned char>(c)));
    }
    return ids;
}

std::string decode(std::span<const token_id> ids) {
    std::string text;
    text.reserve(ids.size());
    for (token_id id : ids) {
        if (id < 256) {
            text.push_back(static_cast<char>(static_cast<unsigned char>(id)));
        }
    }
    return text;
}

bool is_printable(token_id id) {
    return (id >= 0x20 && id <= 0x7e) || id == '\n' || id == '\t';
}

} // namespace lanes::common

#include "common/chat_template.hpp"

namespace lanes::common {

namespace {

constexpr std::string_view generation_prompt = "<|assistant|>\n";

} // namespace

std::string render_chat(const std::vector<chat_message>& messages) {
    std::size_t size = generation_prompt.size();
    for (const auto& m : messages) {
        size += m.role.size() + m.content.size() + 6;
    }
    std::string out;
    out.reserve(size);
    for (const auto& m : messages) {
        out += "<|";
        out += m.role;
        out += "|>\n";
        out += m.content;
        out += '\n';
    }
    out += generation_prompt;
    return out;
}

} // namespace lanes::common

#include "common/openai/chat_template.hpp"

namespace lanes::common {

namespace {

constexpr std::string_view generation_prompt = "<|assistant|>\n";

} // namespace

std::string render_chat(std::span<const chat_message_view> messages) {
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

std::string render_chat(const std::vector<chat_message>& messages) {
    std::vector<chat_message_view> views;
    views.reserve(messages.size());
    for (const auto& m : messages)
        views.push_back({m.role, m.content});
    return render_chat(views);
}

} // namespace lanes::common

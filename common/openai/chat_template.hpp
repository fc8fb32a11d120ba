// The one chat template both servers use to turn `messages` into prompt text.
//
//   <|system|>\n{content}\n<|user|>\n{content}\n ... <|assistant|>\n
//
// Each message renders as "<|" role "|>\n" content "\n", and the generation prompt
// "<|assistant|>\n" is appended. Since turns are appended, a conversation's rendering is a prefix
// of the rendering of any continuation of it, which is what multi-turn prefix caching relies on.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::common {

struct chat_message {
    std::string role; // system, user, assistant, tool, developer
    std::string content;
};

// A message whose text lies elsewhere (the router renders straight from the request body).
struct chat_message_view {
    std::string_view role;
    std::string_view content;
};

std::string render_chat(std::span<const chat_message_view> messages);
std::string render_chat(const std::vector<chat_message>& messages);

} // namespace lanes::common

// A whole chat request in a model's tokens against the reference (chat_oracle.py and .mjs:
// vLLM's message preparation, python3-jinja2 in the transformers environment, Hugging Face
// tokenizers): for every real model and conversation, model_tokenizer renders the request's
// text byte for byte, or refuses it with the template's own message, and encodes the same ids.
// Exits 1 on any difference.
//   lanes_chat_parity CHATS_JSON
#include "common/prompt/model_tokenizer.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

namespace {

using json = nlohmann::ordered_json;
using lanes::common::chat_fields;
using lanes::common::chat_render_error;
using lanes::common::model_tokenizer;

std::string clip(const std::string& s, std::size_t at) {
    const std::size_t from = at > 40 ? at - 40 : 0;
    return json(s.substr(from, 120)).dump(-1, ' ', false, json::error_handler_t::replace);
}

// One conversation: true when lanes renders and encodes what the reference did.
bool check(const model_tokenizer& t, const json& chat, std::time_t now) {
    const json& request = chat.at("request");
    chat_fields fields;
    fields.messages = &request.at("messages");
    fields.add_generation_prompt = request.at("add_generation_prompt").get<bool>();
    if (request.contains("tools"))
        fields.tools = &request["tools"];
    if (request.contains("chat_template_kwargs"))
        fields.kwargs = &request["chat_template_kwargs"];
    const std::string name = chat.at("case").get<std::string>();
    std::string text;
    std::string refused;
    try {
        text = t.render_chat(fields, now);
    } catch (const chat_render_error& e) {
        refused = e.what();
    }
    if (!chat.contains("text")) {
        const bool raised = chat.contains("raised");
        if (!refused.empty() && (!raised || refused == chat["raised"].get<std::string>()))
            return true;
        std::cout << "  MISMATCH " << name << ": reference refused ("
                  << (raised ? chat["raised"].get<std::string>() : chat["error"].get<std::string>())
                  << "), lanes " << (refused.empty() ? "rendered it" : "said: " + refused) << "\n";
        return false;
    }
    const std::string want = chat["text"].get<std::string>();
    if (!refused.empty() || text != want) {
        std::size_t at = 0;
        while (at < want.size() && at < text.size() && want[at] == text[at])
            ++at;
        std::cout << "  MISMATCH " << name << ": text differs at byte " << at << "\n    want "
                  << clip(want, at) << "\n    got  " << (refused.empty() ? clip(text, at) : refused)
                  << "\n";
        return false;
    }
    const auto ids = t.encode(text, false);
    if (ids != chat.at("ids").get<std::vector<lanes::common::token_id>>()) {
        std::cout << "  MISMATCH " << name << ": ids differ\n";
        return false;
    }
    return true;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: lanes_chat_parity CHATS_JSON\n");
        return 2;
    }
    std::ifstream in(argv[1], std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "cannot read %s\n", argv[1]);
        return 2;
    }
    const json doc = json::parse(in);
    const auto now = doc.at("now").get<std::time_t>();
    int failures = 0;
    for (const auto& model : doc.at("models")) {
        const auto t = model_tokenizer::load(model.at("directory").get<std::string>());
        int rendered = 0;
        int refused = 0;
        int wrong = 0;
        for (const auto& chat : model.at("chats")) {
            if (!check(*t, chat, now))
                ++wrong;
            else if (chat.contains("text"))
                ++rendered;
            else
                ++refused;
        }
        std::cout << model.at("model").get<std::string>() << ": " << model.at("chats").size()
                  << " chats, " << rendered << " rendered and encoded alike, " << refused
                  << " refused alike, " << wrong << " mismatches\n";
        failures += wrong;
    }
    return failures == 0 ? 0 : 1;
}

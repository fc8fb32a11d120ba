// vLLM's tokenizer endpoints on the replica (api.hpp): /tokenize and /detokenize, in the
// engine's vocabulary (the byte one, or a model's with --tokenizer).
#include "replica/api.hpp"

#include "common/openai/error.hpp"
#include "common/openai/request.hpp"
#include "replica/prompt_ids.hpp"

#include <boost/asio.hpp>
#include <nlohmann/json.hpp>

#include <ctime>
#include <string>
#include <vector>

namespace lanes::replica {

namespace asio = boost::asio;
namespace http = common::http;
namespace openai = common::openai;
using status = boost::beast::http::status;

// vLLM's POST /tokenize: the token ids the engine would run for a prompt, or for chat messages
// with the chat template applied ({"count", "max_model_len", "tokens"}). add_special_tokens
// false leaves out the leading BOS.
asio::awaitable<void> api::tokenize(http::request& req, http::response_writer& out) {
    http::response res = tokenize_answer(req);
    co_await out.send(std::move(res));
}

http::response api::tokenize_answer(const http::request& req) const {
    if (const auto bad = openai::check_json_shape(req.body(), cfg_.request_limits))
        return openai::error_response(req, *bad);
    const nlohmann::json j = nlohmann::json::parse(req.body(), nullptr, false);
    if (!j.is_object())
        return openai::error_response(
            req, openai::api_error::bad_request("the body must be a JSON object"));
    const bool chat = j.contains("messages");
    if (!chat && !j.contains("prompt"))
        return openai::error_response(
            req, openai::api_error::bad_request("give 'prompt' or 'messages'", "prompt"));
    const openai::parse_outcome parsed = openai::parse_generation_request(
        chat ? openai::endpoint::chat_completions : openai::endpoint::completions, req.body(),
        cfg_.request_limits);
    if (parsed.error)
        return openai::error_response(req, *parsed.error);
    const openai::generation_request& g = *parsed.request;
    if (g.model && !cfg_.serves(*g.model))
        return openai::error_response(req, openai::api_error::model_not_found(*g.model));
    prompt_ids_result prompt = prompt_ids(g, req.body(), engine_.vocab(), std::time(nullptr));
    if (prompt.error)
        return openai::error_response(req, *prompt.error);
    const std::vector<common::token_id>& tokens = prompt.ids;
    nlohmann::json ids = nlohmann::json::array();
    for (const auto t : tokens)
        ids.push_back(static_cast<std::uint64_t>(t));
    nlohmann::json answer = {{"count", tokens.size()},
                             {"max_model_len", engine_.max_sequence_tokens()},
                             {"tokens", std::move(ids)}};
    if (const auto strs = j.find("return_token_strs");
        strs != j.end() && strs->is_boolean() && strs->get<bool>())
        answer["token_strs"] = token_strings(engine_.vocab(), tokens);
    return http::make_response(
        req, status::ok, answer.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

// vLLM's POST /detokenize: {"tokens": [ids]} -> {"prompt": text}, special tokens kept.
asio::awaitable<void> api::detokenize(http::request& req, http::response_writer& out) {
    http::response res = detokenize_answer(req);
    co_await out.send(std::move(res));
}

http::response api::detokenize_answer(const http::request& req) const {
    if (const auto bad = openai::check_json_shape(req.body(), cfg_.request_limits))
        return openai::error_response(req, *bad);
    const nlohmann::json j = nlohmann::json::parse(req.body(), nullptr, false);
    const auto tokens = j.is_object() ? j.find("tokens") : j.end();
    if (!j.is_object() || tokens == j.end() || !tokens->is_array())
        return openai::error_response(req, openai::api_error::bad_request(
                                               "'tokens' must be an array of token ids", "tokens"));
    if (const auto model = j.find("model");
        model != j.end() && model->is_string() && !cfg_.serves(model->get<std::string>()))
        return openai::error_response(
            req, openai::api_error::model_not_found(model->get<std::string>()));
    const std::size_t size = engine_.vocab().size();
    std::vector<common::token_id> ids;
    ids.reserve(tokens->size());
    for (const auto& t : *tokens) {
        if (!t.is_number_unsigned() || t.get<std::uint64_t>() >= size)
            return openai::error_response(
                req, openai::api_error::bad_request(
                         "token ids must be integers below " + std::to_string(size), "tokens"));
        ids.push_back(t.get<common::token_id>());
    }
    const auto* model = engine_.vocab().model();
    const std::string text = model != nullptr ? model->decode(ids, false) : common::decode(ids);
    const nlohmann::json answer = {{"prompt", text}};
    return http::make_response(
        req, status::ok, answer.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

} // namespace lanes::replica

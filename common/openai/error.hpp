// The one way an OpenAI-style server answers with an error: {"error": {"message", "type",
// "param", "code"}} under the error's status, as vLLM >= 0.10.1 writes it.
#pragma once

#include "common/http/message.hpp"
#include "common/http/response_writer.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace lanes::common::openai {

struct api_error {
    int status = 400;
    std::string message;
    std::string type; // BadRequestError, NotFoundError, ...; empty: error_type(status)
    std::optional<std::string> param;
    std::optional<std::string> code; // OpenAI's string code ("invalid_api_key"); else the status

    static api_error bad_request(std::string message, std::optional<std::string> param = {});
    static api_error not_found(std::string message);
    // 404 for a model nobody serves, worded as vLLM words it, with param "model".
    static api_error model_not_found(std::string_view model);
    // Any other status, its type named after it unless given.
    static api_error of(int status, std::string message, std::string type = {});
};

// The status-named type of an error ("BadRequestError", "NotFoundError", ...), as vLLM names
// them.
std::string error_type(int status);

std::string error_json(const api_error& e);

// The answer to `req` that carries `e`.
http::response error_response(const http::request& req, const api_error& e);

// 405 for a path asked with a method it does not take: Allow lists `methods` (http::method_bits).
http::response method_not_allowed(const http::request& req, unsigned methods);

// The server's own refusals (limits, malformed requests) in the same form: the error_writer an
// OpenAI server gives its http::server.
http::error_page error_page(int status, std::string_view message);

} // namespace lanes::common::openai

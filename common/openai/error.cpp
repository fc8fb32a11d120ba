#include "common/openai/error.hpp"

#include "common/http/routes.hpp"

#include <nlohmann/json.hpp>

namespace lanes::common::openai {

using ojson = nlohmann::ordered_json;

api_error api_error::bad_request(std::string message, std::optional<std::string> param) {
    return api_error{400, std::move(message), "BadRequestError", std::move(param)};
}

api_error api_error::not_found(std::string message) {
    return api_error{404, std::move(message), "NotFoundError", std::nullopt};
}

api_error api_error::model_not_found(std::string_view model) {
    return api_error{404, "The model `" + std::string(model) + "` does not exist.", "NotFoundError",
                     "model"};
}

api_error api_error::of(int status, std::string message, std::string type) {
    return api_error{status, std::move(message), std::move(type), std::nullopt};
}

std::string error_type(int status) {
    switch (status) {
    case 400:
        return "BadRequestError";
    case 401:
        return "AuthenticationError";
    case 403:
        return "PermissionDeniedError";
    case 404:
        return "NotFoundError";
    case 405:
        return "MethodNotAllowedError";
    case 409:
        return "ConflictError";
    case 413:
        return "RequestEntityTooLargeError";
    case 422:
        return "UnprocessableEntityError";
    case 429:
        return "RateLimitError";
    case 431:
        return "RequestHeaderFieldsTooLargeError";
    case 502:
        return "BadGatewayError";
    case 503:
        return "ServiceUnavailableError";
    case 504:
        return "GatewayTimeoutError";
    default:
        return status >= 500 ? "InternalServerError" : "BadRequestError";
    }
}

std::string error_json(const api_error& e) {
    ojson err = {{"message", e.message},
                 {"type", e.type.empty() ? error_type(e.status) : e.type},
                 {"param", e.param ? ojson(*e.param) : ojson(nullptr)},
                 {"code", e.code ? ojson(*e.code) : ojson(e.status)}};
    return ojson{{"error", std::move(err)}}.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

http::response error_response(const http::request& req, const api_error& e) {
    return http::make_response(req, static_cast<http::beast_http::status>(e.status), error_json(e));
}

http::response method_not_allowed(const http::request& req, unsigned methods) {
    const std::string allow = http::allow_value(methods);
    const std::string path(http::path_of(req.target()));
    auto res = error_response(req, api_error::of(405, path + " takes " + allow));
    res.set(http::beast_http::field::allow, allow);
    return res;
}

http::error_page error_page(int status, std::string_view message) {
    return {"application/json", error_json(api_error::of(status, std::string(message)))};
}

} // namespace lanes::common::openai

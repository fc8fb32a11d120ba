// Differential: the router's body readers (the completions scanner, the on-demand reader) and the
// replica's parser give a body one meaning: the same refusal by the same field for a read field
// given twice or with escapes, and the same model, stream and user otherwise, for every body that
// is JSON (of one that is not, each may refuse for what it meets first). The first byte picks the
// endpoint.
#include "common/openai/request.hpp"
#include "router/request/request_view.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

std::string ambiguity(const std::optional<lanes::common::openai::api_error>& e) {
    if (!e)
        return "";
    const bool names = e->message.find("more than once") != std::string::npos ||
                       e->message.find("with escapes") != std::string::npos;
    return names ? e->param.value_or("?") : "";
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0)
        return 0;
    const bool chat = data[0] & 1;
    const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
    using lanes::router::body_kind;
    const auto routed =
        lanes::router::read_request(chat ? body_kind::chat : body_kind::completions, body);
    namespace oa = lanes::common::openai;
    const auto parsed = oa::parse_generation_request(
        chat ? oa::endpoint::chat_completions : oa::endpoint::completions, body);
    if (!nlohmann::json::accept(body))
        return 0;
    if (ambiguity(routed.error) != ambiguity(parsed.error))
        std::abort();
    if (routed.view && parsed.request &&
        (routed.view->model != parsed.request->model ||
         routed.view->stream != parsed.request->stream ||
         routed.view->user != parsed.request->user))
        std::abort();
    return 0;
}

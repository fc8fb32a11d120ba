// Reading what routing needs from a body: the one-pass scanner for ASCII completions bodies, else
// simdjson's on-demand walk over the top-level fields (body_reader.hpp reads each).
#include "router/request/request_view.hpp"

#include "common/json_depth.hpp"
#include "router/request/body_reader.hpp"
#include "router/request/body_reading.hpp"
#include "router/request/scan.hpp"

namespace lanes::router {

using namespace detail; // od, api_error, the field bits, body_reader

namespace {

// The fields a body of `kind` is read for.
unsigned read_fields(body_kind kind) {
    const unsigned common = f_model | f_stream | f_user;
    switch (kind) {
    case body_kind::completions:
        return common | f_prompt;
    case body_kind::chat:
        return common | f_messages | f_tools;
    case body_kind::responses:
        return common | f_input | f_instructions | f_tools | f_previous;
    case body_kind::other:
        break;
    }
    return f_model;
}

read_result failure(simdjson::error_code e) {
    return {std::nullopt, api_error::bad_request(std::string("the body is not valid JSON (") +
                                                 simdjson::error_message(e) + ")")};
}

} // namespace

read_result read_request(body_kind kind, std::string_view body, const read_limits& limits) {
    if (kind == body_kind::completions)
        if (auto view = scan_completion_request(body))
            return {std::move(view), std::nullopt};
    return read_request_on_demand(kind, body, limits);
}

read_result read_request_on_demand(body_kind kind, std::string_view body,
                                   const read_limits& limits) {
    if (common::nests_deeper_than(body, limits.max_depth))
        return {std::nullopt, api_error::bad_request("the body nests deeper than " +
                                                     std::to_string(limits.max_depth) + " levels")};
    // (The reading holds views of `body`, never of the padded copy.)
    body_reading reading(body);
    const std::string_view padded = reading.padded();
    od::document doc;
    if (auto e = reading.iterate().get(doc))
        return failure(e);
    od::object obj;
    if (auto e = doc.get_object().get(obj))
        return e == simdjson::INCORRECT_TYPE
                   ? read_result{std::nullopt,
                                 api_error::bad_request("the body must be a JSON object")}
                   : failure(e);
    request_view view;
    body_reader reader(body, padded, view);
    unsigned seen = 0;
    std::optional<api_error> refusal;
    for (auto item : obj) {
        od::field field;
        if (auto e = std::move(item).get(field))
            return failure(e);
        const bool escaped = escaped_name(field); // (the raw name: before unescaping it)
        std::string_view key;
        if (auto e = field.unescaped_key().get(key))
            return failure(e);
        unsigned bit = 0;
        for (const auto& f : top_fields)
            if (f.name == key)
                bit = f.bit & read_fields(kind);
        if ((refusal = check_name(key, escaped, bit, seen)))
            return {std::nullopt, std::move(refusal)};
        od::value v = field.value();
        simdjson::error_code e = simdjson::SUCCESS;
        if (bit == f_model) {
            view.model = string_of(v);
        } else if (bit == f_user) {
            view.user = string_of(v);
        } else if (bit == f_stream) {
            bool stream = false;
            if (is_type(v, od::json_type::boolean) && !v.get_bool().get(stream))
                view.stream = stream;
        } else if (bit == f_prompt) {
            e = reader.prompt(v);
        } else if (bit == f_messages) {
            e = reader.messages(v, refusal);
        } else if (bit == f_input) {
            e = reader.input(v, refusal);
        } else if (bit == f_instructions) {
            if (auto text = string_of(v))
                reader.instructions(std::move(*text));
        } else if (bit == f_previous) {
            view.previous_response_id = string_of(v);
        } else if (bit == f_tools) {
            std::string_view raw;
            e = raw_text(v, raw);
            if (!e && raw != "null")
                view.context_hash = hash_text(raw, 1);
        }
        if (e)
            return failure(e);
        if (refusal)
            return {std::nullopt, std::move(refusal)};
    }
    if (kind == body_kind::chat || kind == body_kind::responses)
        reader.render();
    return {std::move(view), std::nullopt};
}

} // namespace lanes::router

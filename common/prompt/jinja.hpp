// A Jinja interpreter for Hugging Face chat templates: the subset real templates use, with the
// environment transformers renders them in (trim_blocks, lstrip_blocks, loop controls, the
// json.dumps tojson, raise_exception and strftime_now), so that a render is byte-identical to
// python3-jinja2's. Every loop, nesting and output size is bounded (jinja_impl.hpp's limits).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <ctime>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace lanes::common {

// A template that does not parse: "chat template line L column C: ...".
struct template_syntax_error : std::runtime_error {
    using runtime_error::runtime_error;
};
// raise_exception(msg) in the template: what() is exactly the template's message.
struct template_raised : std::runtime_error {
    using runtime_error::runtime_error;
};
// Any other failure while rendering: an unknown filter, a type error, a limit reached.
struct template_render_error : std::runtime_error {
    using runtime_error::runtime_error;
};

namespace jinja_detail {
struct program;
}

class jinja_template {
public:
    static jinja_template parse(std::string_view source);
    // context: a JSON object of top-level variables. now: the time strftime_now formats (UTC).
    // Objects keep nlohmann::json's key order (sorted); pass ordered_json where tojson and
    // items() must see the order the client sent.
    std::string render(const nlohmann::json& context, std::time_t now) const;
    std::string render(const nlohmann::ordered_json& context, std::time_t now) const;

    jinja_template(jinja_template&&) noexcept;
    jinja_template& operator=(jinja_template&&) noexcept;
    ~jinja_template();

private:
    explicit jinja_template(std::unique_ptr<jinja_detail::program> program);
    std::unique_ptr<jinja_detail::program> program_;
};

} // namespace lanes::common

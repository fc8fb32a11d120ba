// jinja_template: the public face of the interpreter (jinja_impl.hpp has the pieces).
#include "common/prompt/jinja.hpp"

#include "common/prompt/jinja_impl.hpp"

#include <nlohmann/json.hpp>

namespace lanes::common {

jinja_template::jinja_template(std::unique_ptr<jinja_detail::program> program)
    : program_(std::move(program)) {}
jinja_template::jinja_template(jinja_template&&) noexcept = default;
jinja_template& jinja_template::operator=(jinja_template&&) noexcept = default;
jinja_template::~jinja_template() = default;

jinja_template jinja_template::parse(std::string_view source) {
    jinja_detail::reset_work();
    return jinja_template(jinja_detail::parse_program(source));
}

std::string jinja_template::render(const nlohmann::json& context, std::time_t now) const {
    jinja_detail::reset_work();
    return jinja_detail::render_program(*program_, jinja_detail::from_json(context), now);
}

std::string jinja_template::render(const nlohmann::ordered_json& context, std::time_t now) const {
    jinja_detail::reset_work();
    return jinja_detail::render_program(*program_, jinja_detail::from_json(context), now);
}

} // namespace lanes::common

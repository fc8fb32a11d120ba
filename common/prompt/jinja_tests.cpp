// Jinja's builtin tests (x is defined, x is string, x is equalto y, ...) that chat templates use,
// with Python's meaning of each type: a bool is a number but not an integer, a string is
// iterable, Undefined is iterable (as nothing).
#include "common/prompt/jinja_impl.hpp"

namespace lanes::common::jinja_detail {

bool apply_test(const std::string& name, const value& subject, const std::vector<value>& args) {
    const value other = args.empty() ? value() : args[0];
    if (name == "defined" || name == "undefined") {
        return subject.defined() == (name == "defined");
    }
    if (name == "none") {
        return subject.k == kind::none;
    }
    if (name == "string") {
        return subject.k == kind::string;
    }
    if (name == "number") {
        return subject.is_number();
    }
    if (name == "integer") {
        return subject.k == kind::integer;
    }
    if (name == "float") {
        return subject.k == kind::floating;
    }
    if (name == "boolean") {
        return subject.k == kind::boolean;
    }
    if (name == "true" || name == "false") {
        return subject.k == kind::boolean && subject.b == (name == "true");
    }
    if (name == "mapping") {
        return subject.k == kind::dict;
    }
    if (name == "iterable" || name == "sequence") {
        if (subject.lazy) {
            return name == "iterable";
        }
        return subject.k == kind::string || subject.k == kind::list || subject.k == kind::dict ||
               subject.k == kind::undefined;
    }
    if (name == "callable") {
        return subject.k == kind::function;
    }
    if (name == "equalto" || name == "eq" || name == "==") {
        return equal(subject, other);
    }
    if (name == "ne" || name == "!=") {
        return !equal(subject, other);
    }
    if (name == "sameas") {
        if (subject.k != other.k) {
            return false;
        }
        if (subject.k == kind::list) {
            return subject.l == other.l;
        }
        if (subject.k == kind::dict || subject.k == kind::ns) {
            return subject.d == other.d;
        }
        return equal(subject, other);
    }
    if (name == "lt" || name == "<" || name == "le" || name == "<=" || name == "gt" ||
        name == ">" || name == "ge" || name == ">=") {
        const int c = compare(subject, other);
        return name[0] == 'l' || name[0] == '<'
                   ? (name.size() == 1 || name[1] == 't' ? c < 0 : c <= 0)
                   : (name.size() == 1 || name[1] == 't' ? c > 0 : c >= 0);
    }
    if (name == "odd" || name == "even" || name == "divisibleby") {
        // Python's value % n: bools and floats too.
        const value by = name == "divisibleby" ? other : value::integer_v(2);
        const value rest = binary_op("%", subject, by);
        return equal(rest, value::integer_v(name == "odd" ? 1 : 0));
    }
    if (name == "in") {
        return contains(other, subject);
    }
    if (name == "lower" || name == "upper") {
        // str.islower(): some cased character, and none of the other case.
        const std::string s = to_str(subject);
        const std::string lower = change_case(s, letter_case::lower);
        const std::string upper = change_case(s, letter_case::upper);
        return name == "lower" ? (s == lower && s != upper) : (s == upper && s != lower);
    }
    fail("no test named '" + name + "'");
}

} // namespace lanes::common::jinja_detail

// The Jinja interpreter's internals (included by jinja_*.cpp only): values, tokens, the syntax
// tree and the limits that keep a hostile template from hanging or exhausting the server.
#pragma once

#include "common/prompt/jinja.hpp"

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lanes::common::jinja_detail {

// Bounds on one render: output bytes (also any one string built), loop iterations in all, the
// nesting of macro calls, of statements and expressions, and of lists and dicts (so that the
// recursion of rendering, printing and comparing values stays within a thread's stack).
constexpr std::size_t max_output_bytes = 64u << 20;
constexpr std::size_t max_iterations = 1'000'000;
constexpr int max_call_depth = 16;
constexpr int max_parse_depth = 100;
constexpr int max_value_depth = 128;
// Bytes one render may build or copy in all (strings, list slots): bounds the work of quadratic
// loops (s = s + t, l = l + [x]) that the iteration bound alone lets run for hours.
constexpr std::size_t max_work_bytes = std::size_t{2} << 30;

struct value;
struct node;
struct expr;
using list_t = std::vector<value>;
struct dict_t;
struct callable;

enum class kind : std::uint8_t {
    undefined,
    none,
    boolean,
    integer,
    floating,
    string,
    list,
    dict,
    ns, // namespace(): a mutable dict that set ns.attr writes to
    function
};

struct value {
    kind k = kind::undefined;
    bool b = false;
    std::int64_t i = 0;
    double f = 0;
    std::string s; // string; for undefined, the name it stands for
    std::shared_ptr<list_t> l;
    std::shared_ptr<dict_t> d;
    std::shared_ptr<const callable> fn;
    bool tuple = false;     // a list that prints as a Python tuple
    bool lazy = false;      // a list standing for a Python generator (select, map, ...)
    std::uint8_t depth = 0; // nesting of lists and dicts: 0 for a scalar

    static value none_v() { return with_kind(kind::none); }
    static value boolean_v(bool v);
    static value integer_v(std::int64_t v);
    static value floating_v(double v);
    static value string_v(std::string v);
    static value list_v(list_t v);
    static value dict_v(dict_t v);
    static value undefined_v(std::string hint);
    static value with_kind(kind k);

    bool is_number() const {
        return k == kind::integer || k == kind::floating || k == kind::boolean;
    }
    bool defined() const { return k != kind::undefined; }
};

struct dict_t {
    std::vector<std::pair<std::string, value>> items;
    const value* find(std::string_view key) const;
    void set(const std::string& key, value v);
};

// A builtin global or a macro.
struct callable {
    std::string name;
    const node* macro = nullptr; // null for builtins
};

// values (jinja_value.cpp)
value from_json(const nlohmann::json& j);
value from_json(const nlohmann::ordered_json& j);
bool truthy(const value& v);
std::string to_str(const value& v);              // Python str()
std::string to_repr(const value& v);             // Python repr()
std::string to_json(const value& v, int indent); // json.dumps, indent < 0: none
// Python's format % args (a tuple spreads; %s %r %d %i %x %o %f %e %g and %%).
std::string percent_format(const std::string& format, const value& args);
bool equal(const value& a, const value& b);
int compare(const value& a, const value& b); // <0, 0, >0; throws when unordered
double as_double(const value& v);
const char* type_name(const value& v);
[[noreturn]] void fail(const std::string& message);
void check_size(std::size_t bytes);
// Counts bytes against the render's max_work_bytes (per thread; reset as a render starts).
void charge(std::size_t bytes);
void reset_work();
// A copy of v, charged for the bytes it copies.
value charged_copy(const value& v);

// UTF-8 code points (jinja_value.cpp)
std::u32string code_points(std::string_view s);
std::string encode(const std::u32string& cps);
std::size_t code_point_count(std::string_view s);

// tokens (jinja_lexer.cpp)
enum class tok : std::uint8_t {
    text,
    var_begin,
    var_end,
    block_begin,
    block_end,
    name,
    string,
    integer,
    floating,
    op,
    eof
};
struct token {
    tok type = tok::eof;
    std::string text;
    int line = 1;
    int column = 1;
};
std::vector<token> tokenize(std::string_view source);
[[noreturn]] void syntax_error(int line, int column, const std::string& message);

// the syntax tree (jinja_parser.cpp)
enum class ex : std::uint8_t {
    literal,
    name,
    getattr,
    getitem,
    slice,
    call,
    filter,
    test,
    neg,
    pos,
    not_,
    binary,
    compare,
    and_,
    or_,
    cond,
    list,
    tuple,
    dict
};
using expr_ptr = std::unique_ptr<expr>;
struct expr {
    ex type = ex::literal;
    std::string name; // name, attribute, operator, filter or test
    value literal;
    std::vector<expr_ptr> args; // operands, positional arguments (null: an omitted slice part)
    std::vector<std::pair<std::string, expr_ptr>> kwargs;
    bool negated = false; // is not; for **, a left side Jinja folds to a constant
    int line = 0;
};

enum class st : std::uint8_t {
    text,
    output,
    if_,
    for_,
    set,
    set_block,
    macro,
    filter_block,
    break_,
    continue_
};
using node_ptr = std::unique_ptr<node>;
using body_t = std::vector<node_ptr>;
struct node {
    st type = st::text;
    std::string text;               // text; set/macro name
    std::vector<std::string> names; // for targets; macro parameters; set: [ns, attr] or names
    std::vector<expr_ptr> exprs;    // if: conditions; for: [iter, filter?]; set: value; macro
                                    // defaults (null: none); output: the expression
    std::vector<body_t> bodies;     // if: one per condition then else; for: body, else
    expr_ptr filter;                // set_block / filter_block: the filter chain (arg null)
    int line = 0;
};

struct program {
    body_t body;
};
std::unique_ptr<program> parse_program(std::string_view source);

// rendering (jinja_eval.cpp) and the builtins (jinja_filters.cpp)
using kwargs_t = std::vector<std::pair<std::string, value>>;
std::string render_program(const program& p, value context, std::time_t now);
value apply_filter(const std::string& name, const value& subject, const std::vector<value>& args,
                   const kwargs_t& kwargs);
bool apply_test(const std::string& name, const value& subject, const std::vector<value>& args);
// globals (jinja_globals.cpp): raise_exception, strftime_now, namespace, range, dict
bool is_global(const std::string& name);
// One more loop iteration of the render's max_iterations.
void count_iteration(std::size_t& iterations);
value call_global(const std::string& name, const std::vector<value>& args, const kwargs_t& kwargs,
                  std::time_t now, std::size_t& iterations);

// operators and lookups (jinja_ops.cpp)
value binary_op(const std::string& op, const value& a, const value& b);
value get_attr(const value& obj, const std::string& name);
value get_item(const value& obj, const value& key);
value slice(const value& obj, const value& start, const value& stop, const value& step);
bool contains(const value& container, const value& item);
// Python's str.upper, lower, title, capitalize; and Jinja's title filter.
enum class letter_case { upper, lower, title, capitalize, jinja_title };
std::string change_case(std::string_view s, letter_case mode);
// Python's str.strip family: chars as a set of code points, or whitespace (str.isspace).
std::string py_strip(const std::string& s, const std::string& chars, bool whitespace, bool left,
                     bool right);
// Jinja's wordcount: the runs of letters, digits and '_'.
std::int64_t word_count(const std::string& s);
// Whether obj has a (non-mutating) Python method of that name.
bool has_method(const value& obj, std::string_view name);
// The items a for loop visits: a list's items, a dict's keys, a string's characters; none for
// undefined.
list_t iterate(const value& v);
// obj.name(args) for strings, lists and dicts; false when obj has no such method.
bool call_method(const value& obj, const std::string& name, const std::vector<value>& args,
                 value& result);

} // namespace lanes::common::jinja_detail

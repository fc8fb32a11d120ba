// The Jinja expression parser (internal: jinja_expression.cpp and the statement parser in
// jinja_parser.cpp). Jinja's precedence, lowest first: a if c else b, or, and, not, comparisons
// and in, + -, ~, * / // %, **, unary - +, then postfix . [] () and the | filter and is test
// chains.
#pragma once

#include "common/prompt/jinja_impl.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace lanes::common::jinja_detail {

class expression_parser {
public:
    explicit expression_parser(std::vector<token> tokens)
        : toks_(std::move(tokens)) {}

    const token& cur() const { return toks_[at_]; }

protected:
    static expr_ptr make_expr(ex type, const token& t) {
        auto e = std::make_unique<expr>();
        e->type = type;
        e->line = t.line;
        return e;
    }
    [[noreturn]] static void error(const token& t, const std::string& message) {
        syntax_error(t.line, t.column, message);
    }
    bool is_op(std::string_view o) const { return cur().type == tok::op && cur().text == o; }
    bool is_name(std::string_view n) const { return cur().type == tok::name && cur().text == n; }
    bool skip_op(std::string_view o) {
        if (is_op(o)) {
            ++at_;
            return true;
        }
        return false;
    }
    bool skip_name(std::string_view n) {
        if (is_name(n)) {
            ++at_;
            return true;
        }
        return false;
    }
    void expect(tok type, const std::string& what) {
        if (cur().type != type) {
            error(cur(), "expected " + what);
        }
        ++at_;
    }
    void expect_op(std::string_view o) {
        if (!skip_op(o)) {
            error(cur(), "expected '" + std::string(o) + "'");
        }
    }
    std::string name() {
        if (cur().type != tok::name) {
            error(cur(), "expected a name");
        }
        return toks_[at_++].text;
    }

    // Expressions separated by commas: one alone, else a tuple.
    expr_ptr tuple(bool with_condexpr);
    struct depth_guard {
        explicit depth_guard(expression_parser& p)
            : p_(p) {
            if (++p_.depth_ > max_parse_depth) {
                error(p_.cur(), "expression nested too deep");
            }
        }
        ~depth_guard() { --p_.depth_; }
        depth_guard(const depth_guard&) = delete;
        depth_guard& operator=(const depth_guard&) = delete;
        expression_parser& p_;
    };

    expr_ptr expression(bool with_condexpr);
    // Operator loops (a + b + c ..., x|f|g ...) build trees deeper than the parser's recursion:
    // bound the height too, since evaluation recurses along it.
    static void check_height(const expr& e, const token& t, int level);
    expr_ptr binary(ex type, std::string op, expr_ptr l, expr_ptr r, const token& t);
    expr_ptr or_expr();
    expr_ptr and_expr();
    expr_ptr not_expr();
    // a < b < c as Python: each operator compares its neighbours (ex::compare: args[0] first,
    // kwargs the operators with the operands that follow them).
    expr_ptr compare();
    expr_ptr math1();
    expr_ptr concat();
    expr_ptr math2();
    expr_ptr power();
    expr_ptr unary(bool with_filter);
    expr_ptr primary();
    expr_ptr postfix(expr_ptr e);
    expr_ptr subscript(expr_ptr subject, const token& t);
    // Arguments in parentheses into e (positional after e's existing args, then keywords).
    void arguments(expr& e);
    expr_ptr call(expr_ptr callee);
    expr_ptr filter_chain(expr_ptr e);
    // `x is divisibleby 3`: a bare argument, unless what follows ends the test.
    bool test_argument_follows() const;

    std::vector<token> toks_;
    std::size_t at_ = 0;
    int depth_ = 0;
    int expressions_open_ = 0;
};

} // namespace lanes::common::jinja_detail

// The Jinja expression parser: one function per precedence level (jinja_expression.hpp).
#include "common/prompt/jinja_expression.hpp"

#include <algorithm>

namespace lanes::common::jinja_detail {

// Expressions separated by commas: one alone, else a tuple.
expr_ptr expression_parser::tuple(bool with_condexpr) {
    const token& t = cur();
    auto first = expression(with_condexpr);
    if (!is_op(",")) {
        return first;
    }
    auto e = make_expr(ex::tuple, t);
    e->args.push_back(std::move(first));
    while (skip_op(",")) {
        if (cur().type == tok::var_end || cur().type == tok::block_end || is_op(")")) {
            break;
        }
        e->args.push_back(expression(with_condexpr));
    }
    return e;
}

expr_ptr expression_parser::expression(bool with_condexpr) {
    depth_guard guard(*this);
    ++expressions_open_;
    const token& t = cur();
    auto e = or_expr();
    while (with_condexpr && skip_name("if")) {
        auto c = make_expr(ex::cond, t);
        c->args.push_back(or_expr());
        c->args.push_back(std::move(e));
        c->args.push_back(skip_name("else") ? expression(true) : nullptr);
        e = std::move(c);
    }
    if (--expressions_open_ == 0) {
        check_height(*e, t, 1);
    }
    return e;
}

// Operator loops (a + b + c ..., x|f|g ...) build trees deeper than the parser's recursion:
// bound the height too, since evaluation recurses along it.
void expression_parser::check_height(const expr& e, const token& t, int level) {
    if (level > max_parse_depth) {
        error(t, "expression nested too deep");
    }
    for (const auto& a : e.args) {
        if (a) {
            check_height(*a, t, level + 1);
        }
    }
    for (const auto& [key, a] : e.kwargs) {
        check_height(*a, t, level + 1);
    }
}

expr_ptr expression_parser::binary(ex type, std::string op, expr_ptr l, expr_ptr r,
                                   const token& t) {
    auto e = make_expr(type, t);
    e->name = std::move(op);
    e->args.push_back(std::move(l));
    e->args.push_back(std::move(r));
    return e;
}

expr_ptr expression_parser::or_expr() {
    auto e = and_expr();
    while (is_name("or")) {
        const token& t = toks_[at_++];
        e = binary(ex::or_, "or", std::move(e), and_expr(), t);
    }
    return e;
}

expr_ptr expression_parser::and_expr() {
    auto e = not_expr();
    while (is_name("and")) {
        const token& t = toks_[at_++];
        e = binary(ex::and_, "and", std::move(e), not_expr(), t);
    }
    return e;
}

expr_ptr expression_parser::not_expr() {
    if (is_name("not")) {
        depth_guard guard(*this);
        auto e = make_expr(ex::not_, toks_[at_++]);
        e->args.push_back(not_expr());
        return e;
    }
    return compare();
}

// a < b < c as Python: each operator compares its neighbours (ex::compare: args[0] first,
// kwargs the operators with the operands that follow them).
expr_ptr expression_parser::compare() {
    const token& start = cur();
    auto first = math1();
    auto chain = make_expr(ex::compare, start);
    while (true) {
        const token& t = cur();
        std::string op;
        if (t.type == tok::op && (t.text == "==" || t.text == "!=" || t.text == "<" ||
                                  t.text == ">" || t.text == "<=" || t.text == ">=")) {
            ++at_;
            op = t.text;
        } else if (skip_name("in")) {
            op = "in";
        } else if (is_name("not") && toks_[at_ + 1].type == tok::name &&
                   toks_[at_ + 1].text == "in") {
            at_ += 2;
            op = "not in";
        } else {
            break;
        }
        chain->kwargs.emplace_back(std::move(op), math1());
    }
    if (chain->kwargs.empty()) {
        return first;
    }
    chain->args.push_back(std::move(first));
    return chain;
}

expr_ptr expression_parser::math1() {
    auto e = concat();
    while (is_op("+") || is_op("-")) {
        const token& t = toks_[at_++];
        e = binary(ex::binary, t.text, std::move(e), concat(), t);
    }
    return e;
}

expr_ptr expression_parser::concat() {
    auto e = math2();
    while (is_op("~")) {
        const token& t = toks_[at_++];
        e = binary(ex::binary, "~", std::move(e), math2(), t);
    }
    return e;
}

expr_ptr expression_parser::math2() {
    auto e = power();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
        const token& t = toks_[at_++];
        e = binary(ex::binary, t.text, std::move(e), power(), t);
    }
    return e;
}

namespace {

// Whether Jinja's optimizer folds e to a constant: literals combined by operators.
bool is_constant(const expr& e) {
    switch (e.type) {
    case ex::literal:
        return true;
    case ex::neg:
    case ex::pos:
    case ex::not_:
    case ex::binary:
    case ex::compare:
    case ex::and_:
    case ex::or_:
    case ex::list:
    case ex::tuple:
        return std::all_of(e.args.begin(), e.args.end(),
                           [](const expr_ptr& a) { return a && is_constant(*a); }) &&
               std::all_of(e.kwargs.begin(), e.kwargs.end(),
                           [](const auto& kw) { return is_constant(*kw.second); });
    default:
        return false;
    }
}

} // namespace

expr_ptr expression_parser::power() {
    auto e = unary(true);
    while (is_op("**")) {
        const token& t = toks_[at_++];
        auto right = unary(true);
        // Jinja folds a constant left side (-2, 0 - 1) and writes it into Python unparenthesized
        // before a ** whose right side is not constant: -2 ** x is then -(2 ** x).
        const bool folded_left = is_constant(*e) && !is_constant(*right);
        e = binary(ex::binary, "**", std::move(e), std::move(right), t);
        e->negated = folded_left;
    }
    return e;
}

expr_ptr expression_parser::unary(bool with_filter) {
    depth_guard guard(*this);
    const token& t = cur();
    expr_ptr e;
    if (skip_op("-") || skip_op("+")) {
        e = make_expr(t.text == "-" ? ex::neg : ex::pos, t);
        e->args.push_back(unary(false));
    } else {
        e = primary();
    }
    e = postfix(std::move(e));
    return with_filter ? filter_chain(std::move(e)) : std::move(e);
}

expr_ptr expression_parser::primary() {
    const token& t = cur();
    if (t.type == tok::name) {
        ++at_;
        auto e = make_expr(ex::literal, t);
        if (t.text == "true" || t.text == "True" || t.text == "false" || t.text == "False") {
            e->literal = value::boolean_v(t.text[0] == 't' || t.text[0] == 'T');
        } else if (t.text == "none" || t.text == "None") {
            e->literal = value::none_v();
        } else {
            e->type = ex::name;
            e->name = t.text;
        }
        return e;
    }
    if (t.type == tok::string) {
        auto e = make_expr(ex::literal, t);
        std::string s;
        while (cur().type == tok::string) {
            s += toks_[at_++].text;
        }
        e->literal = value::string_v(std::move(s));
        return e;
    }
    if (t.type == tok::integer || t.type == tok::floating) {
        ++at_;
        auto e = make_expr(ex::literal, t);
        try {
            e->literal = t.type == tok::integer ? value::integer_v(std::stoll(t.text))
                                                : value::floating_v(std::stod(t.text));
        } catch (const std::exception&) {
            error(t, "number out of range");
        }
        return e;
    }
    if (skip_op("(")) {
        if (skip_op(")")) {
            return make_expr(ex::tuple, t);
        }
        auto e = tuple(true);
        expect_op(")");
        return e;
    }
    if (skip_op("[")) {
        auto e = make_expr(ex::list, t);
        while (!skip_op("]")) {
            if (!e->args.empty()) {
                expect_op(",");
                if (skip_op("]")) {
                    break;
                }
            }
            e->args.push_back(expression(true));
        }
        return e;
    }
    if (skip_op("{")) {
        auto e = make_expr(ex::dict, t);
        while (!skip_op("}")) {
            if (!e->args.empty()) {
                expect_op(",");
                if (skip_op("}")) {
                    break;
                }
            }
            e->args.push_back(expression(true));
            expect_op(":");
            e->args.push_back(expression(true));
        }
        return e;
    }
    error(t, t.type == tok::eof || t.type == tok::var_end || t.type == tok::block_end
                 ? "unexpected end of expression"
                 : "unexpected '" + t.text + "'");
}

expr_ptr expression_parser::postfix(expr_ptr e) {
    while (true) {
        const token& t = cur();
        if (skip_op(".")) {
            auto g = make_expr(ex::getattr, t);
            if (cur().type == tok::integer) {
                g->type = ex::getitem;
                auto index = make_expr(ex::literal, cur());
                index->literal = value::integer_v(std::stoll(toks_[at_++].text));
                g->args.push_back(std::move(e));
                g->args.push_back(std::move(index));
            } else {
                g->name = name();
                g->args.push_back(std::move(e));
            }
            e = std::move(g);
        } else if (skip_op("[")) {
            e = subscript(std::move(e), t);
        } else if (is_op("(")) {
            e = call(std::move(e));
        } else {
            return e;
        }
    }
}

expr_ptr expression_parser::subscript(expr_ptr subject, const token& t) {
    expr_ptr parts[3];
    int colons = 0;
    while (!is_op("]")) {
        if (skip_op(":")) {
            if (++colons > 2) {
                error(t, "bad slice");
            }
            continue;
        }
        if (parts[colons]) {
            error(cur(), "expected ']'");
        }
        parts[colons] = expression(true);
    }
    ++at_;
    auto e = make_expr(colons ? ex::slice : ex::getitem, t);
    e->args.push_back(std::move(subject));
    if (!colons && !parts[0]) {
        error(t, "expected a subscript");
    }
    for (int n = 0; n <= (colons ? 2 : 0); ++n) {
        e->args.push_back(std::move(parts[n]));
    }
    return e;
}

// Arguments in parentheses into e (positional after e's existing args, then keywords).
void expression_parser::arguments(expr& e) {
    expect_op("(");
    bool first = true;
    while (!skip_op(")")) {
        if (!first) {
            expect_op(",");
            if (skip_op(")")) {
                break;
            }
        }
        first = false;
        if (cur().type == tok::name && toks_[at_ + 1].type == tok::op &&
            toks_[at_ + 1].text == "=") {
            std::string key = name();
            ++at_;
            e.kwargs.emplace_back(std::move(key), expression(true));
        } else {
            if (!e.kwargs.empty()) {
                error(cur(), "positional argument after a keyword argument");
            }
            e.args.push_back(expression(true));
        }
    }
}

expr_ptr expression_parser::call(expr_ptr callee) {
    auto e = make_expr(ex::call, cur());
    e->args.push_back(std::move(callee));
    arguments(*e);
    return e;
}

expr_ptr expression_parser::filter_chain(expr_ptr e) {
    while (true) {
        const token& t = cur();
        if (skip_op("|")) {
            auto f = make_expr(ex::filter, t);
            f->name = name();
            f->args.push_back(std::move(e));
            if (is_op("(")) {
                arguments(*f);
            }
            e = std::move(f);
        } else if (skip_name("is")) {
            auto f = make_expr(ex::test, t);
            f->negated = skip_name("not");
            f->name = name();
            f->args.push_back(std::move(e));
            if (is_op("(")) {
                arguments(*f);
            } else if (test_argument_follows()) {
                f->args.push_back(postfix(primary()));
            }
            e = std::move(f);
        } else if (is_op("(")) {
            e = call(std::move(e));
        } else {
            return e;
        }
    }
}

// `x is divisibleby 3`: a bare argument, unless what follows ends the test.
bool expression_parser::test_argument_follows() const {
    const token& t = cur();
    if (t.type == tok::name) {
        return t.text != "else" && t.text != "or" && t.text != "and";
    }
    return t.type == tok::string || t.type == tok::integer || t.type == tok::floating ||
           (t.type == tok::op && (t.text == "[" || t.text == "{"));
}

} // namespace lanes::common::jinja_detail

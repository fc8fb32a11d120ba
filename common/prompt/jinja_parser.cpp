// The Jinja parser: tokens into statements and expressions, with Jinja's precedence (lowest
// first): a if c else b, or, and, not, comparisons and in, + -, ~, * / // %, **, unary - +,
// then postfix . [] () and the | filter and is test chains.
#include "common/prompt/jinja_impl.hpp"

#include <initializer_list>

namespace lanes::common::jinja_detail {

namespace {

class parser {
public:
    explicit parser(std::vector<token> tokens)
        : toks_(std::move(tokens)) {}

    body_t body(std::initializer_list<std::string_view> ends) {
        body_t out;
        while (true) {
            const token& t = cur();
            if (t.type == tok::eof) {
                if (ends.size() != 0) {
                    error(t, "unexpected end of template, expected '" +
                                 std::string(*(ends.end() - 1)) + "'");
                }
                return out;
            }
            if (t.type == tok::text) {
                auto n = make(st::text, t);
                n->text = t.text;
                out.push_back(std::move(n));
                ++at_;
            } else if (t.type == tok::var_begin) {
                ++at_;
                auto n = make(st::output, t);
                n->exprs.push_back(tuple(true));
                expect(tok::var_end, "'}}'");
                out.push_back(std::move(n));
            } else if (t.type == tok::block_begin) {
                const token& keyword = toks_[at_ + 1];
                for (const auto e : ends) {
                    if (keyword.type == tok::name && keyword.text == e) {
                        ++at_;
                        return out;
                    }
                }
                ++at_;
                out.push_back(statement());
            } else {
                error(t, "unexpected token");
            }
        }
    }

    const token& cur() const { return toks_[at_]; }

private:
    static node_ptr make(st type, const token& t) {
        auto n = std::make_unique<node>();
        n->type = type;
        n->line = t.line;
        return n;
    }
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
    // The end of a block tag, then the body up to one of ends.
    body_t block_body(std::initializer_list<std::string_view> ends) {
        expect(tok::block_end, "'%}'");
        return body(ends);
    }
    void end_tag() { expect(tok::block_end, "'%}'"); }

    node_ptr statement() {
        depth_guard guard(*this);
        const token& t = cur();
        const std::string keyword = name();
        if (keyword == "if") {
            return if_statement(t);
        }
        if (keyword == "for") {
            return for_statement(t);
        }
        if (keyword == "set") {
            return set_statement(t);
        }
        if (keyword == "macro") {
            return macro_statement(t);
        }
        if (keyword == "filter") {
            auto n = make(st::filter_block, t);
            auto first = make_expr(ex::filter, cur());
            first->name = name();
            first->args.push_back(nullptr);
            if (is_op("(")) {
                arguments(*first);
            }
            n->filter = filter_chain(std::move(first));
            check_height(*n->filter, t, 1);
            n->bodies.push_back(block_body({"endfilter"}));
            ++at_;
            end_tag();
            return n;
        }
        if (keyword == "break" || keyword == "continue") {
            if (loop_depth_ == 0) {
                error(t, "'" + keyword + "' outside a loop");
            }
            end_tag();
            return make(keyword == "break" ? st::break_ : st::continue_, t);
        }
        error(t, "unknown tag '" + keyword + "'");
    }

    node_ptr if_statement(const token& t) {
        auto n = make(st::if_, t);
        n->exprs.push_back(tuple(false));
        while (true) {
            n->bodies.push_back(block_body({"elif", "else", "endif"}));
            const std::string next = name();
            if (next == "elif") {
                n->exprs.push_back(tuple(false));
                continue;
            }
            if (next == "else") {
                n->bodies.push_back(block_body({"endif"}));
                ++at_;
            }
            end_tag();
            return n;
        }
    }

    node_ptr for_statement(const token& t) {
        auto n = make(st::for_, t);
        const bool paren = skip_op("(");
        n->names.push_back(name());
        while (skip_op(",")) {
            n->names.push_back(name());
        }
        if (paren) {
            expect_op(")");
        }
        if (!skip_name("in")) {
            error(cur(), "expected 'in'");
        }
        n->exprs.push_back(tuple(false));
        n->exprs.push_back(skip_name("if") ? expression(true) : nullptr);
        if (is_name("recursive")) {
            error(cur(), "recursive loops are not supported");
        }
        ++loop_depth_;
        n->bodies.push_back(block_body({"else", "endfor"}));
        --loop_depth_;
        if (toks_[at_].text == "else") {
            ++at_;
            n->bodies.push_back(block_body({"endfor"}));
        } else {
            n->bodies.emplace_back();
        }
        ++at_;
        end_tag();
        return n;
    }

    node_ptr set_statement(const token& t) {
        auto n = make(st::set, t);
        n->names.push_back(name());
        if (skip_op(".")) {
            n->text = "attr";
            n->names.push_back(name());
        } else {
            while (skip_op(",")) {
                n->names.push_back(name());
            }
        }
        if (skip_op("=")) {
            n->exprs.push_back(tuple(true));
            end_tag();
            return n;
        }
        if (n->names.size() != 1) {
            error(cur(), "expected '='");
        }
        n->type = st::set_block;
        if (is_op("|")) {
            n->filter = filter_chain(nullptr);
            check_height(*n->filter, t, 1);
        }
        n->bodies.push_back(block_body({"endset"}));
        ++at_;
        end_tag();
        return n;
    }

    node_ptr macro_statement(const token& t) {
        auto n = make(st::macro, t);
        n->text = name();
        expect_op("(");
        while (!skip_op(")")) {
            if (!n->names.empty()) {
                expect_op(",");
            }
            n->names.push_back(name());
            n->exprs.push_back(skip_op("=") ? expression(true) : nullptr);
        }
        const int loops = loop_depth_;
        loop_depth_ = 0;
        n->bodies.push_back(block_body({"endmacro"}));
        loop_depth_ = loops;
        ++at_;
        end_tag();
        return n;
    }

    // Expressions separated by commas: one alone, else a tuple.
    expr_ptr tuple(bool with_condexpr) {
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

    struct depth_guard {
        explicit depth_guard(parser& p)
            : p_(p) {
            if (++p_.depth_ > max_parse_depth) {
                error(p_.cur(), "expression nested too deep");
            }
        }
        ~depth_guard() { --p_.depth_; }
        depth_guard(const depth_guard&) = delete;
        depth_guard& operator=(const depth_guard&) = delete;
        parser& p_;
    };

    expr_ptr expression(bool with_condexpr) {
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
    static void check_height(const expr& e, const token& t, int level) {
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

    expr_ptr binary(ex type, std::string op, expr_ptr l, expr_ptr r, const token& t) {
        auto e = make_expr(type, t);
        e->name = std::move(op);
        e->args.push_back(std::move(l));
        e->args.push_back(std::move(r));
        return e;
    }

    expr_ptr or_expr() {
        auto e = and_expr();
        while (is_name("or")) {
            const token& t = toks_[at_++];
            e = binary(ex::or_, "or", std::move(e), and_expr(), t);
        }
        return e;
    }
    expr_ptr and_expr() {
        auto e = not_expr();
        while (is_name("and")) {
            const token& t = toks_[at_++];
            e = binary(ex::and_, "and", std::move(e), not_expr(), t);
        }
        return e;
    }
    expr_ptr not_expr() {
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
    expr_ptr compare() {
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
    expr_ptr math1() {
        auto e = concat();
        while (is_op("+") || is_op("-")) {
            const token& t = toks_[at_++];
            e = binary(ex::binary, t.text, std::move(e), concat(), t);
        }
        return e;
    }
    expr_ptr concat() {
        auto e = math2();
        while (is_op("~")) {
            const token& t = toks_[at_++];
            e = binary(ex::binary, "~", std::move(e), math2(), t);
        }
        return e;
    }
    expr_ptr math2() {
        auto e = power();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            const token& t = toks_[at_++];
            e = binary(ex::binary, t.text, std::move(e), power(), t);
        }
        return e;
    }
    expr_ptr power() {
        auto e = unary(true);
        while (is_op("**")) {
            const token& t = toks_[at_++];
            e = binary(ex::binary, "**", std::move(e), unary(true), t);
        }
        return e;
    }
    expr_ptr unary(bool with_filter) {
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

    expr_ptr primary() {
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

    expr_ptr postfix(expr_ptr e) {
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

    expr_ptr subscript(expr_ptr subject, const token& t) {
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
    void arguments(expr& e) {
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

    expr_ptr call(expr_ptr callee) {
        auto e = make_expr(ex::call, cur());
        e->args.push_back(std::move(callee));
        arguments(*e);
        return e;
    }

    expr_ptr filter_chain(expr_ptr e) {
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
    bool test_argument_follows() const {
        const token& t = cur();
        if (t.type == tok::name) {
            return t.text != "else" && t.text != "or" && t.text != "and";
        }
        return t.type == tok::string || t.type == tok::integer || t.type == tok::floating ||
               (t.type == tok::op && (t.text == "[" || t.text == "{"));
    }

    std::vector<token> toks_;
    std::size_t at_ = 0;
    int depth_ = 0;
    int loop_depth_ = 0;
    int expressions_open_ = 0;
};

} // namespace

std::unique_ptr<program> parse_program(std::string_view source) {
    parser p(tokenize(source));
    auto prog = std::make_unique<program>();
    prog->body = p.body({});
    return prog;
}

} // namespace lanes::common::jinja_detail

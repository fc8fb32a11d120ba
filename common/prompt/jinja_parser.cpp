// The Jinja statement parser: text, {{ }} output and the {% %} tags chat templates use (if, for,
// set, macro, filter, break, continue), over the expression parser.
#include "common/prompt/jinja_expression.hpp"

#include <initializer_list>

namespace lanes::common::jinja_detail {

namespace {

class parser : public expression_parser {
public:
    using expression_parser::expression_parser;

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

private:
    static node_ptr make(st type, const token& t) {
        auto n = std::make_unique<node>();
        n->type = type;
        n->line = t.line;
        return n;
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
        if (keyword == "generation") {
            // transformers' AssistantTracker marks the assistant's text; rendering keeps it.
            auto n = make(st::if_, t);
            auto always = make_expr(ex::literal, t);
            always->literal = value::boolean_v(true);
            n->exprs.push_back(std::move(always));
            n->bodies.push_back(block_body({"endgeneration"}));
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

    int loop_depth_ = 0;
};

} // namespace

std::unique_ptr<program> parse_program(std::string_view source) {
    parser p(tokenize(source));
    auto prog = std::make_unique<program>();
    prog->body = p.body({});
    return prog;
}

} // namespace lanes::common::jinja_detail

// Rendering: statements write to one output string; expressions evaluate to values. Scopes as
// Jinja's: a for loop's body and a macro's body are scopes of their own (set inside them does not
// leak out, hence namespace()), if bodies are not.
#include "common/prompt/jinja_impl.hpp"

#include <algorithm>

namespace lanes::common::jinja_detail {

namespace {

enum class flow { normal, break_, continue_ };

bool holds_namespace(const value& v) {
    if (v.k == kind::ns) {
        return true;
    }
    if (v.k == kind::list) {
        return std::any_of(v.l->begin(), v.l->end(), holds_namespace);
    }
    if (v.k == kind::dict) {
        return std::any_of(v.d->items.begin(), v.d->items.end(),
                           [](const auto& item) { return holds_namespace(item.second); });
    }
    return false;
}

using scope = std::vector<std::pair<std::string, value>>;

class renderer {
public:
    explicit renderer(std::time_t now)
        : now_(now) {}

    std::string run(const program& p, value context) {
        scopes_.emplace_back();
        if (context.k == kind::dict) {
            scopes_[0] = context.d->items;
        }
        std::string out;
        exec(p.body, out);
        return out;
    }

private:
    const value* find(const std::string& name) const {
        for (std::size_t n = scopes_.size(); n-- > base_;) {
            for (const auto& [key, v] : scopes_[n]) {
                if (key == name) {
                    return &v;
                }
            }
        }
        for (const auto& [key, v] : scopes_[0]) {
            if (key == name) {
                return &v;
            }
        }
        return nullptr;
    }

    value lookup(const std::string& name) const {
        if (const value* v = find(name)) {
            return charged_copy(*v);
        }
        if (is_global(name)) {
            value f = value::with_kind(kind::function);
            f.fn = std::make_shared<callable>(callable{name, nullptr});
            return f;
        }
        return value::undefined_v(name);
    }

    void assign(const std::string& name, value v) {
        for (auto& [key, old] : scopes_.back()) {
            if (key == name) {
                old = std::move(v);
                return;
            }
        }
        scopes_.back().emplace_back(name, std::move(v));
    }

    flow exec(const body_t& body, std::string& out) {
        for (const auto& n : body) {
            if (const flow f = exec(*n, out); f != flow::normal) {
                return f;
            }
        }
        return flow::normal;
    }

    flow exec(const node& n, std::string& out) {
        switch (n.type) {
        case st::text:
            out += n.text;
            break;
        case st::output: {
            const value v = eval(*n.exprs[0]);
            out += v.k == kind::string ? v.s : to_str(v);
            break;
        }
        case st::if_:
            for (std::size_t c = 0; c < n.exprs.size(); ++c) {
                if (truthy(eval(*n.exprs[c]))) {
                    return exec(n.bodies[c], out);
                }
            }
            if (n.bodies.size() > n.exprs.size()) {
                return exec(n.bodies.back(), out);
            }
            break;
        case st::for_:
            for_loop(n, out);
            break;
        case st::set:
            set(n);
            break;
        case st::set_block: {
            std::string text;
            exec(n.bodies[0], text);
            value v = value::string_v(std::move(text));
            assign(n.names[0], n.filter ? filtered(*n.filter, v) : v);
            break;
        }
        case st::macro: {
            value f = value::with_kind(kind::function);
            f.fn = std::make_shared<callable>(callable{n.text, &n});
            assign(n.text, std::move(f));
            break;
        }
        case st::filter_block: {
            std::string text;
            exec(n.bodies[0], text);
            out += to_str(filtered(*n.filter, value::string_v(std::move(text))));
            break;
        }
        case st::break_:
            return flow::break_;
        case st::continue_:
            return flow::continue_;
        }
        check_size(out.size());
        return flow::normal;
    }

    void bind(const std::vector<std::string>& names, const value& item) {
        if (names.size() == 1) {
            assign(names[0], item);
            return;
        }
        if (item.k != kind::list || item.l->size() != names.size()) {
            fail("cannot unpack " + to_repr(item) + " into " + std::to_string(names.size()) +
                 " names");
        }
        for (std::size_t n = 0; n < names.size(); ++n) {
            assign(names[n], (*item.l)[n]);
        }
    }

    void for_loop(const node& n, std::string& out) {
        const value seq = eval(*n.exprs[0]);
        if (seq.k != kind::list && seq.k != kind::dict && seq.k != kind::string && seq.defined()) {
            fail(std::string("'") + type_name(seq) + "' object is not iterable");
        }
        list_t items = iterate(seq);
        scopes_.emplace_back();
        if (n.exprs[1]) {
            list_t kept;
            for (auto& item : items) {
                count_iteration(iterations_);
                bind(n.names, item);
                if (truthy(eval(*n.exprs[1]))) {
                    kept.push_back(std::move(item));
                }
            }
            items = std::move(kept);
        }
        const auto length = static_cast<std::int64_t>(items.size());
        for (std::int64_t x = 0; x < length; ++x) {
            count_iteration(iterations_);
            scopes_.back().clear();
            bind(n.names, items[static_cast<std::size_t>(x)]);
            dict_t loop;
            loop.items = {
                {"index", value::integer_v(x + 1)},
                {"index0", value::integer_v(x)},
                {"revindex", value::integer_v(length - x)},
                {"revindex0", value::integer_v(length - x - 1)},
                {"first", value::boolean_v(x == 0)},
                {"last", value::boolean_v(x == length - 1)},
                {"length", value::integer_v(length)},
                {"depth", value::integer_v(1)},
                {"depth0", value::integer_v(0)},
            };
            if (x > 0) {
                loop.items.emplace_back("previtem", items[static_cast<std::size_t>(x - 1)]);
            }
            if (x + 1 < length) {
                loop.items.emplace_back("nextitem", items[static_cast<std::size_t>(x + 1)]);
            }
            assign("loop", value::dict_v(std::move(loop)));
            if (exec(n.bodies[0], out) == flow::break_) {
                break;
            }
        }
        scopes_.pop_back();
        if (length == 0) {
            exec(n.bodies[1], out);
        }
    }

    void set(const node& n) {
        value v = eval(*n.exprs[0]);
        if (n.text == "attr") {
            const value* target = find(n.names[0]);
            if (!target || target->k != kind::ns) {
                fail("cannot assign attribute on non-namespace object '" + n.names[0] + "'");
            }
            // A namespace never holds a namespace: no cycles, and its depth stays bounded.
            if (holds_namespace(v)) {
                fail("a namespace attribute cannot hold a namespace");
            }
            target->d->set(n.names[1], std::move(v));
            return;
        }
        bind(n.names, v);
    }

    // A filter chain whose innermost subject is the given value (set and filter blocks).
    value filtered(const expr& e, const value& subject) {
        const value inner = e.args[0] ? filtered(*e.args[0], subject) : subject;
        auto [args, kwargs] = arguments(e, 1);
        return apply_filter(e.name, inner, args, kwargs);
    }

    std::pair<std::vector<value>, kwargs_t> arguments(const expr& e, std::size_t from) {
        std::vector<value> args;
        for (std::size_t n = from; n < e.args.size(); ++n) {
            args.push_back(eval(*e.args[n]));
        }
        kwargs_t kwargs;
        for (const auto& [key, x] : e.kwargs) {
            kwargs.emplace_back(key, eval(*x));
        }
        return {std::move(args), std::move(kwargs)};
    }

    value eval(const expr& e) {
        switch (e.type) {
        case ex::literal:
            return charged_copy(e.literal);
        case ex::name:
            return lookup(e.name);
        case ex::getattr:
            return get_attr(eval(*e.args[0]), e.name);
        case ex::getitem:
            return get_item(eval(*e.args[0]), eval(*e.args[1]));
        case ex::slice: {
            const value none;
            return slice(eval(*e.args[0]), e.args[1] ? eval(*e.args[1]) : none,
                         e.args[2] ? eval(*e.args[2]) : none, e.args[3] ? eval(*e.args[3]) : none);
        }
        case ex::call:
            return call(e);
        case ex::filter: {
            const value subject = eval(*e.args[0]);
            auto [args, kwargs] = arguments(e, 1);
            return apply_filter(e.name, subject, args, kwargs);
        }
        case ex::test: {
            const value subject = eval(*e.args[0]);
            auto [args, kwargs] = arguments(e, 1);
            return value::boolean_v(apply_test(e.name, subject, args) != e.negated);
        }
        case ex::neg:
        case ex::pos: {
            const value v = eval(*e.args[0]);
            if (!v.is_number()) {
                fail(std::string("bad operand type for unary ") + (e.type == ex::neg ? "-" : "+") +
                     ": '" + type_name(v) + "'");
            }
            if (e.type == ex::pos) {
                return v;
            }
            return v.k == kind::floating ? value::floating_v(-v.f)
                                         : binary_op("-", value::integer_v(0), v);
        }
        case ex::not_:
            return value::boolean_v(!truthy(eval(*e.args[0])));
        case ex::and_: {
            value l = eval(*e.args[0]);
            return truthy(l) ? eval(*e.args[1]) : l;
        }
        case ex::or_: {
            value l = eval(*e.args[0]);
            return truthy(l) ? l : eval(*e.args[1]);
        }
        case ex::binary: {
            const value l = eval(*e.args[0]);
            const value r = eval(*e.args[1]);
            if (e.negated && l.is_number() && as_double(l) < 0) {
                // a folded negative constant before ** (see power() in jinja_expression.cpp)
                const value zero = value::integer_v(0);
                return binary_op("-", zero, binary_op("**", binary_op("-", zero, l), r));
            }
            return binary_op(e.name, l, r);
        }
        case ex::compare: {
            value left = eval(*e.args[0]);
            for (const auto& [op, operand] : e.kwargs) {
                value right = eval(*operand);
                if (!truthy(binary_op(op, left, right))) {
                    return value::boolean_v(false);
                }
                left = std::move(right);
            }
            return value::boolean_v(true);
        }
        case ex::cond:
            if (truthy(eval(*e.args[0]))) {
                return eval(*e.args[1]);
            }
            return e.args[2] ? eval(*e.args[2]) : value::undefined_v("conditional");
        case ex::list:
        case ex::tuple: {
            list_t items;
            for (const auto& x : e.args) {
                items.push_back(eval(*x));
            }
            value v = value::list_v(std::move(items));
            v.tuple = e.type == ex::tuple;
            return v;
        }
        case ex::dict: {
            dict_t d;
            for (std::size_t n = 0; n + 1 < e.args.size(); n += 2) {
                const value key = eval(*e.args[n]);
                if (key.k != kind::string) {
                    fail("dict keys must be strings");
                }
                d.set(key.s, eval(*e.args[n + 1]));
            }
            return value::dict_v(std::move(d));
        }
        }
        return {};
    }

    value call(const expr& e) {
        auto [args, kwargs] = arguments(e, 1);
        const expr& callee = *e.args[0];
        if (callee.type == ex::getattr) {
            const value obj = eval(*callee.args[0]);
            value result;
            if (call_method(obj, callee.name, args, result)) {
                return result;
            }
            return call_value(get_attr(obj, callee.name), args, kwargs);
        }
        return call_value(eval(callee), args, kwargs);
    }

    value call_value(const value& f, const std::vector<value>& args, const kwargs_t& kwargs) {
        if (f.k != kind::function) {
            if (!f.defined()) {
                fail("'" + f.s + "' is undefined (calling it)");
            }
            fail(std::string("'") + type_name(f) + "' object is not callable");
        }
        if (f.fn->macro) {
            return call_macro(*f.fn->macro, args, kwargs);
        }
        if (f.fn->name.starts_with("method ")) {
            fail(f.fn->name + " is not supported here");
        }
        return call_global(f.fn->name, args, kwargs, now_, iterations_);
    }

    value call_macro(const node& m, const std::vector<value>& args, const kwargs_t& kwargs) {
        if (args.size() > m.names.size()) {
            fail("macro '" + m.text + "' takes " + std::to_string(m.names.size()) + " arguments");
        }
        if (++call_depth_ > max_call_depth) {
            fail("macro calls nested over " + std::to_string(max_call_depth) + " deep");
        }
        const std::size_t saved_base = base_;
        scopes_.emplace_back();
        base_ = scopes_.size() - 1;
        for (std::size_t n = 0; n < m.names.size(); ++n) {
            const value* given = n < args.size() ? &args[n] : nullptr;
            for (const auto& [key, v] : kwargs) {
                given = key == m.names[n] ? &v : given;
            }
            assign(m.names[n], given        ? *given
                               : m.exprs[n] ? eval(*m.exprs[n])
                                            : value::undefined_v(m.names[n]));
        }
        std::string out;
        exec(m.bodies[0], out);
        scopes_.pop_back();
        base_ = saved_base;
        --call_depth_;
        return value::string_v(std::move(out));
    }

    std::time_t now_;
    std::vector<scope> scopes_;
    std::size_t base_ = 0;
    std::size_t iterations_ = 0;
    int call_depth_ = 0;
};

} // namespace

std::string render_program(const program& p, value context, std::time_t now) {
    return renderer(now).run(p, std::move(context));
}

} // namespace lanes::common::jinja_detail

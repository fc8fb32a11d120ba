#include "bench/sim/peers/char_radix_tree.hpp"

#include <algorithm>
#include <queue>

namespace lanes::bench::sim {

char_radix_tree::node* char_radix_tree::split(node* n, std::size_t at) {
    // n's edge becomes [0, at); a new child takes [at, end) with n's children and tenants.
    auto tail = std::make_unique<node>();
    tail->edge = n->edge.substr(at);
    tail->parent = n;
    tail->children = std::move(n->children);
    for (auto& [c, child] : tail->children)
        child->parent = tail.get();
    tail->tenants = n->tenants;
    n->children.clear();
    n->edge.resize(at);
    const auto key = static_cast<unsigned char>(tail->edge[0]);
    n->children.emplace(key, std::move(tail));
    ++nodes_;
    return n;
}

void char_radix_tree::touch(node* n, int tenant, double now) {
    const auto [it, fresh] = n->tenants.try_emplace(tenant, now);
    if (fresh)
        sizes_[tenant] += n->edge.size();
    else
        it->second = now;
}

void char_radix_tree::insert(std::string_view text, int tenant, double now) {
    node* n = &root_;
    touch(n, tenant, now);
    std::size_t pos = 0;
    while (pos < text.size()) {
        const auto key = static_cast<unsigned char>(text[pos]);
        const auto it = n->children.find(key);
        if (it == n->children.end()) {
            auto leaf = std::make_unique<node>();
            leaf->edge = std::string(text.substr(pos));
            leaf->parent = n;
            node* raw = leaf.get();
            n->children.emplace(key, std::move(leaf));
            ++nodes_;
            touch(raw, tenant, now);
            return;
        }
        node* child = it->second.get();
        const std::string_view rest = text.substr(pos);
        const auto mismatch =
            std::mismatch(child->edge.begin(), child->edge.end(), rest.begin(), rest.end());
        const auto common = static_cast<std::size_t>(mismatch.first - child->edge.begin());
        if (common < child->edge.size())
            split(child, common);
        touch(child, tenant, now);
        pos += common;
        n = child;
    }
}

char_radix_tree::match char_radix_tree::longest(std::string_view text,
                                                const std::vector<char>* allowed) const {
    const auto ok = [allowed](int t) {
        return !allowed || (t >= 0 && static_cast<std::size_t>(t) < allowed->size() &&
                            (*allowed)[static_cast<std::size_t>(t)]);
    };
    const auto best_tenant = [&](const node& n) {
        int best = -1;
        double when = -1;
        for (const auto& [t, at] : n.tenants)
            if (ok(t) && (at > when || (at == when && t < best))) {
                best = t;
                when = at;
            }
        return best;
    };
    match out;
    const node* n = &root_;
    std::size_t pos = 0;
    while (pos < text.size()) {
        const auto it = n->children.find(static_cast<unsigned char>(text[pos]));
        if (it == n->children.end())
            break;
        const node* child = it->second.get();
        const std::string_view rest = text.substr(pos);
        const auto mismatch =
            std::mismatch(child->edge.begin(), child->edge.end(), rest.begin(), rest.end());
        const auto common = static_cast<std::size_t>(mismatch.first - child->edge.begin());
        const int t = best_tenant(*child);
        if (t < 0)
            break; // no allowed tenant holds this edge
        out = {pos + common, t};
        if (common < child->edge.size())
            break;
        pos += common;
        n = child;
    }
    return out;
}

std::size_t char_radix_tree::size_of(int tenant) const {
    const auto it = sizes_.find(tenant);
    return it == sizes_.end() ? 0 : it->second;
}

void char_radix_tree::evict(int tenant, std::size_t max_chars) {
    auto& size = sizes_[tenant];
    if (size <= max_chars)
        return;
    // The tenant's leaves (no child of theirs is held by it), oldest first.
    using item = std::pair<double, node*>;
    std::priority_queue<item, std::vector<item>, std::greater<>> leaves;
    const auto holds_child = [tenant](const node& n) {
        return std::any_of(n.children.begin(), n.children.end(),
                           [tenant](const auto& c) { return c.second->tenants.contains(tenant); });
    };
    std::vector<node*> stack{&root_};
    while (!stack.empty()) {
        node* n = stack.back();
        stack.pop_back();
        for (auto& [c, child] : n->children)
            if (child->tenants.contains(tenant))
                stack.push_back(child.get());
        if (n != &root_ && n->tenants.contains(tenant) && !holds_child(*n))
            leaves.emplace(n->tenants.at(tenant), n);
    }
    while (size > max_chars && !leaves.empty()) {
        node* n = leaves.top().second;
        leaves.pop();
        n->tenants.erase(tenant);
        size -= std::min(size, n->edge.size());
        node* parent = n->parent;
        if (n->tenants.empty() && n->children.empty()) {
            parent->children.erase(static_cast<unsigned char>(n->edge[0]));
            --nodes_;
        }
        if (parent != &root_ && parent->tenants.contains(tenant) && !holds_child(*parent))
            leaves.emplace(parent->tenants.at(tenant), parent);
    }
}

} // namespace lanes::bench::sim

// A multi-tenant radix tree of characters, the structure SGLang's cache_aware policy keeps per
// model (sgl-model-gateway/src/policies/tree.rs; paraphrased from its description, no code
// taken): every request's text is inserted under the worker it went to; a lookup returns the
// longest prefix of a text that some worker's inserted texts share, and that worker; each worker
// is charged the characters of the edges it holds, and eviction drops a worker's least recently
// used leaves until it is within a size.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace lanes::bench::sim {

class char_radix_tree {
public:
    struct match {
        std::size_t chars = 0; // matched prefix length
        int tenant = -1;       // the most recently used tenant holding that prefix; -1: none
    };

    // Inserts `text` under `tenant` at time `now` (the path's nodes become its most recent).
    void insert(std::string_view text, int tenant, double now);
    // The longest prefix of `text` in the tree and a tenant holding all of it; among the tenants
    // for which `allowed(tenant)` is true when given.
    match longest(std::string_view text, const std::vector<char>* allowed = nullptr) const;
    // Characters held by `tenant`.
    std::size_t size_of(int tenant) const;
    // Drops `tenant`'s least recently used leaves until it holds at most `max_chars`.
    void evict(int tenant, std::size_t max_chars);
    std::size_t node_count() const { return nodes_; }

private:
    struct node {
        std::string edge; // label from the parent
        node* parent = nullptr;
        std::unordered_map<unsigned char, std::unique_ptr<node>> children;
        std::unordered_map<int, double> tenants; // tenant -> last access
    };
    node* split(node* n, std::size_t at);
    void touch(node* n, int tenant, double now);

    node root_;
    std::unordered_map<int, std::size_t> sizes_;
    std::size_t nodes_ = 1;
};

} // namespace lanes::bench::sim

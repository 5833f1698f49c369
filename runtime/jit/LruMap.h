//===- LruMap.h - A bounded map that forgets the least recently used -*- C++
//-*-===//
//
// The Jit's in-memory caches (kernels by spec text, CPU engines, loaded
// CUDA modules, GPU cache keys) are bounded by JitOptions::memoryCapacity.
// Not thread-safe: the Jit holds a mutex around each map.
//
//===----------------------------------------------------------------------===//

#ifndef LOWBIT_RUNTIME_JIT_LRUMAP_H
#define LOWBIT_RUNTIME_JIT_LRUMAP_H

#include <cstddef>
#include <list>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace lowbit::jit {

template <typename Key, typename Value, typename Hash = std::hash<Key>>
class LruMap {
public:
  /// capacity 0: unbounded.
  explicit LruMap(size_t capacity) : capacity(capacity) {}

  /// The value of `key`, made the most recently used; nullptr if absent.
  Value *find(const Key &key) {
    auto found = index.find(key);
    if (found == index.end())
      return nullptr;
    order.splice(order.begin(), order, found->second);
    return &found->second->second;
  }

  /// Inserts or replaces `key` as the most recently used, and returns the
  /// entries pushed out by the bound (oldest first), for the caller to
  /// release outside its lock.
  std::vector<std::pair<Key, Value>> insert(const Key &key, Value value) {
    if (Value *existing = find(key)) {
      *existing = std::move(value);
      return {};
    }
    order.emplace_front(key, std::move(value));
    index.emplace(key, order.begin());
    std::vector<std::pair<Key, Value>> evicted;
    while (capacity && order.size() > capacity) {
      index.erase(order.back().first);
      evicted.push_back(std::move(order.back()));
      order.pop_back();
    }
    return evicted;
  }

  void erase(const Key &key) {
    auto found = index.find(key);
    if (found == index.end())
      return;
    order.erase(found->second);
    index.erase(found);
  }

  size_t size() const { return order.size(); }
  void clear() {
    index.clear();
    order.clear();
  }

private:
  size_t capacity;
  std::list<std::pair<Key, Value>> order;
  std::unordered_map<Key, typename std::list<std::pair<Key, Value>>::iterator,
                     Hash>
      index;
};

} // namespace lowbit::jit

#endif // LOWBIT_RUNTIME_JIT_LRUMAP_H

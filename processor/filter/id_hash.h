// IdHash: the 64-bit hash of an idempotency id, computed once per event.
//
// Every dedup filter works on IdHash values only. Each constituent filter derives
// its own bit positions from the IdHash and its own seed (SeededMix), so that the
// false positives of two filters are independent even when both hold the same ids.
//
// Thread-safety: pure functions; callable from any thread.
#pragma once

#include <cstdint>
#include <string_view>

namespace oncecount::filter {

struct IdHash {
  uint64_t value = 0;
  friend bool operator==(IdHash, IdHash) = default;
};

// The secret a shard hashes its ids with. Without it a producer that knows the
// configuration could search offline for ids that fall in a few buckets or blocks
// (failed kicks, slower lookups) or that aim false positives at a victim's ids.
// A shard draws its key at random when it is first claimed and keeps it in its
// state and claims, so that every owner, replica and restore of the shard hashes an
// id alike (shard_state.h). Key 0 is plain XXH3, the hash of shards created before
// keys existed: their filters hold unkeyed hashes, so they keep it.
struct IdHashKey {
  uint64_t value = 0;
  friend bool operator==(IdHashKey, IdHashKey) = default;
};
inline constexpr IdHashKey kUnkeyed{0};

// XXH3-64 of the id's bytes under `key` (XXH3's seed; seed 0 is XXH3-64 itself).
IdHash HashIdempotencyId(std::string_view id, IdHashKey key);

// A strong 64-bit mix of (hash, seed): the murmur3 finalizer applied to the sum.
// Used to give every constituent filter an independent view of the same IdHash.
inline uint64_t SeededMix(IdHash hash, uint64_t seed) {
  uint64_t x = hash.value + seed * 0x9E3779B97F4A7C15ULL;
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDULL;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ULL;
  x ^= x >> 33;
  return x;
}

// The per-filter view of an IdHash on the hot path: one multiply and one
// xor-shift. The IdHash is already a strong hash (XXH3), so xoring in a random
// 64-bit seed and multiplying by an odd constant gives each filter its own
// block (from the high half) and bit positions (from the low half, which the
// xor-shift also feeds from the high half). bits_per_id measures that filters
// seeded this way show the false-positive rate of independent ones.
inline uint64_t FilterMix(IdHash hash, uint64_t seed) {
  const uint64_t x = (hash.value ^ seed) * 0x9E3779B97F4A7C15ULL;
  return x ^ (x >> 32);
}

// Asks the core to bring the line holding `p` into L1. GCC treats
// __builtin_prefetch as free of side effects, so a helper whose only work is a
// prefetch gets classified "const" and its calls deleted (measured: no prefetch
// instruction left in the FBF's batch path). A volatile asm statement cannot be
// deleted.
inline void PrefetchLine(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 0, 3);
#endif
}

}  // namespace oncecount::filter

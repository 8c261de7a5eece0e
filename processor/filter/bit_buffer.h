// BitBuffer: zero-initialised, 128-byte-aligned memory for filter bits.
//
// Large buffers are mapped with mmap and advised to use transparent huge pages, so
// that random probes into hundreds of megabytes do not pay a TLB miss each.
//
// Thread-safety: owned by one filter; no internal synchronisation.
#pragma once

#include <cstddef>
#include <cstdint>

namespace oncecount::filter {

class BitBuffer {
 public:
  BitBuffer() = default;
  // Throws std::bad_alloc when the memory cannot be had, like any allocation.
  explicit BitBuffer(size_t words);
  ~BitBuffer();
  BitBuffer(BitBuffer&& other) noexcept;
  BitBuffer& operator=(BitBuffer&& other) noexcept;
  BitBuffer(const BitBuffer&) = delete;
  BitBuffer& operator=(const BitBuffer&) = delete;

  uint64_t* data() { return words_; }
  const uint64_t* data() const { return words_; }
  size_t size() const { return size_; }
  void Zero();
  // Keeps the first min(size(), words) words and zeroes the rest. A mapped buffer that
  // stays mapped is remapped (mremap: its pages move, they are not copied), so growing
  // or shrinking a large plane never holds two copies of it; a small one is copied.
  // Throws std::bad_alloc, and then the buffer is unchanged.
  void Resize(size_t words);

 private:
  void Release();

  uint64_t* words_ = nullptr;
  size_t size_ = 0;
  size_t mapped_bytes_ = 0;  // non-zero when the buffer came from mmap
};

}  // namespace oncecount::filter

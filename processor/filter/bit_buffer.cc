#include "processor/filter/bit_buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace oncecount::filter {
namespace {

// Below this size a plain aligned allocation is cheaper than a mapping.
constexpr size_t kMapThresholdBytes = size_t{4} << 20;
constexpr size_t kHugePageBytes = size_t{2} << 20;

}  // namespace

BitBuffer::BitBuffer(size_t words) : size_(words) {
  if (words == 0) return;
  const size_t bytes = words * sizeof(uint64_t);
  if (bytes >= kMapThresholdBytes) {
    const size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    void* p = mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    madvise(p, rounded, MADV_HUGEPAGE);  // advisory: ignored where THP is off
    words_ = static_cast<uint64_t*>(p);
    mapped_bytes_ = rounded;
    return;
  }
  // 128-byte alignment: a 1024-bit block is a pair of lines the adjacent-line
  // prefetcher fetches together.
  const size_t rounded = (bytes + 127) / 128 * 128;
  void* p = std::aligned_alloc(128, rounded);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  words_ = static_cast<uint64_t*>(p);
}

BitBuffer::~BitBuffer() {
  Release();
}

BitBuffer::BitBuffer(BitBuffer&& other) noexcept
    : words_(std::exchange(other.words_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_bytes_(std::exchange(other.mapped_bytes_, 0)) {}

BitBuffer& BitBuffer::operator=(BitBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    words_ = std::exchange(other.words_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_bytes_ = std::exchange(other.mapped_bytes_, 0);
  }
  return *this;
}

void BitBuffer::Resize(size_t words) {
  if (words == size_) return;
  const size_t bytes = words * sizeof(uint64_t);
  if (mapped_bytes_ != 0 && bytes >= kMapThresholdBytes) {
    const size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    if (rounded != mapped_bytes_) {
      void* p = mremap(words_, mapped_bytes_, rounded, MREMAP_MAYMOVE);
      if (p == MAP_FAILED) throw std::bad_alloc();
      madvise(p, rounded, MADV_HUGEPAGE);
      words_ = static_cast<uint64_t*>(p);
      mapped_bytes_ = rounded;
    }
    // Words past the old size may hold what a shrink left in the same mapping.
    if (words > size_) std::memset(words_ + size_, 0, (words - size_) * sizeof(uint64_t));
    size_ = words;
    return;
  }
  BitBuffer resized(words);
  if (size_ != 0 && words != 0) {
    std::memcpy(resized.words_, words_, std::min(size_, words) * sizeof(uint64_t));
  }
  *this = std::move(resized);
}

void BitBuffer::Zero() {
  if (words_ != nullptr) std::memset(words_, 0, size_ * sizeof(uint64_t));
}

void BitBuffer::Release() {
  if (words_ == nullptr) return;
  if (mapped_bytes_ != 0) {
    munmap(words_, mapped_bytes_);
  } else {
    std::free(words_);
  }
  words_ = nullptr;
  size_ = 0;
  mapped_bytes_ = 0;
}

}  // namespace oncecount::filter

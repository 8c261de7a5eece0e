#include "processor/filter/dedup_filter.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>

namespace oncecount::filter {

void DedupFilter::TestAndInsertBatch(std::span<const IdHash> hashes, std::span<Verdict> verdicts) {
  const size_t count = std::min(hashes.size(), verdicts.size());
  for (size_t i = 0; i < count; ++i) verdicts[i] = TestAndInsert(hashes[i]);
}

std::string DedupFilter::Digest() const {
  std::string bytes;
  Serialize(bytes);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(XXH3_64bits(bytes.data(), bytes.size())));
  return hex;
}

}  // namespace oncecount::filter

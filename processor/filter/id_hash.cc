#include "processor/filter/id_hash.h"

#include <xxhash.h>

namespace oncecount::filter {

IdHash HashIdempotencyId(std::string_view id, IdHashKey key) {
  return IdHash{XXH3_64bits_withSeed(id.data(), id.size(), key.value)};
}

}  // namespace oncecount::filter

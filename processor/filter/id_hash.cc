#include "processor/filter/id_hash.h"

#include <xxhash.h>

namespace oncecount::filter {

IdHash HashIdempotencyId(std::string_view id) {
  return IdHash{XXH3_64bits(id.data(), id.size())};
}

}  // namespace oncecount::filter

// WriteFileAtomically: write a whole file so that readers see either the old file
// or the new one, never a part (a temporary file, then rename). Used for the
// bootstrap and truth files that tests and scripts poll for.
//
// Thread-safety: pure function over the file system.
#pragma once

#include <string>

#include "processor/base/result.h"

namespace oncecount::cmd {

// `text` plus a newline; an Errc::kIo error naming the file when it cannot be written.
base::Status WriteFileAtomically(const std::string& path, const std::string& text);

}  // namespace oncecount::cmd
